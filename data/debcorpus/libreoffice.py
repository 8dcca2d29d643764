"""LibreOffice help: pair en-US and de HTML files by path, then elements by
their par_id / hd_id attribute.

Both packages are generated from the same help sources, so an id names the same
paragraph in both languages. An id that occurs twice in one file (a section
embedded twice) is ambiguous and dropped. Platform variants of a paragraph
(hidden <span class="MAC"> next to the default) keep only the default text.
"""

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Iterator

from . import Pair

SOURCE = "libreoffice-help"
PACKAGES = ["libreoffice-help-en-us", "libreoffice-help-de"]
HELP_DIR = "usr/share/libreoffice/help"

_ID_RE = re.compile(r"^(?:par|hd)_id")
_VOID = frozenset("area base br col embed hr img input link meta param "
                  "source track wbr".split())
# Text inside these never belongs to a paragraph.
_SKIP = frozenset({"script", "style", "head", "title"})


class _HelpParser(HTMLParser):
    """Collects the text of every element carrying a par_id/hd_id attribute."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: dict[str, list[str]] = {}
        self.counts: dict[str, int] = {}
        self._stack: list[tuple[str, str | None, bool]] = []  # tag, id, hidden
        self._open_id: str | None = None   # the id whose text is being collected
        self._hidden_depth = 0

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            if tag == "br" and self._open_id and not self._hidden_depth:
                self.texts[self._open_id].append(" ")
            return
        a = dict(attrs)
        elem_id = a.get("id") or ""
        # Mac-only variant of a keyboard shortcut; the default variant follows.
        hidden = tag in _SKIP or ("hidden" in a and "MAC" in (a.get("class") or ""))
        collects = bool(_ID_RE.match(elem_id)) and self._open_id is None
        if collects:
            self.counts[elem_id] = self.counts.get(elem_id, 0) + 1
            self.texts[elem_id] = []
            self._open_id = elem_id
        if hidden:
            self._hidden_depth += 1
        self._stack.append((tag, elem_id if collects else None, hidden))

    def handle_endtag(self, tag):
        # Tolerate unclosed elements (<p> closed by </td>): pop up to the match.
        if not any(t == tag for t, _, _ in self._stack):
            return
        while self._stack:
            t, elem_id, hidden = self._stack.pop()
            if hidden:
                self._hidden_depth -= 1
            if elem_id is not None:
                self._open_id = None
            if t == tag:
                break

    def handle_data(self, data):
        if self._open_id and not self._hidden_depth:
            self.texts[self._open_id].append(data)


def paragraphs(html_text: str) -> dict[str, str]:
    """id -> text of each par_id/hd_id element that is unique in the file."""
    parser = _HelpParser()
    parser.feed(html_text)
    parser.close()
    return {i: " ".join("".join(parts).split())
            for i, parts in parser.texts.items() if parser.counts[i] == 1}


def pair_html(en_html: str, de_html: str) -> list[tuple[str, str, str]]:
    """(id, en, de) for ids present once in each file and non-empty on both sides."""
    en, de = paragraphs(en_html), paragraphs(de_html)
    return [(i, en[i], de[i]) for i in en
            if i in de and en[i] and de[i]]


def module_of(rel: Path) -> str:
    """'text/scalc/01/foo.html' -> 'scalc': the help module is the split unit."""
    parts = rel.parts
    return parts[1] if len(parts) > 2 and parts[0] == "text" else parts[0]


def extract(roots: dict[str, Path]) -> Iterator[Pair]:
    en_root = roots["libreoffice-help-en-us"] / HELP_DIR / "en-US"
    de_root = roots["libreoffice-help-de"] / HELP_DIR / "de"
    for sub in (en_root, de_root):
        if not sub.is_dir():
            raise FileNotFoundError(f"LibreOffice help folder missing: {sub}")
    for en_file in sorted(en_root.rglob("*.html")):
        rel = en_file.relative_to(en_root)
        de_file = de_root / rel
        if not de_file.is_file():
            continue
        module = module_of(rel)
        for _, en, de in pair_html(en_file.read_text(encoding="utf-8", errors="replace"),
                                   de_file.read_text(encoding="utf-8", errors="replace")):
            yield Pair(SOURCE, module, en, de)
