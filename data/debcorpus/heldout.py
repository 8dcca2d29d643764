"""Held-out sets: gnome-user-docs, debian-reference and wesnoth.

They never enter train/dev/test (the issue keeps them aside as an independent
check of a model trained on the corpus) and are written to OUT/heldout/.

gnome-user-docs (Mallard XML, translated with itstool) and debian-reference
(DocBook HTML, translated with po4a) keep the document structure of the
English original, so a document pairs block by block when both versions have
the same sequence of block elements; otherwise it is skipped. Wesnoth ships
gettext catalogues and goes through gettext_mo.
"""

from html.parser import HTMLParser
from pathlib import Path
from typing import Iterator

from . import Pair, gettext_mo

GNOME_PACKAGES = ["gnome-user-docs"]
REFERENCE_PACKAGES = ["debian-reference-en", "debian-reference-de"]
WESNOTH_PACKAGES = ["wesnoth-1.16-data"]
PACKAGES = GNOME_PACKAGES + REFERENCE_PACKAGES + WESNOTH_PACKAGES

# Elements whose text is one segment (the innermost one wins).
_BLOCKS = frozenset("p title desc subtitle h1 h2 h3 h4 h5 h6 td th dt li "
                    "item caption".split())
# Elements whose text is not prose or not translated one to one: metadata,
# translator credits (only in the German pages), code listings.
_SKIP = frozenset("head script style credit mal:credit revision its:rules "
                  "pre screen synopsis programlisting".split())


class _BlockParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, str]] = []
        self._open: list[str] = []      # enclosing block tags
        self._buf: list[str] = []
        self._skip = 0

    def _flush(self) -> None:
        text = " ".join("".join(self._buf).split())
        if text and self._open:
            self.blocks.append((self._open[-1], text))
        self._buf = []

    def handle_starttag(self, tag, attrs):
        if tag in _SKIP:
            self._skip += 1
        elif tag in _BLOCKS:
            self._flush()
            self._open.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass                             # <br/>, <link/>: no text, no structure

    def handle_endtag(self, tag):
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCKS and tag in self._open:
            self._flush()
            while self._open and self._open.pop() != tag:
                pass

    def handle_data(self, data):
        if not self._skip:
            self._buf.append(data)


def block_sequence(markup: str) -> list[tuple[str, str]]:
    """(block tag, text) of every non-empty block of an XML/HTML document."""
    parser = _BlockParser()
    parser.feed(markup)
    parser.close()
    return parser.blocks


def pair_documents(en_markup: str, de_markup: str) -> list[tuple[str, str]] | None:
    en, de = block_sequence(en_markup), block_sequence(de_markup)
    if [t for t, _ in en] != [t for t, _ in de]:
        return None
    return [(e, d) for (_, e), (_, d) in zip(en, de)]


def _pair_trees(source: str, pairs_of: list[tuple[str, Path, Path]],
                stats: dict) -> Iterator[Pair]:
    skipped = 0
    for doc, en_file, de_file in pairs_of:
        pairs = pair_documents(en_file.read_text(encoding="utf-8", errors="replace"),
                               de_file.read_text(encoding="utf-8", errors="replace"))
        if pairs is None:
            skipped += 1
            continue
        for en, de in pairs:
            yield Pair(source, doc, en, de)
    stats[source] = {"documents": len(pairs_of), "structure_mismatch": skipped}


def extract_gnome(roots: dict[str, Path], stats: dict) -> Iterator[Pair]:
    help_root = roots["gnome-user-docs"] / "usr/share/help"
    todo = []
    for en_file in sorted((help_root / "C").rglob("*.page")):
        rel = en_file.relative_to(help_root / "C")
        de_file = help_root / "de" / rel
        if de_file.is_file():
            todo.append((str(rel), en_file, de_file))
    yield from _pair_trees("heldout-gnome-user-docs", todo, stats)


def extract_reference(roots: dict[str, Path], stats: dict) -> Iterator[Pair]:
    en_dir = roots["debian-reference-en"] / "usr/share/debian-reference"
    de_dir = roots["debian-reference-de"] / "usr/share/debian-reference"
    todo = []
    for en_file in sorted(en_dir.glob("*.en.html")):
        de_file = de_dir / en_file.name.replace(".en.html", ".de.html")
        if de_file.is_file():
            todo.append((en_file.name.split(".")[0], en_file, de_file))
    yield from _pair_trees("heldout-debian-reference", todo, stats)


def extract_wesnoth(roots: dict[str, Path], stats: dict) -> Iterator[Pair]:
    sub: dict = {}
    yield from gettext_mo.extract(roots, WESNOTH_PACKAGES, "heldout-wesnoth", sub)
    stats["heldout-wesnoth"] = {"dropped": sub.get("dropped", {})}
