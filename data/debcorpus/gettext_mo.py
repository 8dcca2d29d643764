"""gettext catalogues: the German .mo files of a list of packages, read with
struct (the .mo layout is fixed by GNU gettext; no msgunfmt needed).

msgid is the English source text and msgstr its German translation. Entries
are user-interface strings, so most need work before they are prose:
  * format placeholders (%s, %1, {name}, $VAR, gcc's %qD ...) cannot be
    rendered as text: such entries are dropped, not guessed at;
  * keyboard accelerators (_File, &File, ~File) are removed; an _ or & is
    kept where the same token appears on both sides (an identifier such as
    file_name, or R&D);
  * markup is removed by clean.strip_markup;
  * an old-style "context|" prefix of the msgid is removed;
  * entries under three English words are dropped (the issue's rule: single
    labels like "Width" are dictionary entries, not sentences).
"""

import re
import struct
from pathlib import Path
from typing import Iterator, NamedTuple

from . import Pair
from .clean import normalise, strip_markup

SOURCE = "gettext"
MIN_ENGLISH_WORDS = 3

# Packages whose German catalogues make up the source. Every one was checked
# to exist in bookworm and to ship at least one de/LC_MESSAGES/*.mo.
PACKAGES = [
    # toolchain and base system
    "libc-l10n", "gcc-12-locales", "binutils-common", "make", "coreutils",
    "tar", "grep", "sed", "findutils", "diffutils", "gawk", "bash", "wget",
    "gettext", "gettext-base", "e2fsprogs-l10n", "util-linux-locales",
    "dpkg", "apt", "debconf-i18n", "aptitude-common", "sudo", "systemd",
    "nano", "vim-runtime", "mc-data", "gnupg-l10n", "git",
    "network-manager", "postgresql-15", "synaptic",
    # desktop libraries and applications
    "libglib2.0-data", "libgtk-3-common", "libgtk-4-common",
    "gnome-control-center-data", "gnome-shell-common", "nautilus-data",
    "evince-common", "gedit-common", "totem-common", "rhythmbox-data",
    "shotwell-common", "evolution-common", "xfce4-panel", "thunar-data",
    "geany-common", "poedit-common", "pidgin-data", "hexchat-common",
    "claws-mail-i18n", "filezilla-common",
    # large applications
    "libreoffice-l10n-de", "inkscape", "blender-data", "gimp-data",
    "lyx-common", "gnucash-common", "gnumeric-common", "gramps",
    "digikam-data", "kdenlive-data", "audacity-data", "vlc-l10n",
    "freeciv-data",
]

# LibreOffice catalogues name the product by placeholder; it is not a
# formatting slot, so it is written out instead of dropping the entry.
_PRODUCT_NAMES = {"%PRODUCTNAME": "LibreOffice", "%PRODUCTVERSION": "7.4"}

_PLACEHOLDER_RE = re.compile(r"""
      %(?:\d+\$)?[-+ \#0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?
        (?:hh|ll|I64|I32|[hlLqjzt])?[diouxXeEfFgGaAcCsSpnm]   # printf
    | %[<>'qK]                   # gcc diagnostics: %<...%>, %qD
    | %\(\w+\)                   # Python %(name)s
    | %\{\w+\}  | %\d            # %{name}, Qt/KDE %1
    | \{\w*(?:[!:][^{}]*)?\}     # Python/C# {0}, {name:>8}
    | \$\{?\w+\}? | \$\(\w+\)    # $VAR ${var} $1 $(ARG1)
    | @\w+@                      # autoconf-style @NAME@
    | (?<!\w)@[a-z](?!\w)        # e2fsck's abbreviations (@f = filesystem)
    | (?<!\w)~[aAsSdD](?!\w)     # Scheme format directives (~A)
    """, re.VERBOSE)

# An accelerator mark is a single _ or & directly before a letter or digit;
# "&amp;" style entities and doubled marks are not accelerators. LibreOffice's
# ~ is never part of a word, so it is removed even where both sides have it.
_ACCEL_RE = re.compile(r"(?<![_&])(?:_|&(?!#?\w+;))(?=[^\W_])")
_TILDE_ACCEL_RE = re.compile(r"(?<![~\w])~(?=[^\W_])")
# LyX appends a menu shortcut after a bar: "Add Line Above|o".
_LYX_SHORTCUT_RE = re.compile(r"\|[^\s|]$")


class MoEntry(NamedTuple):
    context: str | None
    msgid: str
    msgid_plural: str | None
    msgstr: list[str]


