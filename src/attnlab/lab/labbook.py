"""The lab book: every experiment of the chapter, declared as data, run as one.

An :class:`Experiment` is one entry: its id, the chapter section it answers, the chapter's own
statement, the command that reproduces it, and what is its own: the runs of one seed
(``runs_of_seed(scale, seed)``), the numbers of one seed's finished runs (``numbers(finished)``),
a pure ``judge(results)``, and optionally the why of each FAIL, its figures (``draw``) and a table.
The engine derives the rest: the run list (every seed's runs), the runs one more seed adds for
``--decide``, the measurement (a per-seed table: numbers measured once, then kept in the entry's
JSON and judged again as often as asked), its status (partial with fewer seeds than asked), "not
run yet" and the figures' paths. An entry that measures something else (a benchmark, a committed
result) gives ``measure(ctx) -> Outcome`` and ``runs`` itself instead. The registry is
:mod:`attnlab.lab` (one module per experiment); adding an experiment is one module there, one
test file and one line in ``lab.ORDER``.

``run_book`` collects the runs of the chosen experiments, executes them once
through the runner (runs shared between experiments, or with the case study,
are one run), analyzes each experiment and writes

  data/lab_book/<id>.json   each experiment in the common envelope
                            (kind, provenance, environment, results, claims)
  data/lab_book.json        sections in the chapter's order, their claims,
                            timings and environment

Figures go to figures/lab_book/. ``train=False`` trains nothing: an experiment
whose runs are not all on disk keeps its previous JSON if it has one, else is
recorded as not run yet ("未运行 / not run yet"), with its command, never a number.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from .. import verdicts as V
from ..errors import AttnlabError
from ..io import read_json, write_json, write_json_if_changed
from ..runfolder import training_conditions, training_seconds
from ..runner import SERIAL, ExecutorOptions, Finished, Run, execute, finished_history
from ..runstore import RunStore, reproducibility_note
from ..sequential import record as record_looks
from ..tools import environment, provenance
from .runs import Scale

KIND = "lab_book_experiment"
# the committed results an entry brings in (its ``source``, or read with lab.common.committed), by the
# schema they are checked against (attnlab.schemas)
COMMITTED_KINDS = {
    "ch1_case.json": "case",
    "head_portrait.json": "heads",
    "sweep_critical_dimension.json": "sweep",
    "failure_symptoms.json": "failures",
}
DATA_DIR = Path("data") / "lab_book"
FIG_DIR = Path("figures") / "lab_book"
_AGAIN = "; delete it and rerun `attnlab book --only {}`"  # what to do about a damaged entry


class BookError(AttnlabError):
    pass


@dataclass
class Outcome:
    """What an experiment's analysis returns."""

    results: dict
    claims: list[dict] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)  # paths relative to the output root
    notes: list[str] = field(default_factory=list)  # why a FAIL fails, caveats
    status: str = "done"  # done | partial (fewer seeds than asked)


@dataclass
class Context:
    """What ``analyze`` sees: the scale, the corpus, finished runs and where to write figures."""

    scale: Scale
    text: str
    root: Path
    finished: dict[str, Finished]
    experiment: Experiment
    train: bool = True  # False: analyses must not train either (NotAvailable instead)
    previous: dict | None = None  # this experiment's committed results (per-seed numbers of runs not on disk)
    extra: dict[str, Run] = field(default_factory=dict)  # undeclared runs it read (``find``); their compute counts too
    # one run per (config, seed) (attnlab.runstore): the first measured numbers of every run; None: not checked
    store: RunStore | None = None
    differences: list[dict] = field(default_factory=list)  # retrainings refused by ``find`` (复现差异)

    def get(self, run: Run) -> Finished | None:
        return self.finished.get(run.name)

    def find(self, run: Run) -> Finished | None:
        """A finished run, also one this invocation did not declare (an extra seed trained by
        ``attnlab book --decide``): looked up on disk under the runs root.

        With a store, a run whose (config, seed) was measured before and that now gives another
        validation loss (a retraining) is not returned: the entry keeps the stored run's numbers,
        and the retraining is kept beside them in ``differences``."""
        f = self.finished.get(run.name)
        if f is None:
            d = run.dir(self.root / "runs")
            try:
                if not finished_history(d, run.cfg):
                    return None
            except AttnlabError:
                return None
            f = Finished(run, d, "reused")
        if self.store is not None:
            diff = self.store.admit(f, self.experiment.id)
            if diff is not None:
                if diff not in self.differences:
                    self.differences.append(diff)
                return None
        if run.name not in self.finished:
            self.finished[run.name] = f
            self.extra[run.name] = run
        return f

    def have(self, runs: Sequence[Run]) -> bool:
        return all(r.name in self.finished for r in runs)

    def fig(self, name: str) -> str:
        """The path, relative to the root, of a figure of this experiment (figures/lab_book/<id>_<name>);
        the entry's ``draw`` draws it from its JSON (report.lab_book_figures saves it)."""
        return str(FIG_DIR / f"{self.experiment.id}_{name}")


