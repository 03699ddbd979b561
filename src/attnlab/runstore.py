"""One run per (config, seed): the first measured numbers of every run, keyed by its identity.

A run's identity is ``Config.run_key()`` (its config and seed, never its name or folder). The
store holds, per key, the first validation loss measured for it and where that measurement is
committed; every lab-book entry reads a run through it (``attnlab.lab.labbook.Context.find``):

* a run whose key the store does not hold is measured, and its numbers become the stored ones;
* a run on disk whose final validation loss equals the stored one is that run: it is read;
* a run on disk that disagrees is a *retraining* (another machine, other threads or kernels):
  it is never read in place of the stored run. It is kept beside it as a reproducibility
  difference (复现差异), in the store and in the entry's JSON.

The store is built from committed JSON: data/run_store.json (records and differences, in the order
they were measured: ``scripts/run_store.py`` builds it from the case's runs, then ``attnlab book``
adds what it measures), then the case's runs (data/ch1_case.json): a case run the store lacks is
stored, one the case measured again with another result is listed as a difference.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .config import Config
from .errors import AttnlabError
from .runner import Finished, Run

KIND = "run_store"
STORE = Path("data") / "run_store.json"
CASE = Path("data") / "ch1_case.json"
# one run's final validation loss read again: bit-identical; JSON written by any of our writers keeps
# every float's 17 digits, so anything beyond a rounding of the last digit is another training
SAME_RUN = 1e-9


class RunStoreError(AttnlabError):
    pass


def run_label(run: Run) -> str:
    return f"{run.group}/{run.name}" if run.group else run.name


class RunStore:
    """{run key: first measurement} and the retrainings that disagreed with it."""

    def __init__(self) -> None:
        self.runs: dict[str, dict[str, Any]] = {}
        self.differences: list[dict[str, Any]] = []
        self.changed = False

    # ------------------------------------------------------------------ reading
    @classmethod
    def load(cls, root: Path | None = None) -> RunStore:
        """The store of the lab folder ``root``: its data/run_store.json, then its data/ch1_case.json.

        Each folder is its own lab: a book in ``mine/`` reads the runs trained there, first measured
        there, and never has them refused for disagreeing with the checkout's committed numbers (the same
        configs trained on another machine); ``root`` None: the checkout."""
        from .corpus import REPO_ROOT
        from .schemas import load

        store = cls()
        here = Path(root) if root is not None else REPO_ROOT
        for rel in (STORE, CASE):  # the store's records first: a case JSON trained again differs from them
            p = here / rel
            if not p.is_file():
                continue
            # checked at the door (attnlab.schemas.RunStoreFile, CaseResult): one line, never AttributeError
            doc = load("run_store" if rel == STORE else "case", p, error=RunStoreError)
            if rel == CASE:
                store.add_case(doc, str(CASE))
            else:
                store.add_doc(doc, p)
        store.changed = False
        return store

    def add_case(self, doc: dict, source: str) -> None:
        """Every run the case JSON holds (:func:`case_records`)."""
        for member, r in case_records(doc):
            self.measured(Config.from_dict(r["config"]), r.get("run") or member, r.get("val_loss_end"), source)

    def add_doc(self, doc: dict, path: Path) -> None:
        from .schemas import check

        check("run_store", doc, path, error=RunStoreError)
        for key, rec in (doc.get("runs") or {}).items():
            if key not in self.runs:
                self.runs[key] = dict(rec)
            elif not _same(self.runs[key].get("val_loss_end"), rec.get("val_loss_end")):
                self._differ(key, rec.get("names", ["?"])[0], rec.get("val_loss_end"), rec.get("source", str(path)))
        self.add_differences(doc.get("differences") or [], path)

    def add_differences(self, ds, where: str | Path = "differences") -> None:
        """Reproducibility differences recorded elsewhere (a store file, an entry's JSON), each once; checked
        (:class:`attnlab.schemas.Reproduction`) before any is kept."""
        from .schemas import check

        check("run_store", {"kind": KIND, "runs": {}, "differences": ds}, where, error=RunStoreError)
        for d in ds:
            if d not in self.differences:
                self.differences.append(dict(d))

    # ---------------------------------------------------------------- measuring
    def first(self, cfg: Config) -> dict | None:
        """The first measurement of this (config, seed), or None."""
        return self.runs.get(cfg.run_key())

    def measured(self, cfg: Config, name: str, val: float | None, source: str) -> dict | None:
        """One measurement of a run: the first becomes the stored one (returns None); one that
        disagrees with it is kept as a difference and returned (the stored value stays)."""
        key = cfg.run_key()
        rec = self.runs.get(key)
        if rec is None:
            self.runs[key] = {
                "seed": cfg.seed,
                "names": [name],
                "val_loss_end": val,
                "source": source,
                "config": {k: v for k, v in cfg.identity().items()},
            }
            self.changed = True
            return None
        if name not in rec["names"]:
            rec["names"].append(name)  # one config, two names: the same run
            self.changed = True
        if _same(rec.get("val_loss_end"), val):
            return None
        return self._differ(key, name, val, source)

    def _differ(self, key: str, name: str, val: float | None, source: str) -> dict:
        rec = self.runs[key]
        d = {
            "key": key,
            "seed": rec["seed"],
            "name": name,
            "stored": rec.get("val_loss_end"),
            "stored_source": rec.get("source"),
            "retrained": val,
            "retrained_source": source,
            "delta": None if rec.get("val_loss_end") is None or val is None else val - rec["val_loss_end"],
        }
        same = [x for x in self.differences if (x["key"], x["retrained"]) == (key, val)]
        if not same:
            self.differences.append(d)
            self.changed = True
            return d
        return same[0]

    def admit(self, f: Finished, seen_by: str) -> dict | None:
        """A finished run on disk, about to be read: None when it is the stored run (or the first
        of its key, now stored), else the difference it makes (the caller must not read it)."""
        return self.measured(f.run.cfg, run_label(f.run), final_val_of(f), f"runs/{run_label(f.run)} ({seen_by})")

    # ------------------------------------------------------------------ writing
    def to_dict(self) -> dict:
        return {
            "kind": KIND,
            "what": "每个（配置, 种子）只算一次：第一次测得的数，各条目都读它；重训不一致的记为复现差异 / one run per "
            "(config, seed): the first measured numbers, which every entry reads; a retraining that "
            "disagrees is kept here as a reproducibility difference, never read in its place",
            "identity": "attnlab.config.Config.run_key: sha256 of the Config fields but "
            "attnlab.config.NOT_IDENTITY, sorted JSON, first 16 hex digits",
            "runs": dict(sorted(self.runs.items(), key=lambda kv: (kv[1]["names"][0], kv[0]))),
            "differences": self.differences,
        }

    def save(self, root: Path) -> Path:
        from .io import write_json

        p = Path(root) / STORE
        write_json(p, self.to_dict())
        self.changed = False
        return p


def case_records(doc: dict):
    """(member, run record) of every run a case JSON holds: its first seed's pairs, then the other seeds."""
    for member, r in (doc.get("pairs") or {}).items():
        yield member, r
    for member, rs in (doc.get("seed_runs") or {}).items():
        for r in rs:
            yield member, r


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if not (math.isfinite(a) and math.isfinite(b)):
        return json.dumps(a) == json.dumps(b)
    return abs(a - b) <= SAME_RUN


def final_val_of(f: Finished) -> float | None:
    """A finished run's last validation loss: its summary.json (cheap), else its checkpoint's history."""
    from .io import read_json

    p = f.run_dir / "summary.json"
    try:  # bounded (size, depth, no FIFO): a damaged summary falls back on the checkpoint's history
        v = read_json(p, allow_nan=True).get("val_loss_end")
        if v is not None:
            return float(v)
    except (AttnlabError, ValueError, TypeError, AttributeError):
        pass
    val = f.history.val
    return val[-1][1] if val else None


def reproducibility_note(d: dict) -> str:
    """One line of an entry's notes for a retraining that disagreed with the stored run (the entry reads the stored one)."""
    delta = d.get("delta")
    zh, en = "条目读已存的那次", "the entry reads the stored run"
    return (
        f"复现差异 / reproducibility difference: {d['name']} (seed {d['seed']}) 重训得 val loss "
        f"{_fmt(d['retrained'])}，已存 {_fmt(d['stored'])}（{d['stored_source']}），差 {_fmt(delta, signed=True)}；"
        f"{zh} / retrained {_fmt(d['retrained'])} vs stored {_fmt(d['stored'])}: {en}"
    )


def _fmt(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+.3g}" if signed else f"{x:.6g}"
