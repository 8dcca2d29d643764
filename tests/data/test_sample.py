"""The committed sample (data/sample) obeys the corpus rules, so that tests
and the demo can rely on it without building the corpus."""

import hashlib
import json
import sys
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "data"))

from debcorpus import clean  # noqa: E402

SAMPLE = REPO / "data" / "sample"
SPLITS = ("train", "dev", "test")
MAX_BYTES = 2_500_000


class SampleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lines = {}
        for split in SPLITS:
            for lang in ("en", "de"):
                raw = (SAMPLE / f"{split}.{lang}").read_bytes()
                cls.lines[split, lang] = raw.decode("utf-8").split("\n")  # strict UTF-8

    def test_one_segment_per_line_no_empty_lines(self):
        for (split, lang), lines in self.lines.items():
            self.assertEqual(lines[-1], "", f"{split}.{lang} must end with a newline")
            for n, line in enumerate(lines[:-1], 1):
                self.assertTrue(line.strip(), f"{split}.{lang}:{n} is empty")
                self.assertEqual(line, line.strip(), f"{split}.{lang}:{n} has outer spaces")
                self.assertNotIn("\r", line, f"{split}.{lang}:{n}")

    def test_sides_have_equal_line_counts(self):
        for split in SPLITS:
            self.assertEqual(len(self.lines[split, "en"]), len(self.lines[split, "de"]), split)

    def test_sizes(self):
        n = {s: len(self.lines[s, "en"]) - 1 for s in SPLITS}
        self.assertTrue(3000 <= n["train"] <= 5000, n)
        self.assertTrue(300 <= n["dev"] <= 500, n)
        self.assertTrue(300 <= n["test"] <= 500, n)
        total = sum(p.stat().st_size for p in SAMPLE.iterdir() if p.is_file())
        self.assertLess(total, MAX_BYTES)

    def test_every_pair_passes_the_cleaning_rules(self):
        for split in SPLITS:
            for en, de in zip(self.lines[split, "en"][:-1], self.lines[split, "de"][:-1]):
                self.assertIsNone(clean.reject_reason(en, de), (split, en, de))
                self.assertEqual(clean.normalise(en), en)
                self.assertEqual(clean.normalise(de), de)

    def test_no_dev_or_test_english_in_train_and_no_duplicates(self):
        keys = {s: [clean.english_key(l) for l in self.lines[s, "en"][:-1]] for s in SPLITS}
        train = set(keys["train"])
        self.assertFalse(train & set(keys["dev"]))
        self.assertFalse(train & set(keys["test"]))
        self.assertFalse(set(keys["dev"]) & set(keys["test"]))
        for split in SPLITS:
            self.assertEqual(len(keys[split]), len(set(keys[split])), split)

    def test_manifest_matches_files(self):
        manifest = json.loads((SAMPLE / "manifest.json").read_text(encoding="utf-8"))
        self.assertEqual(manifest["kind"], "sample")
        for split in SPLITS:
            self.assertEqual(manifest["splits"][split], len(self.lines[split, "en"]) - 1)
            for lang in ("en", "de"):
                info = manifest["files"][f"{split}.{lang}"]
                data = (SAMPLE / f"{split}.{lang}").read_bytes()
                self.assertEqual(info["sha256"], hashlib.sha256(data).hexdigest())
        for name, info in manifest["packages"].items():
            self.assertTrue(info["version"], name)
        self.assertTrue((SAMPLE / "LICENSES.md").is_file())


if __name__ == "__main__":
    unittest.main()
