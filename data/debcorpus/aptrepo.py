"""A private apt state under the work folder: index update, download, unpacking.

Every apt call gets -o options that point state, lists, cache and the source
list into WORK/apt, so the system's apt state is never read for package lists
nor written. No root is needed. The package lists and the Translation-en /
Translation-de indexes come from one `apt-get update` into that private state,
so the versions downloaded are the versions the descriptions were joined on.
"""

import bz2
import gzip
import hashlib
import lzma
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

APT_HELPER = "/usr/lib/apt/apt-helper"
SYSTEM_SOURCES = (
    Path("/etc/apt/sources.list.d/debian.sources"),
    Path("/etc/apt/sources.list"),
)


class AptError(RuntimeError):
    """An apt/dpkg step failed; the message names the package or file."""


@dataclass(frozen=True)
class PackageInfo:
    name: str
    version: str
    size: int          # bytes of the .deb
    sha256: str
    source: str        # source package name
    filename: str      # pool path on the mirror


def _run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                              errors="replace", check=False)
    except FileNotFoundError as exc:
        raise AptError(f"cannot run {cmd[0]}: {exc}") from exc


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


_COMPRESSION_SUFFIXES = (".gz", ".xz", ".bz2", ".lzma", ".lz4", ".zst")


def _strip_compression(name: str) -> str:
    for suffix in _COMPRESSION_SUFFIXES:
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def parse_deb822(text: str) -> list[dict[str, str]]:
    """Paragraphs of an RFC822-style control file; continuation lines kept
    verbatim (with their leading space) joined by newlines."""
    records, current, key = [], {}, None
    for line in text.splitlines():
        if not line.strip():
            if current:
                records.append(current)
            current, key = {}, None
        elif line[0] in " \t" and key is not None:
            current[key] += "\n" + line
        elif ":" in line:
            key, value = line.split(":", 1)
            current[key] = value.strip()
    if current:
        records.append(current)
    return records


