"""Debian package descriptions: Translation-en joined with Translation-de on
Description-md5 (the MD5 of the English text the German one translates, so a
match cannot pair a translation with a newer English text).

Short descriptions always pair. Long descriptions pair paragraph by paragraph
when both sides have as many paragraphs, and within a paragraph list item by
list item when both have as many items (otherwise the paragraph as a whole).
The split unit is the source package, so that sibling binaries (foo, foo-data,
foo-doc) with near-identical descriptions cannot straddle train and test.
"""

import re
from typing import Iterable, Iterator

from . import Pair

SOURCE = "descriptions"

# A description line that starts a list item: "* foo", "- foo", "+ foo", "o foo".
_BULLET_RE = re.compile(r"^\s*(?:[*+\-o]|\d+[.)])\s+")


def parse_translation(text: str, lang: str) -> dict[str, tuple[str, str]]:
    """Description-md5 -> (package, description) of a Translation-LANG file."""
    out: dict[str, tuple[str, str]] = {}
    field = f"Description-{lang}"
    for block in text.split("\n\n"):
        pkg = md5 = None
        desc_lines: list[str] = []
        in_desc = False
        for line in block.splitlines():
            if line.startswith((" ", "\t")):
                if in_desc:
                    desc_lines.append(line)
                continue
            in_desc = False
            key, _, value = line.partition(":")
            if key == "Package":
                pkg = value.strip()
            elif key == "Description-md5":
                md5 = value.strip()
            elif key == field:
                desc_lines = [value.strip()]
                in_desc = True
        if pkg and md5 and desc_lines:
            out.setdefault(md5, (pkg, "\n".join(desc_lines)))
    return out


def split_description(desc: str) -> tuple[str, list[list[str]]]:
    """(short description, paragraphs as lists of units).

    A unit is a list item (with its wrapped continuation lines), a verbatim
    (indented) line, or a run of ordinary text lines; units are what pair
    across languages.
    """
    lines = desc.split("\n")
    short = lines[0].strip()
    paragraphs: list[list[str]] = []
    units: list[str] = []
    kinds: list[str] = []          # "text", "item" or "verbatim" per unit
    for line in lines[1:]:
        body = line[1:] if line.startswith(" ") else line
        if body.strip() == ".":
            if units:
                paragraphs.append(units)
            units, kinds = [], []
        elif _BULLET_RE.match(body):
            units.append(_BULLET_RE.sub("", body).strip())
            kinds.append("item")
        elif body.startswith((" ", "\t")):
            if kinds and kinds[-1] == "item":   # wrapped list item
                units[-1] += " " + body.strip()
            else:
                units.append(body.strip())
                kinds.append("verbatim")
        elif kinds and kinds[-1] == "text":
            units[-1] += " " + body.strip()
        else:
            units.append(body.strip())
            kinds.append("text")
    if units:
        paragraphs.append(units)
    return short, paragraphs


def pair_descriptions(en: str, de: str) -> list[tuple[str, str]]:
    en_short, en_paras = split_description(en)
    de_short, de_paras = split_description(de)
    pairs = [(en_short, de_short)]
    if len(en_paras) != len(de_paras):
        return pairs
    for ep, dp in zip(en_paras, de_paras):
        if len(ep) == len(dp):
            pairs.extend(zip(ep, dp))
        else:
            pairs.append((" ".join(ep), " ".join(dp)))
    return pairs


def source_packages(packages_text: str) -> dict[str, str]:
    """Binary -> source package name, from the text of a Packages index."""
    mapping: dict[str, str] = {}
    pkg = None
    for line in packages_text.splitlines():
        if line.startswith("Package: "):
            pkg = line[9:].strip()
            mapping.setdefault(pkg, pkg)
        elif line.startswith("Source: ") and pkg:
            mapping[pkg] = line[8:].split()[0]
    return mapping


def extract_from_texts(en_texts: Iterable[str], de_texts: Iterable[str],
                       source_of: dict[str, str]) -> Iterator[Pair]:
    """Pairs from the text of Translation-en and Translation-de files.
    `source_of` maps binary to source package names (unknown names map to
    themselves)."""
    english: dict[str, tuple[str, str]] = {}
    for text in en_texts:
        for md5, value in parse_translation(text, "en").items():
            english.setdefault(md5, value)
    german: dict[str, tuple[str, str]] = {}
    for text in de_texts:
        for md5, value in parse_translation(text, "de").items():
            german.setdefault(md5, value)
    for md5 in sorted(german):
        if md5 not in english:
            continue   # translation of a description no longer in the archive
        pkg, en_desc = english[md5]
        doc = source_of.get(pkg, pkg)
        for en, de in pair_descriptions(en_desc, german[md5][1]):
            yield Pair(SOURCE, doc, en, de)