@dataclass(frozen=True)
class Experiment:
    """One lab-book entry (one module of attnlab.lab). ``numbers`` (or ``measure``) is the only part
    that opens runs or models; ``judge(results)`` is pure and is what ``attnlab report`` re-runs from
    the JSON.

    The usual entry gives ``runs_of_seed`` and ``numbers``: its results are then ``{"per_seed": {seed:
    numbers}}`` (with ``headers`` and ``rows`` first when it gives ``table``), and ``runs``,
    ``seed_runs``, ``min_runs`` and ``measure`` are derived (:func:`measure_seeds`)."""

    id: str
    section: str  # the chapter's section, e.g. "§1.7.8"
    title: str  # 中文 / English
    statement: str  # what the chapter says, with its numbers
    command: str  # the exact command that reproduces this entry
    runs_of_seed: Callable[[Scale, int], list[Run]] | None = None  # the runs of one seed
    numbers: Callable[[list[Finished]], dict] | None = None  # one seed's finished runs -> its numbers
    # the table of the results: column header -> the cell of one seed's numbers (the seed comes first)
    table: dict[str, Callable[[dict], object]] | None = None
    runs: Callable[[Scale], list[Run]] | None = None  # default: runs_of_seed of every seed of the scale
    min_runs: Callable[[Scale], list[Run]] | None = None  # enough for a partial result
    order: tuple = ()  # sort key in the chapter's order (from section if empty)
    prediction: str = ""  # written before the runs, shown even while they are not run
    remeasure: bool = True  # False: a measurement kept from its JSON unless asked for by --only
    why: dict = field(default_factory=dict)  # claim id -> why it fails: text, or fn(results) -> text
    measure: Callable[[Context], Outcome] | None = None  # runs -> results (figures, notes, status)
    judge: Callable[[dict], list[dict]] | None = None  # results -> claims, pure
    source: str | None = None  # a committed result this entry brings in (data/...json), judged by ``judge``
    # the runs one more seed adds for a claim (attnlab book --decide): seed_runs(scale, seed, claim_id)
    seed_runs: Callable[[Scale, int, str], list[Run]] | None = None
    # figures from the results alone: draw(results) -> {"name.png": matplotlib figure}, each saved as
    # figures/lab_book/<id>_name.png, the path ``measure`` lists in Outcome.figures as ctx.fig("name.png")
    draw: Callable[[dict], dict] | None = None

    def __post_init__(self):
        derive = partial(object.__setattr__, self)  # frozen: the derived parts are set once, here
        per_seed = self.runs_of_seed
        if self.runs is None:
            derive(
                "runs",
                (lambda scale: [r for s in scale.seed_list() for r in per_seed(scale, s)]) if per_seed else _no_runs,
            )
        if per_seed is not None:
            if self.seed_runs is None:
                derive("seed_runs", lambda scale, seed, claim_id: per_seed(scale, seed))
            if self.min_runs is None:  # the stored numbers are judged without any run folder
                derive("min_runs", _no_runs)
            if self.measure is None and self.numbers is not None:
                derive("measure", partial(measure_seeds, self))
        if self.measure is None or self.judge is None:
            raise ValueError(f"experiment {self.id}: give judge, and runs_of_seed with numbers (or measure)")

    def key(self) -> tuple:
        return self.order or section_key(self.section)


def _no_runs(scale: Scale) -> list[Run]:
    return []


# ------------------------------------------------------------------- the derived measurement
MAX_SEEDS = 30  # seeds looked for on disk beyond the scale's own (extra seeds of --decide)


def seed_table(
    ctx: Context,
    runs_of_seed: Callable[[int], Sequence[Run]],
    measure: Callable[[list[Finished]], dict],
    previous: dict | None,
) -> dict[str, dict]:
    """{seed: numbers} for every seed whose numbers the committed results hold (``previous``, the same
    kind of table: kept as measured) or whose runs are on disk (measured now), in seed order. A seed
    retrained on another machine therefore never silently replaces the numbers already judged.

    The scale's own seeds come first; further seeds (BOOK_SEED + 3 …) count when their runs are
    on disk, so the extra seeds ``--decide`` trains join the table without a change here."""
    from .runs import BOOK_SEED

    previous = previous or {}
    out: dict[str, dict] = {}
    scan = ctx.scale.seeds if ctx.scale.quick or ctx.scale.first_seed != BOOK_SEED else max(ctx.scale.seeds, MAX_SEEDS)
    for i in range(scan):
        seed = ctx.scale.first_seed + i
        if str(seed) in previous:  # measured once, judged again from the JSON as often as asked
            out[str(seed)] = previous[str(seed)]
            continue
        runs = list(runs_of_seed(seed))
        found = [ctx.find(r) for r in runs]
        if runs and all(f is not None for f in found):
            out[str(seed)] = measure(found)
    return out


def figure_paths(e: Experiment, results: dict) -> list[str]:
    """The figures ``e.draw`` makes of ``results``, as paths relative to the root
    (figures/lab_book/<id>_<name>; report.lab_book_figures draws and saves them)."""
    if e.draw is None:
        return []
    from .plot import plt

    names = []
    for name, fig in e.draw(results).items():
        plt().close(fig)
        names.append(str(FIG_DIR / f"{e.id}_{name}"))
    return names


