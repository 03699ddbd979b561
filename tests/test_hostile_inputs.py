"""The second round of hostile inputs (issue 24 items 6, 7, 9, 10 and 14): refused at the door.

One table, as in ``tests/test_bad_inputs.py``: each row is a command line (files prepared by
the ``hostile`` fixture) and a phrase the one-line message must contain. Every row must end
the same way: exit status 2, exactly one line on stderr starting ``attnlab: error:`` that does
not end in a colon, no traceback, within a time bound, and nothing written where the command
would have written. The rows are sizes the command would build or allocate (a model from
``--set`` or from a checkpoint's config, eval batches, steps, sweep grids, a corpus, nested
JSON), values the validators used to accept and then crash on, and inputs that used to
produce silent nonsense.

``scripts/hostile_probe.py`` runs the same table (and the one of test_bad_inputs.py) in
subprocesses with a timeout and a memory limit, to count tracebacks and hangs on any
version of the code.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import socket
import time
import warnings
from pathlib import Path

import pytest
import torch

from attnlab.cli import main
from conftest import set_args

REPO = Path(__file__).resolve().parents[1]
SMALL = set_args(max_steps=2, eval_batches=1)
POEMS = "春眠不覺曉，處處聞啼鳥。\n夜來風雨聲，花落知多少。\n" * 10
TIME_BOUND_S = 30  # a refusal comes before any work: seconds, never minutes


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def prepare(d: Path) -> dict:
    """Every file the rows name, under ``d``; returns the placeholders of the table."""
    corpus = d / "c.txt"
    corpus.write_text(POEMS, encoding="utf-8")
    run = d / "run"
    assert main(["train", "--corpus", str(corpus), "--out", str(run), "--no-progress", *SMALL]) == 0
    payload = torch.load(run / "ckpt.pt", weights_only=True)

    def edited(name: str, **change) -> str:
        bad = dict(payload, config={**payload["config"], **change})
        (d / name).mkdir()
        torch.save(bad, d / name / "ckpt.pt")
        return str(d / name / "ckpt.pt")

    torch.save(payload["model"], d / "bare.pt")
    with open(d / "big.txt", "wb") as f:  # a sparse 1 GB corpus: costs no disk, reads as 1 GB
        f.truncate(2**30)
    (d / "deep.json").write_text(_deep(100_000))
    src = d / "deep_src"
    src.mkdir()
    for name in ("poet.tang.0.json", "poet.tang.1000.json", "poet.tang.2000.json", "poet.tang.3000.json"):
        (src / name).write_text(_deep(100_000))

    # lab books: a committed one, damaged in each way the probe found
    def book_root(name: str, text: str | None = None, damage_entry: bool = False) -> str:
        root = d / name / "data"
        root.mkdir(parents=True)
        if text is None:
            shutil.copy(REPO / "data" / "lab_book.json", root / "lab_book.json")
        else:
            (root / "lab_book.json").write_text(text)
        if damage_entry:
            (root / "lab_book").mkdir()
            good = (REPO / "data" / "lab_book" / "markov.json").read_text(encoding="utf-8")
            (root / "lab_book" / "markov.json").write_text(good[: len(good) // 2])
        return str(d / name)

    blocker = d / "blocker"
    blocker.write_text("a file where a folder should be")
    good_book = (REPO / "data" / "lab_book.json").read_text(encoding="utf-8")
    case_root = d / "case_root" / "data"
    case_root.mkdir(parents=True)
    shutil.copy(REPO / "data" / "ch1_case.json", case_root / "ch1_case.json")
    (case_root / "lab_book.json").write_text(good_book[:1000])

    # round three: timing records, stored claims, SLURM configs and run folders of the wrong shape
    def entry_root(name: str, eid: str, change=None, text: str | None = None) -> str:
        folder = d / name / "data" / "lab_book"
        folder.mkdir(parents=True)
        if text is not None:
            (folder / f"{eid}.json").write_text(text)
        else:
            doc = json.loads((REPO / "data" / "lab_book" / f"{eid}.json").read_text(encoding="utf-8"))
            change(doc)
            (folder / f"{eid}.json").write_text(json.dumps(doc, allow_nan=True))
        return str(d / name)

    def first_open(doc: dict) -> dict:  # the first claim --decide would plan seeds for
        return next(c for c in doc["claims"] if c.get("verdict") == "INCONCLUSIVE" and c.get("n_needed"))

    (d / "rec_fifo" / "data" / "lab_book").mkdir(parents=True)
    os.mkfifo(d / "rec_fifo" / "data" / "lab_book" / "exercise1.json")
    os.mkfifo(d / "fifo.toml")
    for name, text in [
        ("inf.toml", "mem_gb = inf\n"),
        ("par.toml", "parallelism = 1000000000000000000\n"),
        ("time.toml", 'time = "' + "9" * 5000 + '"\n'),
        ("extra.toml", 'extra = "abc"\n'),
    ]:
        (d / name).write_text(text)
    shutil.copytree(run, d / "ckdir")  # a run whose ckpt.pt is a folder
    (d / "ckdir" / "ckpt.pt").unlink()
    (d / "ckdir" / "ckpt.pt").mkdir()
    shutil.copytree(run, d / "sched")  # a run whose checkpoint holds an impossible schedule
    torch.save(
        dict(payload, schedule=[{"from_step": 7, "max_steps": 999_999}, {"from_step": 2, "max_steps": 3}]),
        d / "sched" / "ckpt.pt",
    )
    # round four: the claims registry and the run store checked inside, not only their top level
    registry = json.loads((REPO / "data" / "claims_registry.json").read_text(encoding="utf-8"))

    def damaged_registry(name: str, change) -> str:
        doc = json.loads(json.dumps(registry))
        change(doc["claims"]["ablate_clipping_idle"])
        (d / name).write_text(json.dumps(doc), encoding="utf-8")
        return str(d / name)

    store = json.loads((REPO / "data" / "run_store.json").read_text(encoding="utf-8"))

    def store_root(name: str, change) -> str:
        (d / name / "data").mkdir(parents=True)
        (d / name / "data" / "run_store.json").write_text(json.dumps(change(dict(store))), encoding="utf-8")
        return str(d / name)

    with socket.socket() as s:  # a free port, so that serve reaches the checkpoint
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return {
        "d": str(d),
        "port": str(port),
        "corpus": str(corpus),
        "ckpt": str(run / "ckpt.pt"),
        "wide": edited("wide", d_model=2**20),
        "tall": edited("tall", n_layer=200_000),
        "mismatch": edited("mismatch", vocab_size=50),
        "bare": str(d / "bare.pt"),
        "big": str(d / "big.txt"),
        "deep": str(d / "deep.json"),
        "deep_src": str(src),
        "book_trunc": book_root("book_trunc", good_book[: len(good_book) // 2]),
        "book_list": book_root("book_list", "[]"),
        "book_obj": book_root("book_obj", "{}"),
        "book_deep": book_root("book_deep", _deep(100_000)),
        "book_entry": book_root("book_entry", damage_entry=True),
        "case_json": str(case_root / "ch1_case.json"),
        "rec_fifo": str(d / "rec_fifo"),
        "rec_list": entry_root("rec_list", "exercise1", lambda e: e.__setitem__("timings", [1, 2])),
        "rec_bool": entry_root("rec_bool", "exercise1", lambda e: e["timings"].__setitem__("compute_s", True)),
        "rec_str": entry_root("rec_str", "exercise1", lambda e: e["timings"].__setitem__("compute_s", "abc")),
        "rec_scale": entry_root("rec_scale", "exercise1", lambda e: e.__setitem__("scale", "quick")),
        "rec_nan": entry_root("rec_nan", "exercise1", lambda e: e["timings"].__setitem__("compute_s", float("nan"))),
        "rec_neg": entry_root("rec_neg", "exercise1", lambda e: e["timings"].__setitem__("compute_s", -100.0)),
        "rec_deep": entry_root("rec_deep", "exercise1", text=_deep(100_000)),
        "dec_str": entry_root("dec_str", "exercise1", lambda e: e.__setitem__("claims", "abc")),
        "dec_elem": entry_root("dec_elem", "exercise1", lambda e: e["claims"].__setitem__(0, "abc")),
        "dec_seeds": entry_root("dec_seeds", "exercise1", lambda e: first_open(e).__setitem__("seeds", ["a"])),
        "dec_n": entry_root("dec_n", "exercise1", lambda e: first_open(e).__setitem__("n", "x")),
        "dec_neg": entry_root("dec_neg", "exercise1", lambda e: first_open(e).__setitem__("n_needed", -5)),
        "reg_int": damaged_registry("reg_int.json", lambda e: e.__setitem__("amendments", [1, 2])),
        "reg_spec": damaged_registry("reg_spec.json", lambda e: e.update(spec="abc", amendments=[])),
        "store_list": store_root("store_list", lambda s: {**s, "runs": list(s["runs"])}),
        "store_str": store_root("store_str", lambda s: {**s, "runs": {k: "abc" for k in s["runs"]}}),
        "store_diff": store_root("store_diff", lambda s: {**s, "differences": [1, 2]}),
        "rec_huge": entry_root(
            "rec_huge", "exercise1", lambda e: e["timings"].update(timed_runs=10**300, compute_s=1.0, per_run={})
        ),
        "repo_data": str(REPO / "data"),
        "blocker": str(blocker),
        "long": str(d / ("a" * 300)),
        "longer": str(d / "/".join(["b" * 200] * 25)),
        **site_outs(d),
    }


def site_outs(d: Path) -> dict:
    """Folders `site --out` must refuse (issue 40 item 1): each holds something the site did not write."""
    mark_name = ".attnlab-site.json"
    made = {}
    for key, mark in (("site_empty_mark", ""), ("site_garbage_mark", "garbage"), ("site_mark_dir", None)):
        folder = d / key
        folder.mkdir()
        (folder / "notes.txt").write_text("keep me")
        if mark is None:
            (folder / mark_name).mkdir()
        else:
            (folder / mark_name).write_text(mark)
        made[key] = str(folder)
    for key in ("site_plus_git", "site_edited"):  # an earlier site (its mark lists index.html) ...
        folder = d / key
        folder.mkdir()
        page = b"<p>site</p>"
        (folder / "index.html").write_bytes(page)
        files = {"index.html": {"bytes": len(page), "sha256": hashlib.sha256(page).hexdigest()}}
        mark = {"format": "attnlab-site-v2", "generator": "attnlab site", "attnlab": "0", "runs": [], "files": files}
        (folder / mark_name).write_text(json.dumps(mark))
        made[key] = str(folder)
    (d / "site_plus_git" / ".git").write_text("gitdir: /elsewhere/.git/worktrees/pages\n")  # ... plus a worktree's
    (d / "site_plus_git" / "CNAME").write_text("attention.example.org\n")
    (d / "site_edited" / "index.html").write_text("<p>my class's site</p>")  # ... edited since
    return made


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return prepare(tmp_path_factory.mktemp("hostile"))


def _grid(n: int) -> str:
    return ",".join(f"{1e-4 * (i + 1):.6g}" for i in range(n))


def cases() -> list[tuple[str, list[str], str]]:
    """(id, argv with {placeholders}, phrase in the message)."""
    t = ["train", "--corpus", "{corpus}", "--no-progress", "--out", "{d}/new", *SMALL]
    sw = ["sweep", "--corpus", "{corpus}", "--out", "{d}/sw", "--executor", "serial", *SMALL]
    sl = ["book", "--plan", "--executor", "slurm"]
    cl = ["claims", "--data", "{repo_data}"]
    bk = ["book", "--no-train", "--only", "markov", "--out"]

    def tr(out: str) -> list[str]:
        return ["train", "--corpus", "{corpus}", "--no-progress", "--out", out, *SMALL]

    big = str(10**12)
    return [
        # sizes a command would build or allocate (item 6 and 3)
        ("train max_steps=10**12", t + ["--set", f"max_steps={big}"], "max_steps"),
        ("train eval_batches=10**9", t + ["--set", "eval_batches=1000000000"], "eval_batches"),
        ("train n_layer=10**6", t + ["--set", "n_layer=1000000"], "n_layer"),
        ("train vocab_size=10**12", t + ["--set", f"vocab_size={big}"], "vocab_size"),
        ("train d_model=2**20", t + ["--set", f"d_model={2**20}"], "d_model"),
        ("case --steps 10**12", ["case", "--quick", "--steps", big, "--out", "{d}/case"], "--steps"),
        ("sweep --steps 10**12", sw + ["--steps", big], "--steps"),
        ("ablate --steps 10**12", ["ablate", "--steps", big, "--out", "{d}/rep/a.json"], "--steps"),
        ("failures --steps 10**12", ["failures", "--steps", big, "--out", "{d}/rep/f.json"], "--steps"),
        ("sweep grid too big for memory", sw + ["--grid", f"d_model=16,{2**20}"], "d_model=1048576"),
        (
            "failures --set too big for memory",
            ["failures", "--set", f"d_model={2**20}", "--out", "{d}/rep/f.json"],
            "GB",
        ),
        (
            "ablate --set too big for memory",
            ["ablate", "--set", f"block_size={2**20}", "--out", "{d}/rep/a.json"],
            "GB",
        ),
        (
            "heads --dynamics too big for memory",
            ["heads", "--dynamics", "--set", f"d_model={2**20}", "--ckpt-dir", "{d}/dyn"],
            "GB",
        ),
        (
            "heads --dynamics --steps 10**12",
            ["heads", "--dynamics", "--steps", big, "--ckpt-dir", "{d}/dyn"],
            "--steps",
        ),
        ("info n_layer=10**6", ["info", "--set", "n_layer=1000000"], "n_layer"),
        ("info d_model=10**21", ["info", "--set", f"d_model={10**21}"], "d_model"),
        ("train 1 GB corpus", ["train", "--corpus", "{big}", "--out", "{d}/new", *SMALL], "MB"),
        ("corpus-stats 1 GB corpus", ["corpus-stats", "--corpus", "{big}"], "MB"),
        ("sweep 10**6 trials", sw + ["--grid", "lr=" + _grid(1000), "--grid", "warmup=" + _grid(1000)], "trials"),
        ("generate checkpoint d_model=2**20", ["generate", "{wide}"], "d_model"),
        ("generate checkpoint n_layer=200000", ["generate", "{tall}"], "n_layer"),
        ("serve --checkpoint d_model=2**20", ["serve", "--checkpoint", "{wide}", "--port", "{port}"], "d_model"),
        (
            "heads bare.pt d_model=131072",
            ["heads", "{bare}", "--corpus", "{corpus}", "--set", "d_model=131072", "--out", "{d}/h.json"],
            "d_model",
        ),
        # damaged JSON (item 7)
        ("book --render truncated", ["book", "--render", "--out", "{book_trunc}"], "lab_book.json"),
        ("book --render []", ["book", "--render", "--out", "{book_list}"], "lab_book.json"),
        ("book --render {}", ["book", "--render", "--out", "{book_obj}"], "lab_book.json"),
        ("book --render deep", ["book", "--render", "--out", "{book_deep}"], "nested"),
        ("book --render one truncated entry", ["book", "--render", "--out", "{book_entry}"], "markov.json"),
        ("report corrupt lab_book.json beside", ["report", "{case_json}"], "lab_book.json"),
        ("report deep", ["report", "{deep}", "--out", "{d}/rep"], "nested"),
        ("heads --rejudge deep", ["heads", "--rejudge", "{deep}"], "nested"),
        ("failures --rejudge deep", ["failures", "--rejudge", "--out", "{deep}", "--report", "{d}/rep/f.md"], "nested"),
        ("build-corpus deep", ["build-corpus", "--source", "{deep_src}", "--out", "{d}/bc.txt"], "nested"),
        # values the validators accepted, then crashed on (item 9)
        ("generate --temperature 1e-300", ["generate", "{ckpt}", "--temperature", "1e-300"], "--temperature"),
        ("train lr=1e308", t + ["--set", "lr=1e308"], "lr"),
        ("bench executors --threads -1", ["bench", "executors", "--threads", "-1"], "--threads"),
        ("memory attention --n 10**200", ["memory", "attention", "--n", str(10**200)], "--n"),
        ("memory kv-cache --batch 10**200", ["memory", "kv-cache", "--batch", str(10**200)], "--batch"),
        # silent nonsense (item 10) and a suggestion (issue 26 item 10)
        ("train --out ''", ["train", "--corpus", "{corpus}", "--out", "", *SMALL], "--out"),
        ("sweep --out ''", ["sweep", "--out", ""], "--out"),
        ("case --out ''", ["case", "--quick", "--out", ""], "--out"),
        (
            "failures --variants ''",
            ["failures", "--variants", "", "--corpus", "{corpus}", "--out", "{d}/rep/f.json", *SMALL],
            "--variants",
        ),
        ("failures --variants nope", ["failures", "--variants", "nope", "--out", "{d}/rep/f.json"], "nope"),
        ("sweep grid path escape", sw + ["--grid", "probe=x/../../escaped"], "probe"),
        ("sweep repeated grid key", sw + ["--grid", "lr=0.1", "--grid", "lr=0.2"], "lr"),
        ("sweep repeated grid value", sw + ["--grid", "lr=0.1,0.1"], "0.1"),
        ("--set max_step suggests", t + ["--set", "max_step=5"], "did you mean 'max_steps'"),
        # messages that named the wrong problem (item 12), refused before the work
        ("failures --out a folder", ["failures", "--corpus", "{corpus}", "--out", "{d}", *SMALL], "is a folder"),
        ("ablate --out a folder", ["ablate", "--corpus", "{corpus}", "--out", "{d}", *SMALL], "is a folder"),
        ("heads --out a folder", ["heads", "{ckpt}", "--no-ablate", "--out", "{d}"], "is a folder"),
        ("build-corpus --out a folder", ["build-corpus", "--source", "{deep_src}", "--out", "{d}"], "is a folder"),
        ("bench --json a folder", ["bench", "attention", "--n", "8", "--json", "{d}", "--figure", ""], "is a folder"),
        ("generate state_dict mismatch", ["generate", "{mismatch}"], "in the checkpoint"),
        (
            "heads bare.pt of another shape",
            ["heads", "{bare}", "--corpus", "{corpus}", "--set", "n_layer=2"],
            "missing",
        ),
        # round three (issue 34 items 3 and 5): plans, --decide and SLURM options read at the door
        ("book --plan FIFO record", ["book", "--plan", "--out", "{rec_fifo}"], "is a FIFO"),
        ("case --plan FIFO record", ["case", "--plan", "--out", "{rec_fifo}"], "is a FIFO"),
        ("book --plan record timings a list", ["book", "--plan", "--out", "{rec_list}"], "timings is list"),
        ("book --plan record compute_s a boolean", ["book", "--plan", "--out", "{rec_bool}"], "is a boolean"),
        ("book --plan record compute_s a string", ["book", "--plan", "--out", "{rec_str}"], "compute_s is str"),
        ("book --plan record scale a string", ["book", "--plan", "--out", "{rec_scale}"], "scale is str"),
        ("book --plan record NaN", ["book", "--plan", "--out", "{rec_nan}"], "NaN or infinite"),
        ("book --plan record negative", ["book", "--plan", "--out", "{rec_neg}"], "compute_s: -100.0"),
        ("case --plan record deep", ["case", "--plan", "--out", "{rec_deep}"], "nested"),
        ("book --decide claims a string", ["book", "--decide", "--dry-run", "--out", "{dec_str}"], "claims is str"),
        ("book --decide claim a string", ["book", "--decide", "--dry-run", "--out", "{dec_elem}"], "claims[0] is str"),
        ("book --decide seeds ['a']", ["book", "--decide", "--dry-run", "--out", "{dec_seeds}"], "seeds[0] is str"),
        ("book --decide n 'x'", ["book", "--decide", "--dry-run", "--out", "{dec_n}"], ".n is str"),
        ("book --decide n_needed -5", ["book", "--decide", "--dry-run", "--out", "{dec_neg}"], "n_needed: -5"),
        ("book --budget ''", ["book", "--decide", "--dry-run", "--budget", "", "--out", "{dec_neg}"], "--budget"),
        ("book --budget 400 digits", ["book", "--decide", "--dry-run", "--budget", "9" * 400], "--budget"),
        ("--slurm-config deep", sl + ["--slurm-config", "{deep}"], "nested"),
        ("--slurm-config /dev/zero", sl + ["--slurm-config", "/dev/zero"], "is a device"),
        ("--slurm-config FIFO", sl + ["--slurm-config", "{d}/fifo.toml"], "is a FIFO"),
        ("--slurm-config mem_gb inf", sl + ["--slurm-config", "{d}/inf.toml"], "mem_gb: inf"),
        ("--slurm-config parallelism 10**18", sl + ["--slurm-config", "{d}/par.toml"], "parallelism"),
        ("--slurm-config time of 5000 digits", sl + ["--slurm-config", "{d}/time.toml"], "--slurm-time"),
        ("--slurm-config extra a string", sl + ["--slurm-config", "{d}/extra.toml"], "extra is str"),
        ("--slurm-time of 5000 digits", sl + ["--slurm-time", "9" * 5000], "--slurm-time"),
        ("--slurm-parallelism 10**18", sl + ["--slurm-parallelism", str(10**18)], "parallelism"),
        (
            "case --plan --slurm-parallelism 10**18",
            ["case", "--plan", "--executor", "slurm", "--slurm-parallelism", str(10**18)],
            "parallelism",
        ),
        # round four (issue 40 items 4, 5): the registry and the run store inside, a Ray cluster not there
        ("claims --check amendments integers", [*cl, "--check", "--registry", "{reg_int}"], "amendments[0] is int"),
        (
            "claims --amend amendments integers",
            [*cl, "--amend", "ablate_clipping_idle", "--why", "x", "--registry", "{reg_int}"],
            "amendments[0] is int",
        ),
        (
            "claims --check spec a string",
            [*cl, "--check", "--registry", "{reg_spec}"],
            "ablate_clipping_idle.spec is str",
        ),
        (
            "claims --amend spec a string",
            [*cl, "--amend", "ablate_clipping_idle", "--why", "x", "--registry", "{reg_spec}"],
            "ablate_clipping_idle.spec is str",
        ),
        ("book run store runs a list", [*bk, "{store_list}"], "run_store.json: runs is list"),
        ("book run store values strings", [*bk, "{store_str}"], "is str ('abc'), not a mapping"),
        ("book run store differences numbers", [*bk, "{store_diff}"], "differences[0] is int"),
        ("book --plan record timed_runs 301 digits", ["book", "--plan", "--out", "{rec_huge}"], "timed_runs"),
        (
            "book --plan ray at a closed port",
            ["book", "--plan", "--executor", "ray", "--ray-address", "127.0.0.1:1"],
            "cannot reach a Ray cluster at 127.0.0.1:1",
        ),
        # path errors: one line, exit 2 (a name or path too long, a file where a folder is expected)
        ("train --out name too long", tr("{long}"), "File name too long"),
        ("train --out path too long", tr("{longer}"), "File name too long"),
        ("train --corpus name too long", ["train", "--corpus", "{long}.txt", "--out", "{d}/new"], "too long"),
        ("heads --out name too long", ["heads", "{ckpt}", "--no-ablate", "--out", "{long}.json"], "too long"),
        ("generate checkpoint name too long", ["generate", "{long}.pt"], "too long"),
        ("ablate --out name too long", ["ablate", "--out", "{long}.json", "--steps", "1"], "too long"),
        ("failures --out name too long", ["failures", "--out", "{long}.json", "--steps", "1"], "too long"),
        (
            "bench --json name too long",
            ["bench", "attention", "--n", "8", "--json", "{long}.json", "--figure", ""],
            "too long",
        ),
        ("build-corpus --out name too long", ["build-corpus", "--out", "{long}.txt"], "too long"),
        ("corpus-stats --corpus name too long", ["corpus-stats", "--corpus", "{long}.txt"], "too long"),
        ("report JSON name too long", ["report", "{long}.json"], "too long"),
        ("report --data name too long", ["report", "--data", "{long}"], "too long"),
        ("report --data a file", ["report", "--data", "{blocker}"], "is not a folder"),
        ("heads --rejudge under a file", ["heads", "--rejudge", "{blocker}/h.json"], "Not a directory"),
        # run folders and typed text
        ("train --resume ckpt.pt a folder", tr("{d}/ckdir") + ["--resume"], "not a checkpoint file"),
        ("train --resume impossible schedule", tr("{d}/sched") + ["--resume"], "'schedule' starts at"),
        ("generate --prompt not UTF-8", ["generate", "{ckpt}", "--prompt", "\udcff\udcfe"], "not UTF-8"),
        ("train --set probe= not UTF-8", t + ["--set", "probe=\udcff"], "not UTF-8"),
        ("heads --text not UTF-8", ["heads", "{ckpt}", "--no-ablate", "--text", "春\udcff眠"], "not UTF-8"),
        # round four (issue 40 item 1): site --out replaces only a folder that is provably an earlier site
        ("site --out with an empty mark", ["site", "--out", "{site_empty_mark}"], "(it is empty)"),
        ("site --out with a garbage mark", ["site", "--out", "{site_garbage_mark}"], "not valid JSON"),
        ("site --out with a folder named like the mark", ["site", "--out", "{site_mark_dir}"], "not a file"),
        ("site --out a site plus .git and CNAME", ["site", "--out", "{site_plus_git}"], "(.git, CNAME)"),
        ("site --out an edited site", ["site", "--out", "{site_edited}"], "changed since it was built (index.html)"),
        ("site --out a mount point", ["site", "--out", "/proc"], "is a mount point"),
    ]


CASES = cases()
# never created by a refused command (the module's tmp dir, and the cwd it runs in)
TOUCHED = ("new", "case", "sw", "rep", "bc.txt", "dyn", "escaped", "metrics.jsonl", "runs", "data", "reports")


class TookTooLong(BaseException):
    """Raised by the alarm: a refusal that did not come within TIME_BOUND_S (a hang)."""


def _tree(path: Path) -> dict:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.name != ".attnlab-lock" and p.stat().st_size < 2**24
    }


@pytest.mark.parametrize("case_id, argv, phrase", CASES, ids=[c[0] for c in CASES])
def test_hostile_input_is_refused_at_the_door(hostile, case_id, argv, phrase, capsys, monkeypatch, tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # relative defaults (runs/, data/) and --out "" land here
    argv = [a.format(**hostile) for a in argv]
    d = Path(hostile["d"])
    before = _tree(d)

    def alarm(signum, frame):
        raise TookTooLong(f"{case_id}: no answer within {TIME_BOUND_S} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(TIME_BOUND_S)
    capsys.readouterr()
    t0 = time.monotonic()
    try:
        rc = main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    took = time.monotonic() - t0
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert rc == 2, (rc, out[-500:], err[-500:])
    assert len(lines) == 1, err
    assert lines[0].startswith("attnlab: error: ") and "Traceback" not in err
    assert phrase in lines[0], lines[0]
    assert not lines[0].rstrip().endswith(":"), lines[0]
    assert took < TIME_BOUND_S
    assert _tree(d) == before, "a refused command changed a file"
    for name in TOUCHED:
        assert not (d / name).exists(), f"a refused command created {name}"
        assert not (cwd / name).exists(), f"a refused command created {name} in the current directory"
    assert not (d.parent / "escaped").exists()


def test_set_suggests_the_close_key():
    """``--set max_step`` names ``max_steps`` first (difflib), not only the list of every key."""
    from attnlab.config import Config
    from attnlab.errors import ConfigError

    with pytest.raises(ConfigError, match=r"did you mean 'max_steps'"):
        Config.from_overrides(["max_step=5"])
    with pytest.raises(ConfigError, match=r"did you mean 'n_head'"):
        Config.from_dict({"n_heads": 2})


def test_snapshot_schedule_is_lazy():
    """The schedule answers membership and its length without a list sized by max_steps."""
    import tracemalloc

    from attnlab.config import Config
    from attnlab.snapshots import snapshot_steps

    cfg = Config(max_steps=10**6, snapshot_every=25, snapshot_dense=20)
    tracemalloc.start()
    t0 = time.monotonic()
    steps = snapshot_steps(cfg)
    n = len(steps)
    member = [s in steps for s in (0, 19, 20, 21, 25, 26, 999_975, 999_999, 10**6, 10**6 + 1)]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.monotonic() - t0 < 0.5 and peak < 100_000
    assert n == 20 + (10**6 // 25 - 0) and member == [True, True, False, False, True, False, True, False, True, False]
    small = Config(max_steps=30, snapshot_dense=2, snapshot_every=25)
    assert list(snapshot_steps(small)) == [0, 1, 25, 30] and len(snapshot_steps(small)) == 4
    assert list(snapshot_steps(Config(snapshot_every=0))) == []


def test_read_json_bounds_depth_and_size(tmp_path):
    from attnlab.errors import AttnlabError
    from attnlab.io import read_json

    p = tmp_path / "x.json"
    p.write_text(json.dumps({"a": [1, {"b": 2}]}))
    assert read_json(p) == {"a": [1, {"b": 2}]}
    for text, phrase in [
        (_deep(100_000), "nested"),
        (_deep(100), "nested"),
        ('{"a": ', "not valid JSON"),
        ("", "not valid JSON"),
        (b"\xff\xfe".decode("latin-1"), "not valid"),
    ]:
        p.write_text(text, encoding="latin-1" if text.startswith("\xff") else "utf-8")
        with pytest.raises(AttnlabError, match=phrase) as e:
            read_json(p)
        assert str(p) in str(e.value) and not str(e.value).endswith(":")
    p.write_text("[" + "1," * 1000 + "1]")
    with pytest.raises(AttnlabError, match="MB"):
        read_json(p, max_bytes=1000)
    with pytest.raises(AttnlabError, match="not found"):
        read_json(tmp_path / "missing.json")


def test_model_bytes_refuses_before_allocating():
    """The arithmetic count is of the right size (at most 20% above the real count) and the
    check refuses a model larger than this machine."""
    from attnlab.config import Config
    from attnlab.errors import ConfigError
    from attnlab.limits import check_model_fits, model_bytes, param_count
    from attnlab.model import parameter_table

    for cfg in (Config(), Config(d_model=256, n_head=1), Config(n_layer=6, d_model=64), Config(d_model=2**18)):
        real = parameter_table(cfg)["total"]
        assert real <= param_count(cfg) <= 1.2 * real and model_bytes(cfg) > 4 * real
    check_model_fits(Config(), "cpu")
    with pytest.raises(ConfigError, match="d_model=1048576"):
        check_model_fits(Config(d_model=2**20), "cpu")


def test_block_size_1_trains_without_warnings(tmp_path, capfd):
    """block_size=1 used to print 42 lines of torch warnings (std of one element)."""
    argv = ["train", "--corpus", str(tmp_path / "c.txt"), "--out", str(tmp_path / "r"), "--no-progress"]
    (tmp_path / "c.txt").write_text(POEMS, encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(argv + set_args(max_steps=3, eval_batches=1, block_size=1, eval_every=1)) == 0
    out, err = capfd.readouterr()
    assert not caught, [str(w.message) for w in caught]
    assert "Warning" not in err and "warn" not in err.lower(), err


def test_failures_variants_empty_keeps_the_committed_table(tmp_path, monkeypatch, capsys):
    """`failures --variants ""` used to write an empty "0 PASS, 0 FAIL" table over --out."""
    out = tmp_path / "f.json"
    out.write_text('{"kept": true}')
    assert main(["failures", "--variants", " , ", "--out", str(out), "--report", str(tmp_path / "f.md")]) == 2
    assert out.read_text() == '{"kept": true}' and not (tmp_path / "f.md").exists()
    assert "--variants" in capsys.readouterr().err


def test_no_error_message_ends_in_a_colon():
    """Every message raised to the user (``raise SomethingError("...")`` in src/) ends in words,
    never in a colon that promises a detail the line does not give."""
    import ast

    bad = []
    for path in sorted((REPO / "src" / "attnlab").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args):
                continue
            arg = node.exc.args[0]
            while isinstance(arg, ast.BinOp):  # "..." + f"..."
                arg = arg.right
            last = arg.values[-1] if isinstance(arg, ast.JoinedStr) and arg.values else arg
            if isinstance(last, ast.Constant) and isinstance(last.value, str) and last.value.rstrip().endswith(":"):
                bad.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not bad, bad


def test_book_keeps_a_measured_timing(tmp_path):
    """Rerunning `book` keeps an entry measured once (remeasure=False, like §1.14.2's timing) unless
    `--only` names it: the timing flipped PASS -> FAIL when a rerun measured it on a busy CPU."""
    from attnlab.lab import EXPERIMENTS
    from attnlab.lab.labbook import Experiment, Outcome, Scale, run_book
    from attnlab.runner import ExecutorOptions

    timing = next(e for e in EXPERIMENTS if e.id == "timing")
    assert timing.remeasure is False
    calls = []

    def measure(ctx):
        calls.append(1)
        return Outcome(results={"x": len(calls)})

    e = Experiment(
        "probe_timing",
        "§9.9",
        "t",
        "s",
        "attnlab book --only §9.9",
        measure=measure,
        judge=lambda r: [],
        remeasure=False,
    )
    scale = Scale.make(True)
    kw = dict(scale=scale, train=False, options=ExecutorOptions(progress=False), log=lambda m: None, registry=[e])
    run_book([e], POEMS, tmp_path, **kw)
    first = json.loads((tmp_path / "data" / "lab_book" / "probe_timing.json").read_text(encoding="utf-8"))
    run_book([e], POEMS, tmp_path, **kw)
    kept = json.loads((tmp_path / "data" / "lab_book" / "probe_timing.json").read_text(encoding="utf-8"))
    assert len(calls) == 1 and kept["results"] == first["results"] == {"x": 1}
    run_book([e], POEMS, tmp_path, explicit=["probe_timing"], **kw)  # --only: measured again
    assert len(calls) == 2


@pytest.mark.parametrize(
    "code, phrase",
    [
        (errno.ENAMETOOLONG, "give a shorter path"),
        (errno.ENOTDIR, "a file stands where a folder is expected"),
        (errno.EACCES, "check its permissions"),  # root reads anything: simulated
        (errno.EPERM, "check its permissions"),
        (errno.ELOOP, "symbolic links point in a loop"),
        (errno.EROFS, "read-only"),
        (errno.ENOSPC, "free space"),
        (errno.EISDIR, "a folder stands where a file is expected"),
        (errno.EIO, "check the path"),
    ],
)
def test_every_path_error_is_one_line_with_exit_2(code, phrase, capsys, monkeypatch):
    """Wherever a command meets the file system's refusal, the user sees one line naming the path
    (shortened when it is thousands of characters long) and what to do; exit status 2."""
    import attnlab.cli.info as info

    name = "/tmp/" + "x" * 5000 + "/run/ckpt.pt"

    def fails(args):
        raise OSError(code, os.strerror(code), name)

    monkeypatch.setattr(info, "main", fails)
    capsys.readouterr()
    assert main(["info"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnlab: error: cannot ") and phrase in lines[0], lines
    assert "5,0" in lines[0] and len(lines[0]) < 400  # the path shortened, its length said


def test_decide_dry_run_into_a_new_folder_leaves_no_folder(tmp_path, capsys):
    """--decide --dry-run prints a plan and writes nothing: not even the output lock in a new --out."""
    new = tmp_path / "NEW"
    assert main(["book", "--decide", "--dry-run", "--out", str(new)]) == 0
    assert "decide plan" in capsys.readouterr().out and not new.exists()
