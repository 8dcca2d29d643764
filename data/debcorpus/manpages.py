"""Man pages: English pages of manpages / manpages-dev against their German
translations in manpages-de / manpages-de-dev.

Pages pair by file name (name and section). Each page is cut into blocks at
structural macros (.PP, .SH, .TP, .IP, ...); font macros (.B, .BR, .IR, ...)
are inline text, because po4a writes the German pages with inline \\fB...\\fP
where the English ones use macro lines. The pages pair block by block only
when both have as many blocks; otherwise the page is skipped (a structural
mismatch means the alignment cannot be trusted). The German translator-credits
section (.SH ÜBERSETZUNG) is cut first, since it has no English counterpart.
Code (.nf/.fi, .EX/.EE, tables) still counts as a block for the alignment but
is not emitted.
"""

import gzip
import re
from pathlib import Path
from typing import Iterator

from . import Pair

SOURCE = "manpages"
EN_PACKAGES = ["manpages", "manpages-dev"]
DE_PACKAGES = ["manpages-de", "manpages-de-dev"]
PACKAGES = EN_PACKAGES + DE_PACKAGES

CREDITS_HEADINGS = ("ÜBERSETZUNG", "UBERSETZUNG")
# Macros whose arguments are text set in a font: part of the running text.
_FONT_MACROS = {"B", "I", "SM", "SB", "BR", "BI", "IB", "IR", "RB", "RI"}
# Macros that neither break a block nor carry text.
_INLINE_IGNORED = {"UR", "UE", "MT", "ME", "ft", "ps", "ss", "cs", "bd", "hy",
                   "nh", "ad", "na", "ne", "ie", "if", "el", "so", "ds", "nr",
                   "rm", "tr", "ig", "ll", "lt", "pc", "cc", "c2", "ev",
                   "\\\"", "IX", "LINKSTYLE", "TH", "PD", "UC", "DT", "\\}"}
# Regions that are code or layout, not prose: one opaque block each.
_CODE_REGIONS = {"nf": "fi", "EX": "EE", "TS": "TE", "EQ": "EN", "SY": "YS"}

# Named glyphs (\(xx and \[xx]) that occur in the Linux man pages.
_GLYPHS = {
    "em": "—", "en": "–", "hy": "-", "bu": "•", "aq": "'", "dq": '"',
    "lq": "“", "rq": "”", "oq": "‘", "cq": "’", "Fo": "«", "Fc": "»",
    "fo": "‹", "fc": "›", "co": "©", "rg": "®", "tm": "™", "mu": "×",
    "di": "÷", "+-": "±", "<=": "≤", ">=": "≥", "!=": "≠", "->": "→",
    "<-": "←", "de": "°", "ti": "~", "ha": "^", "rs": "\\", "sl": "/",
    "ga": "`", "aa": "´", "ss": "ß", ":a": "ä", ":o": "ö", ":u": "ü",
    ":A": "Ä", ":O": "Ö", ":U": "Ü", "'e": "é", "`e": "è", "'a": "á",
    "bv": "|", "ba": "|", "or": "|", "pl": "+", "mi": "−", "eq": "=",
    "sc": "§", "ps": "¶", "Eu": "€", "eu": "€", "Po": "£", "ct": "¢",
    "lh": "☜", "rh": "☞", "sq": "□", "OK": "✓", "dg": "†", "dd": "‡",
    "ua": "↑", "da": "↓", "rA": "⇒", "lA": "⇐", "hA": "⇔", "ho": "˛",
    "Sd": "ð", "TP": "Þ", "Tp": "þ", "ae": "æ", "AE": "Æ", "o/": "ø",
    "O/": "Ø", "12": "½", "14": "¼", "34": "¾", "S2": "²", "S3": "³",
}
_STRINGS = {"lq": "“", "rq": "”", "R": "®", "Tm": "™", "Aq": "'",
            "(lq": "“", "(rq": "”", "(Tm": "™", "(Aq": "'"}