def measure_seeds(e: Experiment, ctx: Context) -> Outcome:
    """The measurement of an entry that gives ``runs_of_seed`` and ``numbers``: one seed's numbers per
    seed (:func:`seed_table`), the table of them when the entry gives one, its figures; partial with
    fewer seeds than the scale asks; not run yet with none."""
    per_seed = seed_table(ctx, lambda s: e.runs_of_seed(ctx.scale, s), e.numbers, (ctx.previous or {}).get("per_seed"))
    if not per_seed:
        raise NotAvailable(f"未运行 / not run yet: no finished run and no stored numbers (`{e.command}`)")
    results: dict = {}
    if e.table:
        results["headers"] = ["种子 / seed", *e.table]
        results["rows"] = [[int(s), *(cell(row) for cell in e.table.values())] for s, row in per_seed.items()]
    results["per_seed"] = per_seed
    status = "done" if len(per_seed) >= ctx.scale.seeds else "partial"
    return Outcome(results=results, figures=figure_paths(e, results), status=status)


def section_key(section: str) -> tuple:
    """ "§1.7.8" -> (1, 7, 8); anything else sorts last."""
    nums = re.findall(r"\d+", section.split("/")[0])
    return tuple(int(n) for n in nums) if nums else (999,)


# -------------------------------------------------------------------------- selection
def select(experiments: Sequence[Experiment], only: Sequence[str] | None) -> list[Experiment]:
    """Experiments whose id or section matches one of ``only`` (a section matches its subsections)."""
    if not only:
        return list(experiments)
    chosen, unknown = [], []
    for token in only:
        t = token.strip().lstrip("§")
        hits = [
            e
            for e in experiments
            if e.id == token or e.section.lstrip("§").split(" ")[0] == t or e.section.lstrip("§").startswith(t + ".")
        ]
        if not hits:
            unknown.append(token)
        chosen += [e for e in hits if e not in chosen]
    if unknown:
        ids = ", ".join(e.id for e in experiments)
        secs = ", ".join(sorted({e.section for e in experiments}, key=section_key))
        raise BookError(
            f"unknown --only {', '.join(unknown)}: give an experiment id ({ids}) or a chapter section ({secs})"
        )
    return chosen


