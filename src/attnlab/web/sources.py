"""Where the playground finds runs: several run roots behind one naming scheme.

``attnlab serve`` with no argument looks in the places attnlab itself writes and in
the case models that ship inside the package, so a fresh clone (or a wheel installed
in an empty folder) opens on a trained model:

=============  =====================================  ==================================
name prefix    folder                                 written by
=============  =====================================  ==================================
(none)         ``runs/`` (or ``--runs-dir``)          ``attnlab train``, ``attnlab case``
``mine:``      ``mine/runs/``                         ``make case``
``quick:``     ``quick/case/runs/``                   ``attnlab case --quick``
``shipped:``   ``attnlab/data/case_runs/`` (package)  the case's first seed, 1500 steps
=============  =====================================  ==================================

A run is named ``PREFIX:REL`` (``shipped:case/big_unscaled``), ``REL`` being its path
below that root, one or two plain components (:func:`attnlab.web.runfiles.valid_run_name`).
A name is only ever looked up in the listing, never joined onto a path, and every file
is read through :class:`attnlab.web.runfiles.RunsRoot`, which follows no link. In the
first root, a folder whose name starts with a known prefix and a colon is not listed (it
would read as another root's run), nor one whose name only *looks* like it once Unicode
compatibility forms are folded (NFKC: ``ｓhipped：case`` reads as ``shipped:case``).

Each root is listed up to :data:`MAX_LISTED` run folders (and as many checkpoint folders) on
its own, so thousands of folders in one root never hide another root's runs (the quick try,
the shipped models); a root that was cut is named in :attr:`Listing.cut` and
:func:`cut_line` says so in one line.
"""

from __future__ import annotations

import os
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from . import browserrun
from .runfiles import RunsRoot, valid_run_name

PACKAGE_DATA = Path(__file__).resolve().parents[1] / "data"
SHIPPED_RUNS = PACKAGE_DATA / "case_runs"  # runs/case/<name> of the case's first seed, as trained
CHECKPOINT_FILE = "ckpt.pt"
METRICS_FILE = "metrics.jsonl"
MAX_DEPTH = 3  # root/<a>/<b>/<c>/ckpt.pt at most
MAX_LISTED = 1000  # run folders (and checkpoint folders) listed per root; past that the listing says so
MAX_VISITED = 20 * MAX_LISTED  # folders looked into per root (empty ones count): a bounded walk
LISTING_TTL_S = 0.0  # a listing is trusted this long without even checking its folders' times


@dataclass(frozen=True)
class Source:
    """One run root: the name prefix of its runs ("" for the first), its folder and the page's label."""

    prefix: str
    path: Path
    label: str
    manifest: Path | None = None  # files served only when they match it (size, sha256): the shipped models

    @property
    def root(self) -> RunsRoot:
        if self.manifest is not None:
            from .shipped import CheckedRoot

            return CheckedRoot(self.path, self.manifest)
        return RunsRoot(self.path)

    def name(self, rel: str) -> str:
        return f"{self.prefix}:{rel}" if self.prefix else rel


# (prefix, folder relative to the working directory, label) for serve's defaults
USER_ROOTS = (
    ("mine", Path("mine") / "runs", "make case 的运行 / make case's runs (mine/runs)"),
    ("quick", Path("quick") / "case" / "runs", "快速试跑 / the quick try (quick/case/runs)"),
)
SHIPPED = ("shipped", SHIPPED_RUNS, "随包附带的案例模型 / the case models that ship with attnlab")


@dataclass
class Listing:
    runs: dict[str, tuple[Source, tuple[str, ...]]]  # name -> (source, parts) of run folders (metrics.jsonl)
    checkpoints: dict[str, tuple[Source, tuple[str, ...]]]  # name -> (source, parts) of folders with ckpt.pt
    skipped: list[str]  # folders that could not be read, named relative to their root
    stamps: dict = field(default_factory=dict)  # (source index, parts) -> mtime_ns of every folder it read
    cut: list[str] = field(default_factory=list)  # the roots (prefix, "" for the first) listed only in part