def read_mo(data: bytes) -> list[MoEntry]:
    """All entries of a .mo file except the header. Raises ValueError on a
    file that is not a .mo catalogue."""
    if len(data) < 20:
        raise ValueError("too short for a .mo file")
    magic = data[:4]
    if magic == b"\xde\x12\x04\x95":
        order = "<"
    elif magic == b"\x95\x04\x12\xde":
        order = ">"
    else:
        raise ValueError("bad .mo magic number")
    revision, count, orig_at, trans_at = struct.unpack(order + "4I", data[4:20])
    if revision >> 16 > 1:
        raise ValueError(f"unsupported .mo revision {revision:#x}")

    def string(table: int, i: int) -> bytes:
        try:
            length, offset = struct.unpack_from(order + "2I", data, table + 8 * i)
        except struct.error:
            raise ValueError("offset table runs past the end of the file") from None
        if offset + length > len(data):
            raise ValueError("string table points past the end of the file")
        return data[offset:offset + length]

    raw = [(string(orig_at, i), string(trans_at, i)) for i in range(count)]
    charset = "utf-8"
    for msgid, msgstr in raw:
        if msgid == b"":
            m = re.search(rb"charset=([\w.-]+)", msgstr)
            if m and m.group(1).lower() != b"charset":
                charset = m.group(1).decode("ascii")
    try:
        "".encode(charset)
    except LookupError:
        raise ValueError(f"unknown charset {charset!r} in .mo header") from None

    entries = []
    for msgid, msgstr in raw:
        if msgid == b"":
            continue
        text = msgid.decode(charset, errors="replace")
        context = None
        if "\x04" in text:                  # msgctxt EOT msgid
            context, text = text.split("\x04", 1)
        singular, _, plural = text.partition("\x00")
        strs = msgstr.decode(charset, errors="replace").split("\x00")
        entries.append(MoEntry(context, singular, plural or None, strs))
    return entries


def _strip_accelerators(text: str, other: str) -> str:
    text = _TILDE_ACCEL_RE.sub("", text)
    other = _TILDE_ACCEL_RE.sub("", other)
    out, last = [], 0
    for m in _ACCEL_RE.finditer(text):
        # The word the mark sits in; if the other side has it too, the mark
        # is part of a name (file_name, R&D), not an accelerator.
        start, end = m.start(), m.end()
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_&"):
            start -= 1
        while end < len(text) and (text[end].isalnum() or text[end] in "_&"):
            end += 1
        if text[start:end] in other:
            continue
        out.append(text[last:m.start()])
        last = m.end()
    out.append(text[last:])
    return "".join(out)


def clean_message(en: str, de: str) -> tuple[str, str] | str:
    """The (en, de) prose of one entry, or the reason it is dropped."""
    if not en.strip() or not de.strip():
        return "untranslated"
    for name, value in _PRODUCT_NAMES.items():
        en, de = en.replace(name, value), de.replace(name, value)
    en, de = _LYX_SHORTCUT_RE.sub("", en), _LYX_SHORTCUT_RE.sub("", de)
    if "|" in en and "|" not in de:
        # Old-style context prefix ("Nobility Title abbreviation|nob.", glib's
        # Q_() and gramps' sgettext): only the part after the bar is text.
        en = en.rsplit("|", 1)[1]
    if _PLACEHOLDER_RE.search(en) or _PLACEHOLDER_RE.search(de):
        return "placeholder"
    en, de = _strip_accelerators(en, de), _strip_accelerators(de, en)
    en, de = normalise(strip_markup(en)), normalise(strip_markup(de))
    if len(en.split()) < MIN_ENGLISH_WORDS:
        return "under-3-words"
    return en, de


def _paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


def entry_pairs(entry: MoEntry) -> list[tuple[str, str]]:
    """Raw (en, de) texts of an entry: multi-paragraph strings pair paragraph
    by paragraph when both sides have as many, else as one segment."""
    en, de = entry.msgid, entry.msgstr[0] if entry.msgstr else ""
    en_paras, de_paras = _paragraphs(en), _paragraphs(de)
    if len(en_paras) > 1 and len(en_paras) == len(de_paras):
        return list(zip(en_paras, de_paras))
    return [(en, de)]


def german_catalogues(root: Path) -> list[Path]:
    """.mo files of the plain 'de' locale (not de_AT/de_CH) under root."""
    found = []
    for path in sorted(root.rglob("*.mo")):
        parts = path.parts
        if "LC_MESSAGES" in parts:
            i = parts.index("LC_MESSAGES")
            if i > 0 and parts[i - 1] == "de":
                found.append(path)
    return found


def extract(roots: dict[str, Path], packages: list[str] | None = None,
            source: str = SOURCE, stats: dict | None = None) -> Iterator[Pair]:
    """Pairs from the catalogues of `packages` (default PACKAGES); the split
    unit is the package. `stats` collects drop counts and catalogue names."""
    stats = stats if stats is not None else {}
    dropped = stats.setdefault("dropped", {})
    catalogues = stats.setdefault("catalogues", {})
    for pkg in packages or PACKAGES:
        mos = german_catalogues(roots[pkg])
        if not mos:
            raise FileNotFoundError(f"{pkg}: no de/LC_MESSAGES/*.mo catalogue")
        catalogues[pkg] = [str(p.relative_to(roots[pkg])) for p in mos]
        for mo in mos:
            try:
                entries = read_mo(mo.read_bytes())
            except ValueError as exc:
                raise ValueError(f"{mo}: {exc}") from None
            for entry in entries:
                for en, de in entry_pairs(entry):
                    result = clean_message(en, de)
                    if isinstance(result, str):
                        dropped[result] = dropped.get(result, 0) + 1
                        continue
                    yield Pair(source, pkg, *result)
