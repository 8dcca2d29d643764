"""Unit tests of data/debcorpus on small fixtures of each format.

Nothing is downloaded: fixtures live in tests/data/fixtures/ or are built
here (the .mo catalogues, with struct). Run from the repository root:
    python3 -m unittest discover -s tests/data -p 'test_*.py'
"""

import contextlib
import gettext
import gzip
import io
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "data"))

from debcorpus import (Pair, clean, descriptions, dictionary,  # noqa: E402
                       gettext_mo, heldout, libreoffice, manifest, manpages,
                       split)
from debcorpus.aptrepo import (AptError, AptRepo, PackageInfo,  # noqa: E402
                               parse_deb822)

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def build_mo(entries: list[tuple[str, str]], order: str = "<",
             charset: str = "UTF-8") -> bytes:
    """A .mo file in the GNU layout: header, two offset tables, strings.
    Keys may contain msgctxt\\x04 and msgid\\x00plural, as in real catalogues."""
    header = f"Content-Type: text/plain; charset={charset}\n"
    items = sorted([("", header)] + entries)
    raw = [(k.encode(charset), v.encode(charset)) for k, v in items]
    n = len(raw)
    orig_at, trans_at = 28, 28 + 8 * n
    data_at = trans_at + 8 * n
    tables, blob = [b"", b""], b""
    for column in (0, 1):
        for pair in raw:
            s = pair[column]
            tables[column] += struct.pack(order + "2I", len(s), data_at + len(blob))
            blob += s + b"\0"
    head = struct.pack(order + "7I", 0x950412DE, 0, n, orig_at, trans_at, 0, 0)
    return head + tables[0] + tables[1] + blob


class LibreOfficeTest(unittest.TestCase):
    def setUp(self):
        self.pairs = libreoffice.pair_html(fixture("help_en.html"),
                                           fixture("help_de.html"))
        self.by_id = {i: (en, de) for i, en, de in self.pairs}

    def test_pairs_by_id_with_tags_stripped(self):
        self.assertEqual(self.by_id["hd_id3150040"], ("Advanced", "Erweitert"))
        self.assertEqual(self.by_id["par_id3153821"][0],
                         "Specifies the support options for Java applications.")

    def test_mac_variant_dropped_and_entities_decoded(self):
        en, de = self.by_id["par_id3149685"]
        self.assertEqual(en, "Press the keys Alt+<the underlined letter> to open a menu.")
        self.assertNotIn("Option", de)

    def test_duplicate_and_one_sided_ids_dropped(self):
        self.assertNotIn("par_id0000001", self.by_id)   # twice in the file
        self.assertNotIn("par_id0000002", self.by_id)   # English only

    def test_unclosed_paragraph_in_table_and_br(self):
        self.assertEqual(self.by_id["par_id3147000"],
                         ("A cell on two lines.", "Eine Zelle auf zwei Zeilen."))

    def test_script_and_unlabelled_text_ignored(self):
        text = " ".join(en for en, _ in self.by_id.values())
        self.assertNotIn("not text", text)
        self.assertNotIn("without an id", text)

    def test_module_is_the_document(self):
        self.assertEqual(libreoffice.module_of(Path("text/scalc/01/func.html")), "scalc")

    def test_extract_walks_both_trees(self):
        with tempfile.TemporaryDirectory() as tmp:
            roots = {}
            for pkg, lang, name in (("libreoffice-help-en-us", "en-US", "help_en.html"),
                                    ("libreoffice-help-de", "de", "help_de.html")):
                d = Path(tmp, pkg, libreoffice.HELP_DIR, lang, "text/swriter/guide")
                d.mkdir(parents=True)
                (d / "page.html").write_text(fixture(name), encoding="utf-8")
                roots[pkg] = Path(tmp, pkg)
            pairs = list(libreoffice.extract(roots))
        self.assertEqual(len(pairs), 4)
        self.assertTrue(all(p.doc == "swriter" and p.source == "libreoffice-help"
                            for p in pairs))