_ESCAPE_RE = re.compile(r"""
    \\(?:
      f(?:\[[^\]]*\]|\([A-Za-z0-9]{2}|[A-Za-z0-9])     # font change
    | s(?:[-+]?\d+|\[[-+]?\d+\]|\([-+]?\d+)             # size change
    | \((?P<g2>..)                                      # \(xx glyph
    | \[(?P<gb>[^\]]+)\]                                # \[name] glyph
    | \*(?:\((?P<s2>..)|\[(?P<sb>[^\]]+)\]|(?P<s1>.))   # string
    | [hvwlLNoDbXZRkx]'[^']*'                           # motions etc: drop
    | (?P<lit>[-e .~0|^&,/:%c!?)tu{}])                  # one-character escapes
    | (?P<other>.)
    )""", re.VERBOSE)
_LITERAL = {"-": "-", "e": "\\", " ": " ", "~": " ", "0": " ", "|": "",
            "^": "", "&": "", ",": "", "/": "", ":": "", "%": "", "c": "",
            "!": "", "?": "", ")": "", "t": " ", "u": "", "{": "", "}": "",
            ".": "."}


def _escape(m: re.Match) -> str:
    if m.group("g2") or m.group("gb"):
        name = m.group("g2") or m.group("gb")
        if name.startswith("u") and re.fullmatch(r"u[0-9A-Fa-f]{4,6}", name):
            return chr(int(name[1:], 16))
        return _GLYPHS.get(name, "")
    if m.group("s2") or m.group("sb") or m.group("s1"):
        return _STRINGS.get(m.group("s2") or m.group("sb") or m.group("s1"), "")
    if m.group("lit") is not None:
        return _LITERAL[m.group("lit")]
    if m.group("other") is not None:
        return m.group("other")    # \\ \' \` and the like: the character itself
    return ""


def roff_text(line: str) -> str:
    """Plain text of one roff input line (escapes resolved, fonts dropped)."""
    line = line.replace("\\\\", "\x00")         # keep a literal backslash safe
    line = re.sub(r'\\".*$', "", line)          # trailing comment
    return _ESCAPE_RE.sub(_escape, line).replace("\x00", "\\")


def _macro_args(rest: str) -> list[str]:
    """Split macro arguments, honouring "double quoted" ones."""
    args, cur, quoted, i = [], "", False, 0
    while i < len(rest):
        c = rest[i]
        if quoted:
            if c == '"' and rest[i + 1:i + 2] == '"':
                cur += '"'
                i += 1
            elif c == '"':
                quoted = False
            else:
                cur += c
        elif c == '"' and not cur:
            quoted = True
        elif c in " \t":
            if cur:
                args.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    if cur or quoted:
        args.append(cur)
    return args


def _font_text(name: str, rest: str) -> str:
    args = _macro_args(rest)
    # .B/.I join their arguments with spaces; the alternating-font macros
    # (.BR etc.) concatenate them without any.
    sep = " " if len(name) == 1 or name in ("SM", "SB") else ""
    return sep.join(roff_text(a) for a in args)


def _logical_lines(text: str) -> list[str]:
    """Input lines with escaped newlines (trailing backslash) joined."""
    out, cur = [], ""
    for line in text.split("\n"):
        if line.endswith("\\") and not line.endswith("\\\\"):
            cur += line[:-1]
            continue
        out.append(cur + line)
        cur = ""
    if cur:
        out.append(cur)
    return out


def cut_credits(text: str) -> str:
    """Drop the German translator-credits section (it runs to the end or the
    next .SH)."""
    lines = text.split("\n")
    out, skipping = [], False
    for line in lines:
        if line.startswith(".SH"):
            heading = roff_text(" ".join(_macro_args(line[3:]))).strip().upper()
            skipping = heading in CREDITS_HEADINGS
        if not skipping:
            out.append(line)
    return "\n".join(out)


