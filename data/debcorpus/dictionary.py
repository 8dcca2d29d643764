"""Example sentences of the trans-de-en (Ding) dictionary.

A line is 'German :: English'; ' | ' separates sub-entries that correspond
one to one, '; ' separates alternative translations within a sub-entry. The
headwords are single words or phrases; the sub-entries that are whole
sentences (capital start, end with . ! or ?) are the usage examples we keep,
first alternative against first alternative. Grammar and usage labels ({vt},
[Br.], [ugs.]) are removed; sub-entries that offer in-line variants ('a / b', 'have/share', '~')
cannot be written as one sentence and are dropped.
"""

import re
from pathlib import Path
from typing import Iterator

from . import Pair

SOURCE = "dictionary"
PACKAGES = ["trans-de-en"]
DICT_PATH = "usr/share/trans/de-en"

_LABEL_RE = re.compile(r"\s*(?:\{[^{}]*\}|\[[^\[\]]*\])")
# In-line variants: "Das ist mir schnurzegal / piepegal", "We have/share", "~".
_VARIANT_RE = re.compile(r" / |[^\W\d_]/[^\W\d_]|~")
_SENTENCE_END = (".", "!", "?", "…", ".«", "!«", "?«", '."', '!"', '?"')
MIN_EXAMPLE_WORDS = 3


def _is_sentence(text: str) -> bool:
    return (len(text.split()) >= MIN_EXAMPLE_WORDS and text[:1].isupper()
            and text.endswith(_SENTENCE_END))


def _first_alternative(sub: str) -> str:
    return _LABEL_RE.sub("", sub.split("; ")[0]).strip()


def parse_line(line: str) -> list[tuple[str, str]]:
    """(en, de) example sentences of one dictionary line."""
    line = line.rstrip("\n")
    if line.startswith("#") or " :: " not in line:
        return []
    de_side, en_side = line.split(" :: ", 1)
    de_subs, en_subs = de_side.split(" | "), en_side.split(" | ")
    if len(de_subs) != len(en_subs):
        return []
    out = []
    for de_sub, en_sub in zip(de_subs, en_subs):
        de, en = _first_alternative(de_sub), _first_alternative(en_sub)
        if _VARIANT_RE.search(de) or _VARIANT_RE.search(en):
            continue
        if _is_sentence(en) and _is_sentence(de):
            out.append((en, de))
    return out


def headword(line: str) -> str:
    """The entry's first German headword: the split unit of this source."""
    return _first_alternative(line.split(" :: ", 1)[0].split(" | ")[0])


def extract(roots: dict[str, Path]) -> Iterator[Pair]:
    path = roots["trans-de-en"] / DICT_PATH
    if not path.is_file():
        raise FileNotFoundError(f"dictionary file missing: {path}")
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            for en, de in parse_line(line):
                yield Pair(SOURCE, headword(line), en, de)
