"""The order of the steps: indexes, packages, extraction, cleaning, split,
held-out sets, output. Each step prints what it did."""

import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from . import (Pair, clean, descriptions, dictionary, gettext_mo, heldout,
               libreoffice, manifest, manpages, split)
from .aptrepo import AptError, AptRepo, deb_fields, unpack_all

# Source name -> packages it reads. The descriptions come from apt's index
# files, not from a package.
SOURCES = {
    libreoffice.SOURCE: libreoffice.PACKAGES,
    descriptions.SOURCE: [],
    manpages.SOURCE: manpages.PACKAGES,
    dictionary.SOURCE: dictionary.PACKAGES,
    gettext_mo.SOURCE: gettext_mo.PACKAGES,
}
HELDOUT = {
    "heldout-gnome-user-docs": heldout.GNOME_PACKAGES,
    "heldout-debian-reference": heldout.REFERENCE_PACKAGES,
    "heldout-wesnoth": heldout.WESNOTH_PACKAGES,
}
SPLIT_UNITS = {
    libreoffice.SOURCE: "help module (text/<module>/...)",
    descriptions.SOURCE: "source package of the described binary package",
    manpages.SOURCE: "man page (name.section)",
    dictionary.SOURCE: "dictionary entry (first German headword)",
    gettext_mo.SOURCE: "package shipping the catalogues",
}


@dataclass
class Options:
    work: Path
    out: Path
    jobs: int
    sample: int | None
    sample_eval: int | None
    max_package_mb: float
    apt_sources: Path | None
    update: bool
    heldout: bool
    dev_size: int
    test_size: int


_T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[{time.monotonic() - _T0:7.1f}s] {msg}", flush=True)


def warn(msg: str) -> None:
    print(f"warning: {msg}", file=sys.stderr, flush=True)


# --- extraction workers (top level so that a process pool can run them) -----

def _extract_source(name: str, roots: dict[str, Path], packages: list[str],
                    index_files: dict[str, list[Path]]) -> tuple[list[Pair], dict]:
    stats: dict = {}
    if name == libreoffice.SOURCE:
        pairs = list(libreoffice.extract(roots))
    elif name == descriptions.SOURCE:
        read = AptRepo.read_index
        source_of: dict[str, str] = {}
        for path in index_files["packages"]:
            source_of.update(descriptions.source_packages(read(path)))
        pairs = list(descriptions.extract_from_texts(
            (read(p) for p in index_files["en"]),
            (read(p) for p in index_files["de"]), source_of))
        stats["index_files"] = [p.name for p in index_files["en"] + index_files["de"]]
    elif name == manpages.SOURCE:
        pairs = list(manpages.extract(roots, stats))
    elif name == dictionary.SOURCE:
        pairs = list(dictionary.extract(roots))
    elif name == gettext_mo.SOURCE:
        pairs = list(gettext_mo.extract(roots, packages, stats=stats))
    elif name == "heldout-gnome-user-docs":
        pairs = list(heldout.extract_gnome(roots, stats))
    elif name == "heldout-debian-reference":
        pairs = list(heldout.extract_reference(roots, stats))
    elif name == "heldout-wesnoth":
        pairs = list(heldout.extract_wesnoth(roots, stats))
    else:
        raise ValueError(f"unknown source {name}")
    return pairs, stats


def _clean_all(pairs: list[Pair]) -> tuple[list[Pair], Counter]:
    kept, dropped = [], Counter()
    for p in pairs:
        en, de, reason = clean.clean_pair(p.en, p.de)
        if reason:
            dropped[reason] += 1
        else:
            kept.append(p._replace(en=en, de=de))
    return kept, dropped


# --- steps -------------------------------------------------------------------