class DescriptionsTest(unittest.TestCase):
    def setUp(self):
        source_of = descriptions.source_packages(fixture("Packages"))
        self.pairs = list(descriptions.extract_from_texts(
            [fixture("Translation-en")], [fixture("Translation-de")], source_of))

    def test_join_on_md5_pairs_short_and_paragraphs(self):
        got = {(p.en, p.de) for p in self.pairs}
        self.assertIn(("frobnicate files quickly", "Dateien schnell frobnizieren"), got)
        self.assertIn(("Foo frobnicates files. It is fast and small.",
                       "Foo frobniziert Dateien. Es ist schnell und klein."), got)
        self.assertIn(("This package contains the command line tool.",
                       "Dieses Paket enthält das Befehlszeilenwerkzeug."), got)

    def test_list_items_pair_one_to_one_with_wrapped_lines(self):
        got = {(p.en, p.de) for p in self.pairs}
        self.assertIn(("Features:", "Merkmale:"), got)
        self.assertIn(("reads many formats", "liest viele Formate"), got)
        self.assertIn(("writes the same formats, with wrapped item text",
                       "schreibt dieselben Formate, mit umbrochenem Text"), got)

    def test_mismatched_paragraphs_keep_only_short_description(self):
        baz = [p for p in self.pairs if p.doc == "baz-src"]
        self.assertEqual(len(baz), 1)
        self.assertEqual(baz[0].de, "ein Paket, dessen Absätze nicht passen")

    def test_untranslated_and_orphaned_descriptions_skipped(self):
        text = " ".join(p.en + p.de for p in self.pairs)
        self.assertNotIn("no German translation", text)
        self.assertNotIn("alten Beschreibung", text)

    def test_document_is_the_source_package(self):
        docs = {p.en: p.doc for p in self.pairs}
        self.assertEqual(docs["data files for foo"], "foo")
        self.assertEqual(docs["frobnicate files quickly"], "foo")


class ManpagesTest(unittest.TestCase):
    def setUp(self):
        self.en, self.de = fixture("frob.2"), fixture("frob.de.2")

    def test_blocks_align_across_inline_and_macro_fonts(self):
        pairs = manpages.pair_pages(self.en, self.de)
        self.assertIsNotNone(pairs)
        self.assertIn(("frob() changes the file referred to by fd. It never blocks.",
                       "frob() ändert die Datei, auf die sich dd bezieht. Es blockiert nie."),
                      pairs)
        self.assertIn(("Frobnicate quickly — the default.",
                       "Schnell frobnizieren — die Voreinstellung."), pairs)
        self.assertIn(("SEE ALSO", "SIEHE AUCH"), pairs)

    def test_translator_credits_cut(self):
        pairs = manpages.pair_pages(self.en, self.de)
        self.assertFalse(any("Mustermann" in de or "Übersetzung" in de for _, de in pairs))
        self.assertNotIn("ÜBERSETZUNG", manpages.cut_credits(self.de))

    def test_code_is_not_emitted(self):
        pairs = manpages.pair_pages(self.en, self.de)
        self.assertFalse(any("#include" in en for en, _ in pairs))

    def test_structure_mismatch_skips_page(self):
        broken = self.de.replace(".PP\nDas Argument", "Das Argument")
        self.assertIsNone(manpages.pair_pages(self.en, broken))

    def test_roff_escapes(self):
        self.assertEqual(manpages.roff_text(r"\fBfoo\fP\-bar \(em \[u00E4] a\e\&."),
                         "foo-bar — ä a\\.")
        self.assertEqual(manpages.roff_text(r'text \" a comment'), "text ")

    def test_extract_pairs_pages_by_name_and_section(self):
        with tempfile.TemporaryDirectory() as tmp:
            layout = {"manpages": ("usr/share/man/man2", self.en),
                      "manpages-dev": ("usr/share/man/man3", None),
                      "manpages-de": ("usr/share/man/de/man2", self.de),
                      "manpages-de-dev": ("usr/share/man/de/man3", None)}
            roots = {}
            for pkg, (sub, text) in layout.items():
                d = Path(tmp, pkg, sub)
                d.mkdir(parents=True)
                if text:
                    with gzip.open(d / "frob.2.gz", "wt", encoding="utf-8") as fh:
                        fh.write(text)
                roots[pkg] = Path(tmp, pkg)
            stats = {}
            pairs = list(manpages.extract(roots, stats))
        self.assertEqual(stats, {"pages_common": 1, "pages_structure_mismatch": 0})
        self.assertTrue(pairs and all(p.doc == "frob.2" for p in pairs))