# --------------------------------------------------------------------------------- run
def run_book(
    experiments: Sequence[Experiment],
    text: str,
    root: Path,
    *,
    scale: Scale,
    train: bool = True,
    options: ExecutorOptions = SERIAL,
    log: Callable[[str], None] = print,
    registry: Sequence[Experiment] | None = None,
    explicit: Sequence[str] = (),
    unfinished: dict[str, str] | None = None,
) -> dict:
    """Run ``experiments`` and write their JSON and data/lab_book.json; returns the book dict.

    ``options``: how the runs are executed (attnlab.runner.ExecutorOptions, passed to the runner whole).

    ``registry`` (default: ``experiments``) is the whole book: sections not run
    now keep their previous JSON in the book index, or show as not run yet.
    ``unfinished``: filled with every run that did not finish now, name -> "failed: why" or
    "busy: the process holding it". Such a run never makes the book lose anything: an entry it
    belongs to keeps its previous JSON, and an index that would count fewer experiments done or
    fewer claims than the one on disk goes to data/lab_book.partial.json instead (:func:`write_unless_less`).
    """
    unfinished = {} if unfinished is None else unfinished
    root = Path(root)
    runs_root = root / "runs"
    needed: dict[str, Run] = {}
    for e in experiments:
        for r in e.runs(scale):
            if r.name in needed and needed[r.name] != r:
                raise BookError(f"two experiments declare run {r.name} differently")
            needed[r.name] = r
    t0 = time.perf_counter()
    finished: dict[str, Finished] = {}
    statuses: dict[str, str] = {}
    # every entry reads each (config, seed) as first measured; quick runs share no key with the committed ones
    store = RunStore() if scale.quick else RunStore.load(root)
    if needed and train:
        log(f"lab book: {len(needed)} runs for {len(experiments)} experiment(s) under {runs_root}")
        finished = execute(
            list(needed.values()),
            text,
            runs_root,
            options,
            log=log,
            keep_going=True,
            on_result=lambda r: _note(r, statuses, unfinished),
            desc="lab book",
        )
    elif needed:
        for r in needed.values():
            d = r.dir(runs_root)
            try:
                if finished_history(d, r.cfg):
                    finished[r.name] = Finished(r, d, "reused")
            except AttnlabError:
                pass
    train_s = time.perf_counter() - t0
    timings: dict[str, dict] = {}
    used_runs: dict[str, dict[str, Run]] = {}
    for e in experiments:
        t = time.perf_counter()
        old = root / DATA_DIR / f"{e.id}.json"
        if not e.remeasure and e.id not in explicit and old.is_file() and _same_scale(old, scale):
            log(f"lab book: {e.id}: kept its measurement ({old}); `--only {e.id}` measures again")
            kept = read_json(old, error=BookError, hint=_AGAIN.format(e.id))  # its numbers stay; the whys are today's
            _refuse_older_shape(e, old, kept)
            kept = rejudge(e, kept, root) if e.judge else kept
            kept["notes"] = [n for n in kept.get("notes", []) if not n.startswith(("FAIL ", "INCONCLUSIVE "))]
            kept["notes"] += fail_notes(kept["claims"], kept.get("results"), e.why)
            write_json(old, kept)
            continue
        previous = _read(old) if old.is_file() and _same_scale(old, scale) else None
        ctx = Context(scale, text, root, finished, e, train, store=store)
        doc = _run_one(e, ctx, scale, finished, train, log)
        lost = [r.name for r in e.runs(scale) if r.name in unfinished]
        if doc is not None and lost and holds_less(held(doc), held(previous)):
            log(f"lab book: {e.id}: {len(lost)} of its runs did not finish ({', '.join(lost[:4])}); kept {old}")
            doc = None
        if doc is not None:
            used = {r.name: r for r in e.runs(scale)} | ctx.extra
            used_runs[e.id] = used
            if _measured_before(doc, previous, used, finished):
                # nothing of it read from disk now and the same numbers: when, where and how long they were
                # measured stays as stored (a book judged again on a machine without its runs loses nothing)
                doc |= {k: previous[k] for k in ("provenance", "environment", "runs", "timings") if k in previous}
                doc = {k: doc[k] for k in previous if k in doc} | doc  # and in the stored order
            else:
                doc["timings"] = {
                    "analysis_s": round(time.perf_counter() - t, 3),
                    "train_s": _train_seconds(e, scale, finished),
                    **compute_time(list(used.values()), runs_root, (previous or {}).get("timings")),
                }
            write_json(root / DATA_DIR / f"{e.id}.json", doc)
            timings[e.id] = doc["timings"]
    if store.changed and not scale.quick:  # quick numbers mean nothing beyond the plumbing
        store.save(root)
    book = build_index(registry or experiments, root, scale)
    every = {r.name: r for e in (registry or experiments) for r in e.runs(scale)}
    for used in used_runs.values():
        every |= used
    index = root / "data" / "lab_book.json"
    before = (_read(index) or {}).get("timings", {}) if index.is_file() and _same_scale(index, scale) else {}
    # runs of experiments kept (not measured this time) stay in the book's record
    kept_runs = {
        e.id: (_read(root / DATA_DIR / f"{e.id}.json") or {}).get("timings", {}) for e in (registry or experiments)
    }
    before_book = dict(before.get("book") or {})
    merged = {
        **(before_book.get("per_run") or {}),
        **{k: v for t in kept_runs.values() for k, v in (t.get("per_run") or {}).items()},
    }
    if merged:
        before_book["per_run"] = merged
    merged_conditions = dict(before_book.get("per_run_conditions") or {})
    for t in kept_runs.values():  # an entry's seconds come with its conditions, or with none
        for k in t.get("per_run") or {}:
            merged_conditions.pop(k, None)
            if k in (t.get("per_run_conditions") or {}):
                merged_conditions[k] = t["per_run_conditions"][k]
    if merged_conditions:
        before_book["per_run_conditions"] = merged_conditions
    book["timings"] = {
        "this_run_s": round(time.perf_counter() - t0, 3),
        "training_s": round(train_s, 3),
        "experiments": {**before.get("experiments", {}), **timings},
        # every run once, however many share it; a record of runs no longer on disk is kept
        "book": compute_time(list(every.values()), runs_root, before_book, keep_unlisted=True),
    }
    old_book = _read(index) if index.is_file() and _same_scale(index, scale) else None
    less = holds_less(held(book), held(old_book)) if unfinished else []
    return old_book if write_unless_less(index, book, less, log) != index else book


def _note(r: dict, statuses: dict[str, str], unfinished: dict[str, str]) -> None:
    """The runner's word on one run: its status, and why it did not finish if it did not."""
    statuses[r["name"]] = r["status"]
    if r["status"] in ("failed", "busy"):
        unfinished[r["name"]] = f"{r['status']}: {r.get('error') or 'no reason given'}"


# ------------------------------------------------------ a result never replaced by one that holds less
def held(doc: dict | None) -> dict:
    """What a book index (experiments done, claims) or one entry's JSON (done, claims) holds, for
    :func:`holds_less`; nothing for no document."""
    if not doc:
        return {}
    if "summary" in doc:
        return {"experiments done": int(doc["summary"].get("done", 0)), "claims": int(doc["summary"].get("claims", 0))}
    return {"done": int(doc.get("status") == "done"), "claims": len(doc.get("claims") or [])}


def holds_less(new: dict, old: dict) -> list[str]:
    """What ``old`` holds that ``new`` does not, one phrase each, from two records of what a result holds
    (``{measure: count}``, or ``{measure: {claim id: seeds}}`` claim by claim); empty when ``new`` holds at
    least as much. A measure or claim only one of them has counts for neither. The one comparison behind
    every partial result: the lab book's index and entries (:func:`held`) and the case's document."""
    less = []
    for k, b in old.items():
        a = new.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            fewer = [f"{i} {a[i]} < {n}" for i, n in b.items() if i in a and a[i] < n]
            if fewer:
                less.append(f"{len(fewer)} {k} ({', '.join(fewer[:3])}{', ...' if len(fewer) > 3 else ''})")
        elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and a < b:
            less.append(f"{k} {a} < {b}")
    return less