def _fetch(opts: Options, repo: AptRepo, wanted: dict[str, list[str]]
           ) -> tuple[dict, dict, dict]:
    """Download and unpack. Returns roots, package records, skipped packages."""
    names = sorted({p for pkgs in wanted.values() for p in pkgs})
    infos = repo.show(names)
    limit = opts.max_package_mb * 1e6
    skipped = {n: f"{i.size / 1e6:.0f} MB .deb is over the {opts.max_package_mb:g} MB limit"
               for n, i in infos.items() if i.size > limit}
    for name, why in skipped.items():
        warn(f"skipping {name}: {why}")
    todo = [infos[n] for n in names if n not in skipped]
    total = sum(i.size for i in todo)
    log(f"downloading {len(todo)} packages ({total / 1e6:.0f} MB, cached ones kept)")
    debs = repo.download(todo, opts.work / "debs")
    log(f"unpacking {len(debs)} packages with dpkg -x")
    roots = unpack_all(debs, opts.work / "unpacked", opts.jobs)
    # Packages whose doc folder is a link into another package: fetch that
    # one too, only to read its copyright file.
    links = {n: manifest.doc_link_target(roots[n], n) for n in debs}
    extra = sorted({t for t in links.values() if t and t not in debs})
    if extra:
        log(f"fetching {len(extra)} more packages for their copyright files: "
            f"{', '.join(extra)}")
        extra_infos = repo.show(extra)
        extra_debs = repo.download(list(extra_infos.values()), opts.work / "debs")
        roots.update(unpack_all(extra_debs, opts.work / "unpacked", opts.jobs))
    records = {}
    for name, deb in debs.items():
        fields = deb_fields(deb)
        owner = links[name] or name
        copyright = manifest.copyright_file(roots[owner], owner) if owner in roots else None
        records[name] = {
            "version": fields.get("Version", infos[name].version),
            "source": fields.get("Source", name).split()[0],
            "architecture": fields.get("Architecture", ""),
            "deb_size": infos[name].size,
            "deb_sha256": infos[name].sha256,
            "used_by": sorted(s for s, pkgs in wanted.items() if name in pkgs),
            "licence": (manifest.licences(copyright.read_text(errors="replace"))
                        if copyright else {"format": "missing", "main": None}),
        }
        if links[name]:
            records[name]["copyright_from"] = links[name]
    return roots, records, skipped


def _index_files(repo: AptRepo) -> dict[str, list[Path]]:
    files = {"en": repo.index_files("_i18n_Translation-en"),
             "de": repo.index_files("_i18n_Translation-de"),
             "packages": repo.index_files("_Packages")}
    for kind, found in files.items():
        if not found:
            raise AptError(f"apt fetched no {kind} index into {repo.root / 'lists'}; "
                           "does the apt source serve Translation files for 'main'?")
    return files


def _extract(opts: Options, names: list[str], roots: dict[str, Path],
             wanted: dict[str, list[str]], skipped: dict, index_files: dict
             ) -> dict[str, tuple[list[Pair], dict]]:
    results = {}
    with ProcessPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        futures = {}
        for name in names:
            packages = [p for p in wanted[name] if p not in skipped]
            futures[name] = pool.submit(_extract_source, name,
                                        {p: roots[p] for p in packages},
                                        packages, index_files)
        for name in names:
            pairs, stats = futures[name].result()
            log(f"  {name}: {len(pairs)} pairs extracted")
            results[name] = (pairs, stats)
    return results


def _write_split_files(out: Path, splits: dict[str, list[Pair]]) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, pairs in splits.items():
        for lang in ("en", "de"):
            lines = [getattr(p, lang) for p in pairs]
            for line in lines:      # one segment per line, always
                if not line or "\n" in line or "\r" in line:
                    raise ValueError(f"bad segment for {name}.{lang}: {line!r}")
            path = out / f"{name}.{lang}"
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text("".join(l + "\n" for l in lines), encoding="utf-8")
            tmp.replace(path)
            files[path.name] = {"lines": len(lines),
                                "sha256": manifest.sha256_text_file(path)}
    return files


def _protect_from_git(folder: Path) -> None:
    """A work folder inside a checkout must never be committed by accident."""
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# written by prepare-debian-en-de: nothing here is versioned\n*\n")