class DictionaryTest(unittest.TestCase):
    def test_example_sentences(self):
        pairs = [p for line in fixture("de-en.dict").splitlines()
                 for p in dictionary.parse_line(line)]
        self.assertEqual(pairs, [
            ("He fell in love with her.", "Er verliebte sich in sie."),
            ("Did we get any mail today?", "Ist heute Post gekommen?"),
            ("The car is broken.", "Das Auto ist kaputt."),
        ])

    def test_headword_is_the_document(self):
        self.assertEqual(dictionary.headword(
            "kaputt {adj} | Das Auto ist kaputt. :: broken | The car is broken."), "kaputt")


class GettextTest(unittest.TestCase):
    ENTRIES = [
        ("Open the selected file in a new window", "Die gewählte Datei in einem neuen Fenster öffnen"),
        ("menu\x04_Save the document now", "Das Dokument jetzt _speichern"),
        ("Could not open %s for reading", "%s konnte nicht zum Lesen geöffnet werden"),
        ("Use <b>bold</b> text here", "Hier <b>fetten</b> Text verwenden"),
        ("Cancel", "Abbrechen"),
        ("one file was deleted\x00%d files were deleted", "eine Datei wurde gelöscht\x00%d Dateien wurden gelöscht"),
        ("Set the file_name option first", "Zuerst die Option file_name setzen"),
        ("~Mozilla profile name is shown", "Name des ~Mozilla Profils wird gezeigt"),
    ]

    def test_reader_matches_stdlib(self):
        for order in ("<", ">"):
            data = build_mo(self.ENTRIES, order)
            entries = {e.msgid: e for e in gettext_mo.read_mo(data)}
            self.assertEqual(entries["_Save the document now"].context, "menu")
            self.assertEqual(entries["one file was deleted"].msgid_plural, "%d files were deleted")
            self.assertEqual(entries["one file was deleted"].msgstr[1], "%d Dateien wurden gelöscht")
        std = gettext.GNUTranslations(io.BytesIO(build_mo(self.ENTRIES)))
        self.assertEqual(std.gettext("Cancel"), "Abbrechen")

    def test_latin1_catalogue(self):
        data = build_mo([("Open the file now", "Die Datei jetzt öffnen")], charset="ISO-8859-1")
        self.assertEqual(gettext_mo.read_mo(data)[0].msgstr, ["Die Datei jetzt öffnen"])

    def test_not_a_catalogue(self):
        with self.assertRaises(ValueError):
            gettext_mo.read_mo(b"\0" * 40)

    def test_cleaning_rules(self):
        c = gettext_mo.clean_message
        self.assertEqual(c("_Save the document now", "Das Dokument jetzt _speichern"),
                         ("Save the document now", "Das Dokument jetzt speichern"))
        self.assertEqual(c("Could not open %s for reading", "%s nicht geöffnet"), "placeholder")
        self.assertEqual(c("Move {name} to the bin", "{name} verschieben"), "placeholder")
        self.assertEqual(c("Page %1 of the document", "Seite %1 des Dokuments"), "placeholder")
        self.assertEqual(c("expected %<;%> here now", "%<;%> erwartet"), "placeholder")
        self.assertEqual(c("Use <b>bold</b> text here", "Hier <b>fetten</b> Text verwenden"),
                         ("Use bold text here", "Hier fetten Text verwenden"))
        self.assertEqual(c("Cancel", "Abbrechen"), "under-3-words")
        self.assertEqual(c("Calendar|Show the week numbers", "Wochennummern anzeigen"),
                         ("Show the week numbers", "Wochennummern anzeigen"))
        self.assertEqual(c("Add Line Above|o", "Linie oberhalb hinzufügen|o"),
                         ("Add Line Above", "Linie oberhalb hinzufügen"))
        self.assertEqual(c("&Open the R&D file", "Die R&D-Datei ö&ffnen"),
                         ("Open the R&D file", "Die R&D-Datei öffnen"))
        self.assertEqual(c("Set the file_name option first", "Zuerst die Option file_name setzen"),
                         ("Set the file_name option first", "Zuerst die Option file_name setzen"))
        self.assertEqual(c("Start %PRODUCTNAME in safe mode", "%PRODUCTNAME im abgesicherten Modus starten"),
                         ("Start LibreOffice in safe mode", "LibreOffice im abgesicherten Modus starten"))

    def test_only_plain_de_locale(self):
        with tempfile.TemporaryDirectory() as tmp:
            for loc in ("de", "de_AT", "fr"):
                d = Path(tmp, "pkg/usr/share/locale", loc, "LC_MESSAGES")
                d.mkdir(parents=True)
                (d / "pkg.mo").write_bytes(build_mo(self.ENTRIES))
            Path(tmp, "pkg/usr/share/locale/de/LC_TIME").mkdir()
            (Path(tmp, "pkg/usr/share/locale/de/LC_TIME") / "pkg.mo").write_bytes(b"")
            found = gettext_mo.german_catalogues(Path(tmp, "pkg"))
            self.assertEqual([p.parts[-3] for p in found], ["de"])
            stats = {}
            pairs = list(gettext_mo.extract({"pkg": Path(tmp, "pkg")}, ["pkg"], stats=stats))
        got = {(p.en, p.de) for p in pairs}
        self.assertIn(("Mozilla profile name is shown", "Name des Mozilla Profils wird gezeigt"), got)
        self.assertTrue(all(p.doc == "pkg" for p in pairs))
        # The singular of a plural entry has no placeholder and is kept.
        self.assertIn(("one file was deleted", "eine Datei wurde gelöscht"), got)
        self.assertEqual(stats["dropped"]["placeholder"], 1)
        self.assertEqual(stats["dropped"]["under-3-words"], 1)

    def test_package_without_catalogue_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaisesRegex(FileNotFoundError, "empty-pkg"):
                list(gettext_mo.extract({"empty-pkg": Path(tmp)}, ["empty-pkg"]))