def beside(path: Path, tag: str) -> Path:
    """``NAME.<tag>.json`` beside ``path``: where a result goes that must not replace the one there
    (``partial``: it holds less; ``retrained``: it measured runs again and got other numbers)."""
    path = Path(path)
    return path.with_name(f"{path.stem}.{tag}{path.suffix}")


def write_unless_less(path: Path, doc: dict, less: list[str], log: Callable[[str], None] = print) -> Path:
    """Write ``doc`` to ``path``; or, when the result there holds more (``less``: what it holds that ``doc``
    does not, :func:`holds_less`), keep it and write ``doc`` beside it (``NAME.partial.json``) until it holds
    as much. Writing ``path`` removes a partial result beside it (it held less). Returns the path written."""
    aside = beside(path, "partial")
    if less:
        write_json(aside, doc)
        log(
            f"{path} 比这次的结果完整，保持不动；这次的写到 {aside}，直到它同样完整 / {path} holds more than "
            f"this result ({'; '.join(less)}): kept it, wrote this one to {aside} until it holds as much"
        )
        return aside
    write_json(path, doc)
    aside.unlink(missing_ok=True)
    return path


def _measured_before(doc: dict, previous: dict | None, used: dict[str, Run], finished: dict) -> bool:
    """Whether an entry's new ``doc`` holds exactly the numbers of its stored JSON (``previous``) and none
    of its runs (``used``) was read from disk in this invocation."""
    if previous is None or previous.get("status") != doc.get("status"):
        return False
    return not any(name in finished for name in used) and previous.get("results") == doc.get("results")


def _read(path: Path) -> dict | None:
    try:
        return read_json(path)
    except AttnlabError:
        return None


def read_entries(registry: Sequence[Experiment], data: Path) -> dict[str, dict]:
    """Every entry of ``registry`` in ``data``/lab_book/, each read within bounds and checked against
    its schema (attnlab.schemas.LabBookEntry): a damaged one, or a FIFO or folder in its place, is
    a :class:`BookError` naming it. An entry with no file is absent."""
    from ..schemas import load

    docs = {}
    for e in registry:
        p = Path(data) / "lab_book" / f"{e.id}.json"
        if p.exists() or p.is_symlink():
            doc = load("lab_book_entry", p, error=BookError, id=e.id)
            if doc["id"] != e.id:
                raise BookError(
                    f"{p} holds the entry {doc['id']!r}, not {e.id!r}; rebuild it with `attnlab book --only {e.id}`"
                )
            docs[e.id] = doc
    return docs


# keys of the index that record when and where it was written, not what it holds
STAMPS = ("environment", "created", "attnlab", "torch", "python")


def same_but_stamps(old: dict, new: dict) -> bool:
    """Whether two documents differ at most in their stamps (when, on which machine)."""
    return {k: v for k, v in old.items() if k not in STAMPS} == {k: v for k, v in new.items() if k not in STAMPS}


_SHOWN = ("id", "kind", "section", "statement", "expected", "measured")  # a claim's fields in the report


def rejudged_book(
    registry: Sequence[Experiment], root: Path, data: Path | None = None
) -> tuple[dict, dict[Path, dict]]:
    """The lab book judged again from its JSON, nothing written: (the index, {path: document} of
    every file whose content would change). Everything is read and checked first: a damaged file,
    an entry the index records as measured whose file is missing, or an index that would hold fewer
    experiments done or fewer claims than the one on disk is refused (:class:`BookError`, one line).
    ``data``: the folder holding lab_book.json and lab_book/ (default ``root``/data)."""
    from ..schemas import load

    root = Path(root)
    data = Path(data) if data is not None else root / "data"
    index = data / "lab_book.json"
    old = load("lab_book", index, error=BookError) if index.exists() or index.is_symlink() else {}
    docs = read_entries(registry, data)
    ids = {e.id for e in registry}
    lost = [eid for eid, st in (old.get("status") or {}).items() if st != "not_run" and eid in ids and eid not in docs]
    if lost:
        p = data / "lab_book" / f"{lost[0]}.json"
        raise BookError(
            f"{p} is missing but {index} records {lost[0]} as {old['status'][lost[0]]}"
            + (f" (and {len(lost) - 1} more entries)" if len(lost) > 1 else "")
            + f"; restore it (e.g. `git checkout {p}`) or rebuild it with `attnlab book --only {lost[0]}`"
        )
    changed: dict[Path, dict] = {}
    for e in registry:
        doc = docs.get(e.id)
        if doc is None or e.judge is None:
            continue
        p = data / "lab_book" / f"{e.id}.json"
        try:
            new = rejudge(e, doc, root, data=data)
        except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError, AttributeError, NotAvailable) as err:
            raise BookError(
                f"{p} cannot be judged: {type(err).__name__} {err}; it is not a complete {e.id} result "
                f"(rerun `{e.command}`)"
            ) from None
        if new != doc:
            changed[p] = docs[e.id] = new
        # a claim kept as stored (no results to judge it from) must still hold what the report shows
        gap = next(((c.get("id"), k) for c in new.get("claims") or [] for k in _SHOWN if k not in c), None)
        if gap:
            raise BookError(f"{p}: claim {gap[0]!r} has no {gap[1]!r}, which the report shows; rerun `{e.command}`")
    scale = old.get("scale") or {}
    scale = Scale(quick=scale["quick"], steps=scale["steps"], seeds=scale["seeds"]) if scale else None
    book = build_index(registry, root, scale, docs=docs)
    book["timings"] = old.get("timings", {})
    if less := holds_less(held(book), held(old)):
        raise BookError(
            f"judged again, {index} would hold less than it does ({'; '.join(less)}); rebuild it with "
            "`attnlab book --no-train`"
        )
    if old and same_but_stamps(old, book):
        book = old  # unchanged: not stamped again
    else:
        changed[index] = book
    return book, changed