def cut_line(listing: Listing, sources: Sources) -> str | None:
    """One line saying which roots were listed only in part (None when none was)."""
    if not listing.cut:
        return None
    labels = sources.labels()
    where = "；".join(labels.get(p, p) for p in listing.cut)
    return (
        f"运行太多，只列出了每个运行目录的前 {MAX_LISTED} 个（按名字排序）：{where} / too many runs: only the "
        f"first {MAX_LISTED} of each of these run folders are listed (by name); move old runs elsewhere to see the rest"
    )


class Sources:
    """An ordered list of run roots. :meth:`listing` is cached: it is reused while none of the folders it
    read (each root, every folder listed, every run folder) has changed its modification time, so a new
    run, a removed one or a first checkpoint is seen at once, and an unchanged tree costs one ``lstat``
    per folder instead of a walk (listing, and three checks per entry)."""

    def __init__(self, sources: list[Source], ttl_s: float = LISTING_TTL_S):
        prefixes = [s.prefix for s in sources]
        if len(set(prefixes)) != len(prefixes):
            raise ValueError(f"run roots need distinct prefixes, got {prefixes}")
        self.sources = sources
        self.ttl_s = ttl_s
        self._cache: tuple[float, Listing] | None = None

    @classmethod
    def single(cls, runs_dir: str | os.PathLike) -> Sources:
        return cls([Source("", Path(runs_dir), "你的运行 / your runs")])

    @classmethod
    def default(cls, runs_dir: str | os.PathLike = "runs", user_roots: bool = True, shipped: bool = True) -> Sources:
        """The runs directory, then (``user_roots``) mine/runs and quick/case/runs when they are other
        folders, then (``shipped``) the packaged case models."""
        out = [Source("", Path(runs_dir), "你的运行 / your runs")]
        seen = {_real(runs_dir)}
        extra = [*(USER_ROOTS if user_roots else ()), *((SHIPPED,) if shipped else ())]
        for prefix, path, label in extra:
            if _real(path) not in seen:
                seen.add(_real(path))
                manifest = Path(path) / "manifest.json" if prefix == SHIPPED[0] else None
                out.append(Source(prefix, Path(path), label, manifest))
        return cls(out)

    @property
    def primary(self) -> Source:
        return self.sources[0]

    def labels(self) -> dict[str, str]:
        return {s.prefix: s.label for s in self.sources}

    def listing(self) -> Listing:
        now = time.monotonic()
        if self._cache is not None and (now - self._cache[0] < self.ttl_s or self._unchanged(self._cache[1])):
            return self._cache[1]
        runs: dict = {}
        ckpts: dict = {}
        skipped: list[str] = []
        prefixes = {s.prefix for s in self.sources if s.prefix}
        stamps: dict = {}
        cut: list[str] = []
        for i, src in enumerate(self.sources):
            stamp = _stamper(src.root, i, stamps)
            stamp(())
            mine: tuple[dict, dict] = ({}, {})  # this root's runs and checkpoints: each root has its own cap
            budget = [MAX_VISITED]
            done = _walk(src, src.root, (), *mine, skipped, prefixes if not src.prefix else set(), stamp, budget)
            runs.update(mine[0])
            ckpts.update(mine[1])
            if not done:
                cut.append(src.prefix)
        listing = Listing(runs, ckpts, skipped, stamps, cut)
        self._cache = (now, listing)
        return listing

    def _unchanged(self, listing: Listing) -> bool:
        for (i, parts), mtime in listing.stamps.items():
            st = self.sources[i].root.lstat(parts) if parts else _lstat(self.sources[i].path)
            if (st.st_mtime_ns if st is not None else None) != mtime:
                return False
        return True

    def notes(self, listing: Listing) -> dict:
        """What an API answer says about the listing beside its runs: folders skipped as unreadable
        (``skipped``), roots listed only in part (``cut``, and ``cut_line``: one line for the page)."""
        out: dict = {"skipped": listing.skipped} if listing.skipped else {}
        if listing.cut:
            out.update(cut=listing.cut, cut_line=cut_line(listing, self))
        return out

    def forget(self) -> None:
        self._cache = None

    def resolve(self, name: str) -> tuple[Source, tuple[str, ...]] | None:
        """(source, parts) of a listed run folder named ``name``, or None."""
        return self.listing().runs.get(name)

    def checkpoint(self, name: str) -> tuple[Source, tuple[str, ...]] | None:
        return self.listing().checkpoints.get(name)