class HeldoutTest(unittest.TestCase):
    EN = """<page xmlns="http://projectmallard.org/1.0/" id="x"><info>
      <credit type="author"><name>A. Author</name></credit>
      <desc>Change the mouse speed.</desc></info>
      <title>Mouse speed</title><p>Open the <gui>Mouse</gui> panel.</p>
      <list><item><p>Click it.</p></item></list><screen>xset m 2</screen></page>"""
    DE = """<page xmlns="http://projectmallard.org/1.0/" id="x"><info>
      <credit type="author"><name>A. Author</name></credit>
      <desc>Die Mausgeschwindigkeit ändern.</desc>
      <mal:credit xmlns:mal="http://projectmallard.org/1.0/" type="translator">
      <mal:name>Erika Mustermann</mal:name></mal:credit></info>
      <title>Mausgeschwindigkeit</title><p>Öffnen Sie die Leiste <gui>Maus</gui>.</p>
      <list><item><p>Klicken Sie darauf.</p></item></list><screen>xset m 2</screen></page>"""

    def test_blocks_pair_and_credits_skipped(self):
        self.assertEqual(heldout.pair_documents(self.EN, self.DE), [
            ("Change the mouse speed.", "Die Mausgeschwindigkeit ändern."),
            ("Mouse speed", "Mausgeschwindigkeit"),
            ("Open the Mouse panel.", "Öffnen Sie die Leiste Maus."),
            ("Click it.", "Klicken Sie darauf."),
        ])

    def test_structure_mismatch(self):
        self.assertIsNone(heldout.pair_documents(self.EN, self.DE.replace("<title>", "<p>")))