def _runnable(wanted: dict[str, list[str]], skipped: dict) -> list[str]:
    runnable = []
    for name, pkgs in wanted.items():
        # Every source but gettext needs all its packages; gettext loses just
        # the skipped catalogue packages.
        missing = [p for p in pkgs if p in skipped]
        if missing and name != gettext_mo.SOURCE:
            warn(f"source {name} skipped: {', '.join(missing)} not downloaded")
            continue
        runnable.append(name)
    return runnable


def _clean_sources(extracted: dict[str, tuple[list[Pair], dict]]
                   ) -> tuple[dict, list[Pair], dict[str, list[Pair]]]:
    """Per-source statistics, the corpus pairs and the held-out pairs."""
    source_stats, corpus, held = {}, [], {}
    for name, (pairs, stats) in extracted.items():
        kept, dropped = _clean_all(pairs)
        source_stats[name] = {"extracted": len(pairs), "kept_after_cleaning": len(kept),
                              "dropped_by_cleaning": dict(sorted(dropped.items())),
                              "extractor": stats}
        if name.startswith("heldout-"):
            held[name] = kept
        else:
            source_stats[name]["split_unit"] = SPLIT_UNITS[name]
            source_stats[name]["documents"] = len({p.doc for p in kept})
            corpus.extend(kept)
    if not corpus:
        raise ValueError("no pairs extracted from any source")
    return source_stats, corpus, held


def _split(opts: Options, corpus: list[Pair], source_stats: dict
           ) -> tuple[dict[str, list[Pair]], dict]:
    assignment = split.assign_documents(corpus, opts.dev_size, opts.test_size)
    splits, drops = split.finalize(corpus, assignment)
    counts = _counts(splits)
    docs: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    for (source, doc), name in assignment.items():
        docs[source][name].add(doc)
    for source, stats in source_stats.items():
        if source.startswith("heldout-"):
            continue
        c = counts.get(source, {s: 0 for s in split.SPLITS})
        stats["splits"] = c
        stats["documents_per_split"] = {s: len(docs[source][s]) for s in split.SPLITS}
        if not c["train"]:
            warn(f"source {source} contributes no training pairs")
        if not c["dev"] or not c["test"]:
            # Possible when every document of a source is larger than its
            # share of the dev/test targets; the manifest shows it too.
            warn(f"source {source} contributes nothing to dev or test: {c}")
    return splits, drops


def _heldout_sets(held: dict[str, list[Pair]], splits: dict[str, list[Pair]],
                  source_stats: dict) -> dict[str, list[Pair]]:
    """Held-out pairs minus anything whose English occurs in the corpus."""
    known = {clean.english_key(p.en) for pairs in splits.values() for p in pairs}
    out = {}
    for name, pairs in held.items():
        kept, dropped = split.remove_known(pairs, known)
        source_stats[name]["dropped_in_corpus_or_duplicate"] = dropped
        source_stats[name]["kept"] = len(kept)
        out[name.removeprefix("heldout-")] = kept
    return out