PUBLISHED = PACKAGE_DATA / "published"  # the committed case JSON and reports, shipped in the wheel


def published(here: str, name: str) -> str:
    """``here`` (a path relative to the working directory: a checkout's committed file or the user's
    own) when it exists, else the copy that ships inside the package (``attnlab/data/published``)."""
    return here if Path(here).is_file() else str(PUBLISHED / name)


def _real(path) -> str:
    try:
        return os.path.realpath(path)
    except OSError:
        return str(path)


def _lstat(path: Path):
    try:
        return os.stat(path)  # the root itself is the one path the user chose: it may be a link
    except OSError:
        return None


def _stamper(root: RunsRoot, index: int, stamps: dict):
    """A function recording the modification time of root/parts (None when it is missing) in ``stamps``."""

    def stamp(parts: tuple) -> None:
        st = root.lstat(parts) if parts else _lstat(root.root)
        stamps[(index, parts)] = st.st_mtime_ns if st is not None else None

    return stamp


def _poses_as_root(name: str, shadowed: set) -> bool:
    """Whether a first-root folder would read as another root's run: ``mine:…``, and any name that is
    the same once Unicode compatibility forms are folded (``ｓhipped：case``, ``Shipped:x``)."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    return ":" in folded and folded.split(":", 1)[0] in {p.casefold() for p in shadowed}


def _walk(
    src: Source,
    root: RunsRoot,
    parts: tuple,
    runs: dict,
    ckpts: dict,
    skipped: list,
    shadowed: set,
    stamp,
    budget: list,
) -> bool:
    """Record run folders (metrics.jsonl, one or two levels down) and checkpoint folders (ckpt.pt, up to
    MAX_DEPTH levels) below ``parts``; a folder that cannot be read is named in ``skipped``, never fatal.
    False when the walk stopped early: MAX_LISTED runs or checkpoints, or MAX_VISITED folders (``budget``)."""
    names = root.try_listdir(parts)
    if names is None:
        if parts or root.root.exists():
            skipped.append(src.name("/".join(parts)) if parts else str(src.path))
        return True
    for child in names:
        if not valid_run_name(child) or (not parts and _poses_as_root(child, shadowed)):
            continue
        sub = (*parts, child)
        if not root.is_dir(sub):  # files, links and anything else are not runs
            continue
        if len(ckpts) >= MAX_LISTED or len(runs) >= MAX_LISTED or budget[0] <= 0:
            return False  # one more folder that would have been looked into: the listing is cut here
        budget[0] -= 1
        rel = "/".join(sub)
        stamp(sub)  # a new checkpoint, metrics file or subfolder changes this folder's time
        if root.is_file((*sub, CHECKPOINT_FILE)):
            ckpts[src.name(rel)] = (src, sub)
        if len(sub) <= 2 and root.is_file((*sub, METRICS_FILE)):
            why = browserrun.problem(root, sub) if browserrun.is_browser_run(root, sub) else None
            if why:  # a downloaded browser run that is truncated, edited or from another config
                skipped.append(f"{src.name(rel)}: {why}")
                continue
            runs[src.name(rel)] = (src, sub)
            continue  # a run's own subfolders are not runs
        if len(sub) < MAX_DEPTH and not _walk(src, root, sub, runs, ckpts, skipped, shadowed, stamp, budget):
            return False
    return True