class CleanTest(unittest.TestCase):
    def test_normalisation(self):
        en, de, reason = clean.clean_pair("  Save\u00ad the\tfile\u200b \n now ",
                                          "Datei\u00a0jetzt speichern")
        self.assertIsNone(reason)
        self.assertEqual((en, de), ("Save the file now", "Datei jetzt speichern"))
        self.assertEqual(clean.normalise("Scho\u0308n"), "Schön")   # NFC

    def test_rejections(self):
        r = lambda en, de: clean.clean_pair(en, de)[2]
        self.assertEqual(r("", "Text"), "empty")
        self.assertEqual(r("Broken \ufffd text", "Kaputter Text"), "invalid-utf8")
        self.assertEqual(r("Bad \udcff byte", "Kaputtes Byte"), "invalid-utf8")
        self.assertEqual(r("Bell \x07 here", "Glocke hier"), "control-char")
        self.assertEqual(r("Bold <b>x</b> here", "Fett x hier"), "markup")
        self.assertEqual(r("1234 5678", "1234 5678"), "no-letters")
        self.assertEqual(r("word " * 251, "Wort " * 200), "word-count")
        self.assertEqual(r("Yes", "Ja, das ist eine sehr lange Übersetzung für ein Wort"),
                         "length-ratio")
        self.assertEqual(r("LibreOffice Calc", "libreoffice calc"), "untranslated")
        self.assertIsNone(r("Tab", "Registerkarte"))
        self.assertIsNone(r("Include <stdio.h> first", "Zuerst <stdio.h> einbinden"))

    def test_english_key_ignores_case_and_punctuation(self):
        self.assertEqual(clean.english_key("Click “OK”, then Next!"),
                         clean.english_key("click OK then next"))
        self.assertNotEqual(clean.english_key("Click OK"), clean.english_key("Click Cancel"))


class SplitTest(unittest.TestCase):
    def corpus(self) -> list[Pair]:
        pairs = []
        for d in range(300):           # many small documents
            for i in range(5):
                pairs.append(Pair("many", f"doc{d}", f"sentence {d} {i}", f"Satz {d} {i}"))
        for m in range(6):             # a few large documents
            for i in range(60):
                pairs.append(Pair("few", f"module{m}", f"paragraph {m} {i}", f"Absatz {m} {i}"))
        # Segments shared between documents: must never be evaluated if in train.
        for d in range(300):
            pairs.append(Pair("many", f"doc{d}", "Click OK.", "Klicken Sie auf OK."))
        pairs.append(Pair("few", "module0", "click ok", "Auf OK klicken"))
        return pairs

    def test_documents_are_not_split(self):
        pairs = self.corpus()
        assignment = split.assign_documents(pairs, 300, 450)
        splits, _ = split.finalize(pairs, assignment)
        home = {}
        for name, ps in splits.items():
            for p in ps:
                self.assertEqual(home.setdefault((p.source, p.doc), name), name)

    def test_no_eval_english_in_train_and_dev_test_disjoint(self):
        pairs = self.corpus()
        splits, drops = split.finalize(pairs, split.assign_documents(pairs, 300, 450))
        keys = {n: {clean.english_key(p.en) for p in ps} for n, ps in splits.items()}
        self.assertFalse(keys["train"] & keys["dev"])
        self.assertFalse(keys["train"] & keys["test"])
        self.assertFalse(keys["dev"] & keys["test"])
        for ps in splits.values():     # one pair per English key
            self.assertEqual(len(ps), len({clean.english_key(p.en) for p in ps}))
        self.assertGreater(drops["duplicate"] + drops["in-train"], 0)

    def test_targets_roughly_met_from_every_source(self):
        pairs = self.corpus()
        splits, _ = split.finalize(pairs, split.assign_documents(pairs, 300, 450))
        self.assertTrue(200 <= len(splits["dev"]) <= 480, len(splits["dev"]))
        self.assertTrue(300 <= len(splits["test"]) <= 720, len(splits["test"]))
        self.assertEqual({p.source for p in splits["test"]}, {"many", "few"})

    def test_deterministic_and_order_independent(self):
        pairs = self.corpus()
        a = split.assign_documents(pairs, 300, 450)
        b = split.assign_documents(list(reversed(pairs)), 300, 450)
        self.assertEqual(a, b)

    def test_sample_keeps_splits(self):
        pairs = self.corpus()
        splits, _ = split.finalize(pairs, split.assign_documents(pairs, 300, 450))
        small = split.sample(splits, 50, 10)
        self.assertEqual([len(small[s]) for s in split.SPLITS], [50, 10, 10])
        for name in split.SPLITS:
            self.assertTrue(set(small[name]) <= set(splits[name]))
        self.assertEqual(small, split.sample(splits, 50, 10))