def run(opts: Options) -> dict:
    started = datetime.now(timezone.utc)
    _protect_from_git(opts.work)
    repo = AptRepo(opts.work, opts.apt_sources)
    if opts.update:
        log(f"apt-get update into private state {repo.root} (Languages en,de)")
        repo.update()
    else:
        repo.configure()
        log(f"reusing the package lists in {repo.root / 'lists'}")
    index_files = _index_files(repo)

    wanted = {n: list(p) for n, p in SOURCES.items()}
    if opts.heldout:
        wanted.update(HELDOUT)
    roots, packages, skipped = _fetch(opts, repo, wanted)
    runnable = _runnable(wanted, skipped)
    log(f"extracting {len(runnable)} sources with {opts.jobs} jobs")
    extracted = _extract(opts, runnable, roots, wanted, skipped, index_files)

    log("cleaning")
    source_stats, corpus, held = _clean_sources(extracted)
    log(f"splitting {len(corpus)} pairs by document")
    splits, drops = _split(opts, corpus, source_stats)
    full_totals = _totals(splits)
    heldout_out = _heldout_sets(held, splits, source_stats)

    kind = "full"
    if opts.sample:
        n_eval = opts.sample_eval if opts.sample_eval is not None else max(1, opts.sample // 10)
        log(f"sampling {opts.sample} train and {n_eval} dev/test pairs")
        splits = split.sample(splits, opts.sample, n_eval)
        heldout_out = {}
        kind = "sample"

    log(f"writing {opts.out}")
    files = _write_split_files(opts.out, splits)
    if heldout_out:
        for name, info in _write_split_files(opts.out / "heldout", heldout_out).items():
            files["heldout/" + name] = info

    result = {
        "name": "debian-en-de",
        "kind": kind,
        "generator": "data/prepare-debian-en-de",
        "created_utc": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "apt_source_file": str(repo.source_file),
        "index_files": sorted(p.name for found in index_files.values() for p in found),
        "rules": {
            "min_words": clean.MIN_WORDS, "max_words": clean.MAX_WORDS,
            "max_length_ratio": clean.MAX_LENGTH_RATIO,
            "length_ratio_smoothing_chars": clean.RATIO_SMOOTHING,
            "gettext_min_english_words": gettext_mo.MIN_ENGLISH_WORDS,
            "dictionary_min_words": dictionary.MIN_EXAMPLE_WORDS,
            "dedup": "one pair per English key (casefolded letters and digits)",
            "dev_target": opts.dev_size, "test_target": opts.test_size,
            "eval_excludes": "pairs whose English key occurs in train",
        },
        "splits": _totals(splits),
        "counts_by_source": _counts(splits),
        "full_corpus_splits": full_totals,
        "dedup_and_leak_drops": drops,
        "sources": source_stats,
        "packages": packages,
        "skipped_packages": skipped,
        "files": files,
        "licences": dict(manifest.SOURCE_LICENCE_NOTES),
    }
    result["elapsed_seconds"] = round(time.monotonic() - _T0, 1)
    manifest.write_json(opts.out / "manifest.json", result)
    (opts.out / "LICENSES.md").write_text(manifest.licences_markdown(result),
                                          encoding="utf-8")
    return result


def _counts(splits: dict[str, list[Pair]]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = defaultdict(lambda: {s: 0 for s in split.SPLITS})
    for s, pairs in splits.items():
        for p in pairs:
            counts[p.source][s] += 1
    return {k: dict(v) for k, v in sorted(counts.items())}


def _totals(splits: dict[str, list[Pair]]) -> dict[str, int]:
    return {s: len(splits[s]) for s in split.SPLITS}


def summary(result: dict) -> str:
    """The table printed at the end of a run."""
    rows = [f"{'source':28} {'extracted':>9} {'cleaned':>8} {'train':>7} {'dev':>5} {'test':>5}"]
    for name, st in result["sources"].items():
        sp = result["counts_by_source"].get(name, {})
        if name.startswith("heldout-"):
            rows.append(f"{name:28} {st['extracted']:9} {st['kept_after_cleaning']:8} "
                        f"{'held out: ' + str(st.get('kept', 0)):>19}")
        else:
            rows.append(f"{name:28} {st['extracted']:9} {st['kept_after_cleaning']:8} "
                        f"{sp.get('train', 0):7} {sp.get('dev', 0):5} {sp.get('test', 0):5}")
    t = result["splits"]
    rows.append(f"{'total (' + result['kind'] + ')':28} {'':9} {'':8} "
                f"{t['train']:7} {t['dev']:5} {t['test']:5}")
    if result["skipped_packages"]:
        rows.append("skipped packages: " + ", ".join(
            f"{n} ({w})" for n, w in result["skipped_packages"].items()))
    rows.append(f"elapsed: {result['elapsed_seconds']} s")
    return "\n".join(rows)