def blocks(text: str) -> list[tuple[str, bool]]:
    """(text, is_code) blocks of a roff page, in order."""
    result: list[tuple[str, bool]] = []
    words: list[str] = []
    tag_pending = False          # after .TP the next text line is the tag

    def flush() -> None:
        nonlocal words
        joined = " ".join(" ".join(words).split())
        if joined:
            result.append((joined, False))
        words = []

    code_end: str | None = None
    in_definition = False        # inside .de/.ig ... ".." : not page text
    for line in _logical_lines(text):
        if in_definition:
            in_definition = line.strip() != ".."
            continue
        if line.startswith(("'", ".")):
            m = re.match(r"^[.'][ \t]*(\S*)[ \t]*(.*)$", line)
            name, rest = (m.group(1), m.group(2)) if m else ("", "")
        else:
            name, rest = None, line
        if code_end is not None:             # inside .nf/.EX/.TS: opaque
            if name == code_end:
                code_end = None
                result.append(("", True))
            continue
        if name is None:                     # a text line
            if line.strip():
                words.append(roff_text(line))
                if tag_pending:
                    flush()
                    tag_pending = False
            else:
                flush()                      # a blank line breaks like .sp
            continue
        if name.startswith('\\"') or name.startswith("\\#") or name == "":
            continue                         # comment or empty request
        if name in _FONT_MACROS:
            if rest.strip():
                words.append(_font_text(name, rest))
                if tag_pending:
                    flush()
                    tag_pending = False
            continue
        if name in ("UE", "ME"):             # closing punctuation of a link
            if rest.strip():
                words[-1:] = [(words[-1] if words else "") + roff_text(rest.strip())]
            continue
        if name in ("de", "de1", "am", "ig"):
            in_definition = True
            continue
        if name in _INLINE_IGNORED:
            continue
        flush()
        if name in _CODE_REGIONS:
            code_end = _CODE_REGIONS[name]
            continue
        if name in ("SH", "SS"):
            if rest.strip():
                result.append((roff_text(" ".join(_macro_args(rest))).strip(), False))
            else:
                tag_pending = True           # heading on the next line
        elif name in ("TP", "TQ"):
            tag_pending = True
        # .IP's tag is a bullet or a label repeated verbatim; .PP/.RS/.br etc.
        # only break the block.
    flush()
    return result


def pair_pages(en_text: str, de_text: str) -> list[tuple[str, str]] | None:
    """Aligned (en, de) prose blocks, or None when the structures differ."""
    en_blocks = blocks(en_text)
    de_blocks = blocks(cut_credits(de_text))
    if len(en_blocks) != len(de_blocks):
        return None
    out = []
    for (en, en_code), (de, de_code) in zip(en_blocks, de_blocks):
        if en_code != de_code:
            return None                      # a code block against prose
        if not en_code and en and de:
            out.append((en, de))
    return out


def _pages(root: Path) -> dict[str, Path]:
    """'access.2' -> file for the pages in root/man*/ (symlinks are aliases of
    another page and skipped; .so redirects are skipped by the caller).
    Only direct section folders count, so root/de/man1 is not an English page."""
    pages = {}
    for path in root.glob("man*/*.gz"):
        if path.is_symlink():
            continue
        pages[path.name[:-3]] = path
    return pages


def read_page(path: Path) -> str:
    with gzip.open(path, "rb") as fh:
        return fh.read().decode("utf-8", errors="replace")


def _is_redirect(text: str) -> bool:
    body = [l for l in text.split("\n") if l.strip() and not l.startswith(('.\\"', "'\\\""))]
    return len(body) <= 2 and any(l.startswith(".so ") for l in body)


def extract(roots: dict[str, Path], stats: dict | None = None) -> Iterator[Pair]:
    en_pages: dict[str, Path] = {}
    for pkg in EN_PACKAGES:
        en_pages.update(_pages(roots[pkg] / "usr/share/man"))
    de_pages: dict[str, Path] = {}
    for pkg in DE_PACKAGES:
        de_pages.update(_pages(roots[pkg] / "usr/share/man/de"))
    common = sorted(set(en_pages) & set(de_pages))
    skipped = 0
    for name in common:
        en_text, de_text = read_page(en_pages[name]), read_page(de_pages[name])
        if _is_redirect(en_text) or _is_redirect(de_text):
            continue
        pairs = pair_pages(en_text, de_text)
        if pairs is None:
            skipped += 1
            continue
        for en, de in pairs:
            yield Pair(SOURCE, name, en, de)
    if stats is not None:
        stats["pages_common"] = len(common)
        stats["pages_structure_mismatch"] = skipped