class AptAndManifestTest(unittest.TestCase):
    def test_deb822(self):
        recs = parse_deb822("Package: a\nDescription: x\n more\n\nPackage: b\n")
        self.assertEqual(recs, [{"Package": "a", "Description": "x\n more"},
                                {"Package": "b"}])

    def test_private_state_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            opts = " ".join(AptRepo(Path(tmp))._options())
        self.assertIn(f"Dir::State::Lists={Path(tmp).resolve()}/apt/lists", opts)
        self.assertNotIn("/var/lib/apt", opts)

    def test_dep5_licences(self):
        text = ("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
                "Files: *\nCopyright: someone\nLicense: MPL-2.0\n\n"
                "Files: debian/*\nLicense: GPL-2+\n")
        self.assertEqual(manifest.licences(text),
                         {"format": "dep5", "main": "MPL-2.0", "all": ["MPL-2.0", "GPL-2+"]})
        self.assertEqual(manifest.licences("under the GNU General Public License")["mentions"],
                         ["GPL"])

    @unittest.skipUnless(shutil.which("apt-get") and shutil.which("apt-cache"), "needs apt")
    def test_missing_packages_are_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp, "test.sources")
            src.write_text("Types: deb\nURIs: http://deb.debian.org/debian\n"
                           "Suites: bookworm\nComponents: main\n")
            repo = AptRepo(Path(tmp), src)
            repo.configure()
            with self.assertRaisesRegex(AptError, "no-such-package-vkf"):
                repo.show(["no-such-package-vkf"])
            info = PackageInfo("no-such-package-vkf", "1.0", 1, "", "x", "")
            with self.assertRaisesRegex(AptError, "download failed for no-such-package-vkf"):
                repo.download([info], Path(tmp, "debs"))


class SkippedPackagesTest(unittest.TestCase):
    def test_big_package_drops_only_what_needs_it(self):
        from debcorpus import pipeline
        wanted = {"gettext": ["coreutils", "blender-data"],
                  "manpages": ["manpages", "manpages-de"],
                  "heldout-wesnoth": ["wesnoth-1.16-data"]}
        skipped = {"blender-data": "too big", "wesnoth-1.16-data": "too big"}
        # gettext goes on without the one catalogue; a source that needs a
        # skipped package as a whole is left out.
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertEqual(pipeline._runnable(wanted, skipped), ["gettext", "manpages"])
        self.assertIn("heldout-wesnoth skipped: wesnoth-1.16-data", err.getvalue())


class CommandLineTest(unittest.TestCase):
    SCRIPT = REPO / "data" / "prepare-debian-en-de"

    def test_help(self):
        proc = subprocess.run([sys.executable, str(self.SCRIPT), "--help"],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0)
        for flag in ("--out", "--work", "--sample", "--jobs"):
            self.assertIn(flag, proc.stdout)

    def test_bad_arguments_fail(self):
        proc = subprocess.run([sys.executable, str(self.SCRIPT), "--sample", "0"],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--sample", proc.stderr)

    def test_unusable_apt_source_fails_with_message(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run(
                [sys.executable, str(self.SCRIPT), "--work", tmp,
                 "--apt-sources", str(Path(tmp, "missing.sources"))],
                capture_output=True, text=True)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("missing.sources", proc.stderr)


if __name__ == "__main__":
    unittest.main()