def rejudge_book(
    registry: Sequence[Experiment], root: Path, log: Callable[[str], None] = print, data: Path | None = None
) -> dict:
    """Judge every lab-book entry again from its JSON (no run folder, no model) and rebuild
    data/lab_book.json; timings and everything measured are kept as they are. Everything is
    checked before anything is written (:func:`rejudged_book`); a file is written only when its
    content changes."""
    book, changed = rejudged_book(registry, root, data)
    for p, doc in changed.items():
        if write_json_if_changed(p, doc) and p.name != "lab_book.json":
            log(f"lab book: {p.stem}: re-judged ({V.count_line(doc['claims'])})")
    return book


def _status(path: Path) -> str | None:

    try:
        return read_json(path).get("status")
    except (AttnlabError, AttributeError):
        return None


def _same_scale(path: Path, scale: Scale) -> bool:

    try:
        return read_json(path).get("scale", {}).get("quick") == scale.quick
    except (AttnlabError, AttributeError):
        return False


def compute_time(runs: Sequence[Run], runs_root: Path, before: dict | None = None, keep_unlisted: bool = False) -> dict:
    """The training time recorded in the runs' folders (RUN/timing.json, over every session and
    invocation): what the experiment costs on the machines that trained it, one number per run
    (``per_run``), merged with the record ``before`` (the runs folder is not in git: a run trained
    on another machine keeps its seconds; a folder on disk wins, it holds every session). Runs
    trained before timing was recorded, or not trained yet, are counted apart (runs − timed_runs).
    A record from before ``per_run`` existed that counted more timed runs is kept whole.
    ``per_run_conditions`` says, for each run whose sessions recorded them, the process's CPU time
    and the machine's load while it trained, and whether its cores were idle
    (attnlab.runfolder.training_conditions): ``attnlab book --plan`` calibrates only on idle ones."""
    before = before or {}
    per_run = {k: float(v) for k, v in (before.get("per_run") or {}).items()}
    conditions = {k: dict(v) for k, v in (before.get("per_run_conditions") or {}).items()}
    for r in runs:
        s = training_seconds(r.dir(runs_root))
        if s is not None:
            per_run[r.name] = s
            conditions.pop(r.name, None)  # the folder wins, sessions and conditions alike
            c = training_conditions(r.dir(runs_root))
            if c and "cpu_s" in c:
                conditions[r.name] = c
    names = {r.name for r in runs}
    if not keep_unlisted:
        per_run = {k: v for k, v in per_run.items() if k in names}
    conditions = {k: v for k, v in conditions.items() if k in per_run}
    if "per_run" not in before and before.get("timed_runs", 0) > len(per_run):
        return {k: before[k] for k in ("compute_s", "runs", "timed_runs") if k in before}
    n = len(names | set(per_run))
    out = {
        "compute_s": round(sum(per_run.values()), 1),
        "runs": n,
        "timed_runs": len(per_run),
        "per_run": dict(sorted(per_run.items())),
    }
    if conditions:
        out["per_run_conditions"] = dict(sorted(conditions.items()))
    return out


def _train_seconds(e: Experiment, scale: Scale, finished: dict[str, Finished]) -> float:
    """Training time of this experiment's runs as recorded in each run's history."""
    return round(sum(f.seconds for r in e.runs(scale) if (f := finished.get(r.name))), 3)


