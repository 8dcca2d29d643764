"""Train / dev / test by document, deduplication and leak removal.

1. Every document (the `doc` of a Pair within its source) goes wholly to one
   split. Documents are visited in the order of a hash of their name, so the
   choice is deterministic and independent of extraction order; dev and test
   take documents until they reach their share of the targets, each source
   contributing in proportion to its size.
2. One pair is kept per English key (clean.english_key): train first, then
   dev, then test, so that a segment that occurs in train is never evaluated,
   and none occurs in both dev and test.
"""

import hashlib
from collections import defaultdict
from typing import Iterable

from . import Pair
from .clean import english_key

SPLITS = ("train", "dev", "test")
DEV_TARGET = 2000
TEST_TARGET = 3000
# A document may push dev/test past its quota by this factor; without slack a
# source whose documents are all bigger than its quota (LibreOffice modules)
# would contribute nothing to dev and test.
QUOTA_SLACK = 1.6
# In a source with many documents, no single document may fill more than this
# share of a quota, so that dev and test draw on several documents (one long
# man page would otherwise be the whole man-page test set). Sources with few
# documents (9 LibreOffice modules) cannot afford the rule.
MAX_DOC_SHARE = 1 / 3
MANY_DOCS = 30


def doc_hash(source: str, doc: str) -> int:
    return int.from_bytes(
        hashlib.sha256(f"{source}\0{doc}".encode()).digest()[:8], "big")


def _unique_sizes(pairs: list[Pair]) -> dict[tuple[str, str], int]:
    """Per document, the number of English keys found in no other document:
    what the document would actually contribute to dev or test."""
    docs_of_key: dict[str, set] = defaultdict(set)
    for p in pairs:
        docs_of_key[english_key(p.en)].add((p.source, p.doc))
    sizes: dict[tuple[str, str], int] = defaultdict(int)
    for p in pairs:
        sizes[(p.source, p.doc)] += 0     # every document gets an entry
    for docs in docs_of_key.values():
        if len(docs) == 1:
            sizes[next(iter(docs))] += 1
    return sizes


def assign_documents(pairs: list[Pair], dev_target: int = DEV_TARGET,
                     test_target: int = TEST_TARGET) -> dict[tuple[str, str], str]:
    """(source, doc) -> split name."""
    sizes = _unique_sizes(pairs)
    per_source: dict[str, int] = defaultdict(int)
    for (source, _), n in sizes.items():
        per_source[source] += n
    total = sum(per_source.values()) or 1
    assignment: dict[tuple[str, str], str] = {}
    for source in sorted(per_source):
        share = per_source[source] / total
        quota = {"dev": dev_target * share, "test": test_target * share}
        filled = {"dev": 0, "test": 0}
        docs = sorted((d for d in sizes if d[0] == source),
                      key=lambda d: (doc_hash(*d), d))
        share_cap = MAX_DOC_SHARE if len(docs) >= MANY_DOCS else QUOTA_SLACK
        for d in docs:
            split = "train"
            for cand in ("dev", "test"):
                if (filled[cand] < quota[cand]
                        and sizes[d] <= quota[cand] * share_cap
                        and filled[cand] + sizes[d] <= quota[cand] * QUOTA_SLACK):
                    split = cand
                    filled[cand] += sizes[d]
                    break
            assignment[d] = split
    return assignment


def finalize(pairs: list[Pair], assignment: dict[tuple[str, str], str]
             ) -> tuple[dict[str, list[Pair]], dict[str, int]]:
    """Deduplicate and remove leaks. Returns the splits and drop counts."""
    by_split: dict[str, list[Pair]] = {s: [] for s in SPLITS}
    for p in pairs:
        by_split[assignment[(p.source, p.doc)]].append(p)
    train_keys = {english_key(p.en) for p in by_split["train"]}
    kept_in: dict[str, str] = {}          # English key -> split that kept it
    out: dict[str, list[Pair]] = {s: [] for s in SPLITS}
    drops = {"duplicate": 0, "in-train": 0, "dev-test-overlap": 0}
    for split in SPLITS:
        for p in by_split[split]:
            key = english_key(p.en)
            if split != "train" and key in train_keys:
                drops["in-train"] += 1
            elif key in kept_in:
                drops["duplicate" if kept_in[key] == split
                      else "dev-test-overlap"] += 1
            else:
                kept_in[key] = split
                out[split].append(p)
    return out, drops


def remove_known(pairs: Iterable[Pair], known: set[str]) -> tuple[list[Pair], int]:
    """Pairs whose English key is not in `known`, deduplicated; and how many
    were dropped. Used for the held-out sets against the whole corpus."""
    out, dropped, seen = [], 0, set()
    for p in pairs:
        key = english_key(p.en)
        if key in known or key in seen:
            dropped += 1
        else:
            seen.add(key)
            out.append(p)
    return out, dropped


def sample(splits: dict[str, list[Pair]], n_train: int, n_eval: int
           ) -> dict[str, list[Pair]]:
    """A subset of each split, chosen by a hash of the English key (so the
    same pairs are chosen on every run), keeping the split of every pair."""
    def pick(pairs: list[Pair], n: int) -> list[Pair]:
        ranked = sorted(pairs, key=lambda p: hashlib.sha256(
            english_key(p.en).encode()).digest())
        chosen = set(map(id, ranked[:n]))
        return [p for p in pairs if id(p) in chosen]
    return {"train": pick(splits["train"], n_train),
            "dev": pick(splits["dev"], n_eval),
            "test": pick(splits["test"], n_eval)}