class AptRepo:
    def __init__(self, work: Path, sources: Path | None = None):
        self.root = (work / "apt").resolve()
        self.sources = sources

    # --- configuration -------------------------------------------------------
    def _options(self) -> list[str]:
        r = self.root
        opts = {
            "Dir::State": r / "state",
            "Dir::State::Lists": r / "lists",
            # An empty dpkg status: candidates do not depend on what is installed.
            "Dir::State::status": r / "state" / "status",
            "Dir::Cache": r / "cache",
            "Dir::Cache::archives": r / "cache" / "archives",
            "Dir::Etc::SourceList": r / "sources.list",
            "Dir::Etc::SourceParts": r / "sources.list.d",
            # Debian images often set Languages "none"; we need exactly these two.
            "Acquire::Languages": "en,de",
        }
        out = []
        for key, value in opts.items():
            out += ["-o", f"{key}={value}"]
        return out

    def configure(self) -> None:
        """Create the private folders and copy the one apt source into them."""
        for sub in ("state", "lists/partial", "cache/archives/partial",
                    "sources.list.d"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "state" / "status").touch()
        src = self.sources
        if src is None:
            src = next((p for p in SYSTEM_SOURCES if p.is_file()), None)
            if src is None:
                raise AptError("no apt source found in /etc/apt; pass --apt-sources")
        if not src.is_file():
            raise AptError(f"apt source file {src} does not exist")
        # Only this one source is used: third-party lists on the machine may be
        # unreachable and would make the update fail for reasons of their own.
        (self.root / "sources.list").write_text("")
        for old in (self.root / "sources.list.d").iterdir():
            old.unlink()
        if src.suffix == ".sources":
            shutil.copy(src, self.root / "sources.list.d" / src.name)
        else:
            shutil.copy(src, self.root / "sources.list")
        self.source_file = src

    # --- indexes -------------------------------------------------------------
    def update(self) -> None:
        self.configure()
        proc = _run(["apt-get", "update", "--error-on=any"] + self._options())
        if proc.returncode != 0:
            raise AptError("apt-get update (private state in "
                           f"{self.root}) failed:\n{_tail(proc.stdout + proc.stderr)}")

    def index_files(self, suffix: str) -> list[Path]:
        """Downloaded list files whose name (without compression suffix)
        ends with `suffix`, e.g. '_i18n_Translation-de'."""
        lists = self.root / "lists"
        return sorted(p for p in lists.iterdir()
                      if p.is_file() and _strip_compression(p.name).endswith(suffix))

    @staticmethod
    def read_index(path: Path) -> str:
        """Text of a list file whatever apt compressed it with (lz4 and zstd
        have no stdlib decoder, so apt's own helper decodes those)."""
        openers = {".gz": gzip.open, ".xz": lzma.open, ".lzma": lzma.open,
                   ".bz2": bz2.open}
        opener = openers.get(path.suffix)
        if opener:
            with opener(path, "rb") as fh:
                return fh.read().decode("utf-8")
        if _strip_compression(path.name) == path.name:
            return path.read_text(encoding="utf-8")
        proc = subprocess.run([APT_HELPER, "cat-file", str(path)],
                              capture_output=True, check=False)
        if proc.returncode != 0:
            raise AptError(f"cannot decompress {path}: "
                           f"{proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout.decode("utf-8")

    # --- packages ------------------------------------------------------------
    def show(self, names: list[str]) -> dict[str, PackageInfo]:
        """Candidate version, size and checksum of each package.
        Raises AptError naming every package the private lists do not have."""
        proc = _run(["apt-cache", "show", "--no-all-versions"] + self._options()
                    + names)
        found = {}
        for rec in parse_deb822(proc.stdout):
            if "Package" in rec and "Version" in rec and rec["Package"] in names:
                src = rec.get("Source", rec["Package"]).split()[0]
                found[rec["Package"]] = PackageInfo(
                    rec["Package"], rec["Version"], int(rec.get("Size", "0")),
                    rec.get("SHA256", ""), src, rec.get("Filename", ""))
        missing = [n for n in names if n not in found]
        if missing:
            raise AptError("package(s) not found in the Debian lists "
                           f"({self.source_file}): {', '.join(missing)}")
        unverifiable = [n for n, i in found.items() if not i.sha256]
        if unverifiable:
            raise AptError("the package index gives no SHA256 for "
                           f"{', '.join(unverifiable)}; cannot verify the download")
        return found

    def download(self, infos: list[PackageInfo], dest: Path) -> dict[str, Path]:
        """Fetch each .deb into `dest` (kept between runs: a file whose SHA256
        matches the index is not fetched again). Returns name -> .deb path."""
        dest.mkdir(parents=True, exist_ok=True)
        have = {i.name: self._cached(i, dest) for i in infos}
        todo = [i for i in infos if have[i.name] is None]
        if todo:
            proc = _run(["apt-get", "download"] + self._options()
                        + [f"{i.name}={i.version}" for i in todo], cwd=dest)
            for i in todo:
                have[i.name] = self._cached(i, dest)
            failed = [i.name for i in todo if have[i.name] is None]
            if failed or proc.returncode != 0:
                raise AptError(
                    f"apt-get download failed for {', '.join(failed) or 'some packages'}"
                    f" (exit {proc.returncode}):\n{_tail(proc.stdout + proc.stderr)}")
        return have  # type: ignore[return-value]

    @staticmethod
    def _cached(info: PackageInfo, dest: Path) -> Path | None:
        for path in dest.glob(f"{info.name}_*.deb"):
            if sha256_file(path) == info.sha256:
                return path
        return None


def unpack(deb: Path, dest: Path) -> Path:
    """`dpkg -x` into dest, once: a marker with the .deb's name records what is
    there, and a half-finished unpack is never mistaken for a complete one."""
    marker = dest / ".unpacked-from"
    if marker.is_file() and marker.read_text() == deb.name:
        return dest
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.mkdir(parents=True)
    proc = _run(["dpkg", "-x", str(deb), str(tmp)])
    if proc.returncode != 0:
        raise AptError(f"dpkg -x {deb.name} failed: {_tail(proc.stderr)}")
    (tmp / ".unpacked-from").write_text(deb.name)
    os.replace(tmp, dest)
    return dest


def unpack_all(debs: dict[str, Path], root: Path, jobs: int) -> dict[str, Path]:
    root.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {name: pool.submit(unpack, deb, root / name)
                   for name, deb in debs.items()}
        return {name: f.result() for name, f in futures.items()}


def deb_fields(deb: Path) -> dict[str, str]:
    """Package, Version, Source and Architecture as recorded in the .deb."""
    proc = _run(["dpkg-deb", "-f", str(deb), "Package", "Version", "Source",
                 "Architecture"])
    if proc.returncode != 0:
        raise AptError(f"dpkg-deb -f {deb.name} failed: {_tail(proc.stderr)}")
    records = parse_deb822(proc.stdout)
    return records[0] if records else {}