def _run_one(
    e: Experiment, ctx: Context, scale: Scale, finished: dict, train: bool, log: Callable[[str], None]
) -> dict | None:
    runs = e.runs(scale)
    enough = e.min_runs(scale) if e.min_runs else runs
    if not ctx.have(enough):
        missing = [r.name for r in enough if r.name not in finished]
        prev = ctx.root / DATA_DIR / f"{e.id}.json"
        if prev.is_file() and not scale.quick and _status(prev) != "not_run":
            log(f"lab book: {e.id}: runs not finished ({', '.join(missing[:4])}...); kept its previous JSON")
            return None
        log(f"lab book: {e.id}: not run yet ({len(missing)} run(s) missing)")
        return envelope(
            e,
            scale,
            status="not_run",
            runs=runs,
            finished=finished,
            outcome=Outcome(
                results={},
                notes=[
                    f"缺少的训练 / missing runs ({len(missing)}): {', '.join(missing[:6])}"
                    + (" …" if len(missing) > 6 else "")
                ],
            ),
        )
    try:
        outcome = analyze(e, ctx)
    except NotAvailable as na:
        return envelope(
            e, scale, status="not_run", runs=runs, finished=finished, outcome=Outcome(results={}, notes=[str(na)])
        )
    # a measure/judge entry knows its own status (seeds measured or brought from its JSON)
    status = outcome.status if (e.measure is not None or ctx.have(runs)) else "partial"
    doc = envelope(e, scale, status=status, runs=runs, finished=finished, outcome=outcome)
    # retrainings the entry did not read, beside the stored runs it read: those found now and those its
    # stored JSON already shows (a difference, once seen, stays part of the entry's history)
    before = (_read(ctx.root / DATA_DIR / f"{e.id}.json") or {}).get("reproducibility") or [] if not scale.quick else []
    seen = [*before, *(d for d in ctx.differences if d not in before)]
    if seen:
        doc["reproducibility"] = seen
        doc["notes"] = [reproducibility_note(d) for d in seen] + doc["notes"]
    return doc


class NotAvailable(Exception):
    """Raised by an analysis whose inputs (e.g. a committed JSON) are absent."""


def _refuse_older_shape(e: Experiment, path: Path, doc) -> None:
    """A stored entry whose results are not in today's shape (attnlab.schemas.ENTRY_RESULTS) is refused:
    the numbers of seeds whose runs are gone come from it, and are never dropped silently."""
    from ..schemas import results_problem

    why = results_problem(e.id, doc.get("results")) if isinstance(doc, dict) else None
    if why is not None:
        raise BookError(f"{path}: results: {why}{_AGAIN.format(e.id)}")


def analyze(e: Experiment, ctx: Context) -> Outcome:
    """measure, then judge the results."""
    if ctx.previous is None:
        prev = ctx.root / DATA_DIR / f"{e.id}.json"
        if prev.is_file() and not ctx.scale.quick:
            doc = read_json(prev, error=BookError, hint=_AGAIN.format(e.id))
            _refuse_older_shape(e, prev, doc)
            if isinstance(doc, dict) and doc.get("scale", {}).get("quick") is False:
                ctx.previous = doc.get("results") or None
    outcome = e.measure(ctx)
    # a judgement at a new seed count is a look: the claims keep the looks their stored JSON records
    stored = _read(ctx.root / DATA_DIR / f"{e.id}.json") if not ctx.scale.quick else None
    earlier = (stored or {}).get("claims") if (stored or {}).get("scale", {}).get("quick") is False else None
    outcome.claims = record_looks(e.judge(judge_input(e, ctx.root, outcome.results)), earlier)
    return outcome


def judged_now(registry: Sequence[Experiment], data: Path) -> list[tuple[Experiment, dict]]:
    """(entry, claim) for every claim of the entries in ``data``/lab_book judged again now from their
    committed results (nothing is written; entries not run are left out)."""
    data = Path(data)
    docs = read_entries(registry, data)
    out = []
    for e in registry:
        doc = docs.get(e.id)
        if doc is None or doc.get("status") == "not_run" or not doc.get("results") or e.judge is None:
            continue
        out += [(e, c) for c in e.judge(judge_input(e, data.resolve().parent, doc["results"], data))]
    return out


def judge_input(e: Experiment, root: Path, results: dict, data: Path | None = None) -> dict:
    """What ``e.judge`` reads: its results, or, for an entry that brings in a committed result
    (``source``, e.g. the case's data/ch1_case.json, checked by its schema), ``{"source": that whole document, "results":
    its results}``: the document from ``data`` when given (the folder ``attnlab report --data``
    judges), else from ``root``, else the repository's."""
    if e.source is None:
        return results
    from ..corpus import REPO_ROOT

    if data is not None:
        places = [Path(data) / Path(e.source).relative_to("data")]
    else:
        places = [Path(root) / e.source, REPO_ROOT / e.source]
    for p in places:
        if p.exists() or p.is_symlink():
            from ..schemas import load

            kind = COMMITTED_KINDS.get(p.name)  # checked against its schema before the judge reads it
            doc = (
                load(kind, p, error=BookError) if kind else read_json(p, error=BookError, hint=f"; rerun `{e.command}`")
            )
            return {"source": doc, "results": results}
    raise NotAvailable(f"{places[0]} not found: run `{e.command}` first")


def rejudge(e: Experiment, doc: dict, root: Path | None = None, data: Path | None = None) -> dict:
    """The entry's JSON with its claims judged again from its results (nothing is measured)."""
    if e.judge is None or doc.get("status") == "not_run" or not doc.get("results"):
        return doc
    try:
        judged = judge_input(e, root or Path("."), doc["results"], data)
    except NotAvailable:
        if data is None or e.source is None:
            raise
        return doc  # a book judged without its source beside it (a quick book's data): kept as stored
    claims = record_looks(e.judge(judged), doc.get("claims"))
    notes = [n for n in doc.get("notes", []) if not n.startswith(("FAIL ", "INCONCLUSIVE "))]
    return {**doc, "claims": claims, "notes": notes + fail_notes(claims, doc["results"], e.why)}


def fail_notes(claims: list[dict], results: dict | None = None, why: dict | None = None) -> list[str]:
    """One note per FAIL (why it fails: the entry's ``why``, else the reason the claim carries) and per
    INCONCLUSIVE (the seeds it needs)."""
    out = []
    for c in claims:
        v = V.verdict_of(c)
        if v == "FAIL":
            text = (why or {}).get(c["id"])
            if callable(text):
                text = text(results or {})
            out.append(
                f"FAIL {c['id']}: {text or _carried_reason(c) or '原因未查明 / not explained yet'} "
                f"(measured {c['measured']}; expected {c['expected']})"
            )
        elif v == "INCONCLUSIVE":
            need = c.get("n_needed")
            out.append(
                f"INCONCLUSIVE {c['id']}: "
                + (
                    f"需要约 {need} 个种子 / needs about {need} seeds (now {c.get('n')})"
                    if need
                    else f"再多种子也定不下来 / more seeds will not settle it (now {c.get('n')})"
                )
                + f" — {c.get('detail', c['expected'])}"
            )
    return out


def _carried_reason(c: dict) -> str | None:
    """The reason a claim brought from a committed result (the case, the failures), labelled."""
    r = c.get("reason")
    return f"{V.REASON_LABELS.get(r['category'], r['category'])}: {r['text']}" if isinstance(r, dict) else None


def envelope(e: Experiment, scale: Scale, *, status: str, runs: list[Run], finished: dict, outcome: Outcome) -> dict:
    """The common result envelope of every lab-book experiment."""
    import torch

    notes = list(outcome.notes) + fail_notes(outcome.claims, outcome.results, e.why)
    return {
        "kind": KIND,
        "id": e.id,
        "section": e.section,
        "title": e.title,
        "statement": e.statement,
        "command": e.command,
        "status": status,
        "prediction": e.prediction,
        "scale": {"quick": scale.quick, "steps": scale.steps, "seeds": scale.seeds},
        "provenance": provenance(),
        "environment": environment(torch.device("cpu")),
        "runs": [
            {
                "name": r.name,
                "group": r.group,
                "done": r.name in finished,
                "status": finished[r.name].status if r.name in finished else "missing",
            }
            for r in runs
        ],
        "results": outcome.results,
        "claims": outcome.claims,
        "figures": outcome.figures,
        "notes": notes,
    }


# ------------------------------------------------------------------------------ index
def build_index(
    experiments: Sequence[Experiment], root: Path, scale: Scale | None = None, docs: dict[str, dict] | None = None
) -> dict:
    """data/lab_book.json from the experiments' JSON (``docs``, else read from disk under ``root``),
    sections in the chapter's order."""

    import torch

    if docs is None:
        docs = read_entries(experiments, Path(root) / "data")
    sections: dict[str, dict] = {}
    for e in sorted(experiments, key=lambda x: x.key()):
        s = sections.setdefault(e.section, {"section": e.section, "title": e.title, "experiments": [], "claims": []})
        s["experiments"].append(e.id)
        s["claims"] += docs.get(e.id, {}).get("claims", [])
    secs = list(sections.values())
    held = iter(V.with_holm([c for s in secs for c in s["claims"]]))  # Holm within each family of the book
    for s in secs:
        s["claims"] = [next(held) for _ in s["claims"]]
        verdicts = [V.verdict_of(c) for c in s["claims"]]
        s["pass"] = verdicts.count("PASS")
        s["fail"] = verdicts.count("FAIL")
        s["inconclusive"] = verdicts.count("INCONCLUSIVE")
    status = {e.id: docs.get(e.id, {}).get("status", "not_run") for e in experiments}
    claims = [c for s in secs for c in s["claims"]]
    return {
        "kind": "lab_book",
        "summary": {
            "experiments": len(experiments),
            "done": sum(v == "done" for v in status.values()),
            "partial": sum(v == "partial" for v in status.values()),
            "not_run": sum(v == "not_run" for v in status.values()),
            "claims": len(claims),
            "pass": sum(V.verdict_of(c) == "PASS" for c in claims),
            "fail": sum(V.verdict_of(c) == "FAIL" for c in claims),
            "inconclusive": sum(V.verdict_of(c) == "INCONCLUSIVE" for c in claims),
            "book_claims": sum(c.get("kind", "book") == "book" for c in claims),  # no kind: a book claim
            "sanity_claims": sum(c.get("kind") == "sanity" for c in claims),
            "verdicts": V.counts(claims),
            "count_line": V.count_line(claims),
        },
        "status": status,
        "entries": {
            e.id: {
                "section": e.section,
                "title": e.title,
                "statement": e.statement,
                "command": e.command,
                "prediction": e.prediction,
            }
            for e in experiments
        },
        "sections": secs,
        "scale": ({"quick": scale.quick, "steps": scale.steps, "seeds": scale.seeds} if scale else None),
        "environment": environment(torch.device("cpu")),
        **provenance(),
    }
