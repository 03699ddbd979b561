"""`attnlab report` judges every lab-book entry again from its JSON alone: an edit of the stored
per-seed numbers changes exactly the claims that read them, and nothing is trained or loaded."""

import json
import shutil

import pytest

from attnlab.cli import main
from attnlab.corpus import REPO_ROOT
from attnlab.verdicts import verdict_of


def verdicts(data, eid):
    doc = json.loads((data / "lab_book" / f"{eid}.json").read_text(encoding="utf-8"))
    return {c["id"]: verdict_of(c) for c in doc["claims"]}


def test_an_edit_of_a_lab_book_json_changes_exactly_its_claims(tmp_path):
    shutil.copytree(REPO_ROOT / "data", tmp_path / "data")
    data = tmp_path / "data"
    before = {p.stem: verdicts(data, p.stem) for p in (data / "lab_book").glob("*.json")}
    path = data / "lab_book" / "kv_cache.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    # MQA 0.1 nats worse than MHA on every seed, GQA halfway: the book's ordering, beyond noise
    for i, row in enumerate(doc["results"]["per_seed"].values()):
        row["val_1"] = row["val_4"] + 0.10 + 0.002 * i
        row["val_2"] = row["val_4"] + 0.05 - 0.001 * i
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    assert main(["report", "--data", str(data)]) == 0
    after = {p.stem: verdicts(data, p.stem) for p in (data / "lab_book").glob("*.json")}
    changed = {(e, c) for e in after for c in after[e] if before[e].get(c) != after[e][c]}
    assert changed <= {("kv_cache", "mqa_costs_some_quality"), ("kv_cache", "gqa_small_loss")}
    assert after["kv_cache"]["mqa_costs_some_quality"] == "PASS" and after["kv_cache"]["gqa_small_loss"] == "PASS"
    assert not (tmp_path / "runs").exists()  # judged from JSON alone
    book = json.loads((data / "lab_book.json").read_text(encoding="utf-8"))
    assert book["summary"]["count_line"].startswith("书中论断 / book claims:")
    assert "INCONCLUSIVE" in (tmp_path / "reports" / "lab_book.md").read_text(encoding="utf-8")


def test_a_damaged_lab_book_json_is_named(tmp_path, capsys):
    shutil.copytree(REPO_ROOT / "data", tmp_path / "data")
    path = tmp_path / "data" / "lab_book" / "kv_cache.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    del doc["results"]["ours"]
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["report", "--data", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err
    assert "kv_cache.json cannot be judged" in err and "attnlab book --only §1.8.7" in err


# ------------------------------------------------------------------ report trusts nothing it reads
def _files(root) -> dict:
    import hashlib

    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".attnlab")
    }


def test_report_data_dir_judges_its_own_folder_and_leaves_unchanged_data_alone(tmp_path):
    """--data DIR reads and writes DIR (not DIR/../data), reproduces every committed verdict, and a
    second run on unchanged data writes no file again (no new time stamp in a checkout)."""
    data = tmp_path / "mine"  # not named data: the book used to be looked for in tmp/data
    shutil.copytree(REPO_ROOT / "data", data)
    committed = {p.name: _verdicts_of(p) for p in [data / "ch1_case.json", *(data / "lab_book").glob("*.json")]}
    assert main(["report", "--data", str(data)]) == 0
    assert not (tmp_path / "data").exists()
    for p in [data / "ch1_case.json", *(data / "lab_book").glob("*.json")]:
        assert _verdicts_of(p) == committed[p.name], p.name
    first = _files(tmp_path)
    assert main(["report", "--data", str(data)]) == 0
    again = _files(tmp_path)
    assert set(first) == set(again)
    changed = sorted(k for k in first if first[k][0] != again[k][0])
    assert not changed, changed  # not one byte: a checkout stays clean
    stamped = sorted(k for k in first if k.startswith("mine/") and first[k] != again[k])
    assert not stamped, stamped  # and the data is not even written again


def _verdicts_of(p) -> dict:
    return {c["id"]: verdict_of(c) for c in json.loads(p.read_text(encoding="utf-8"))["claims"]}


def _damage(data, name: str, change) -> None:
    p = data / name
    doc = json.loads(p.read_text(encoding="utf-8"))
    change(doc)
    p.write_text(json.dumps(doc, ensure_ascii=False, allow_nan=True), encoding="utf-8")


def _losses(value: float):
    def change(doc):
        for r in doc["pairs"].values():
            r.update(loss_start=value, loss_end=value, val_loss_end=value)

    return change


def _unjudged_without_kind(doc):
    doc["results"] = {}  # nothing to judge it from: its claims are kept as stored
    for c in doc["claims"]:
        c.pop("kind")


def _gap_bool(doc):
    first = next(iter(doc["results"]["per_seed"].values()))
    for k in [k for k in first if k.endswith("_gap")]:
        first[k] = True


def _fifo(data, name):
    import os

    (data / name).unlink()
    os.mkfifo(data / name)


HOSTILE_DATA = [
    # (id, damage(data folder), phrase in the one line)
    ("entry missing", lambda d: (d / "lab_book" / "markov.json").unlink(), "markov.json is missing but"),
    ("entry a FIFO", lambda d: _fifo(d, "lab_book/markov.json"), "is a FIFO"),
    (
        "index section a string",
        lambda d: _damage(d, "lab_book.json", lambda b: b["sections"].__setitem__(0, "x")),
        "sections[0] is str",
    ),
    (
        "index summary a list",
        lambda d: _damage(d, "lab_book.json", lambda b: b.__setitem__("summary", [1])),
        "summary is list",
    ),
    ("index a FIFO", lambda d: _fifo(d, "lab_book.json"), "is a FIFO"),
    (
        "entry claim a string",
        lambda d: _damage(d, "lab_book/markov.json", lambda b: b["claims"].__setitem__(0, "x")),
        "claims[0] is str",
    ),
    (
        "entry status unknown",
        lambda d: _damage(d, "lab_book/markov.json", lambda b: b.__setitem__("status", "weird")),
        "status: 'weird'",
    ),
    (
        "entry of another id",
        lambda d: _damage(d, "lab_book/markov.json", lambda b: b.__setitem__("id", "sinks")),
        "holds the entry 'sinks'",
    ),
    (
        "entry per-seed number a boolean",
        lambda d: _damage(d, "lab_book/exercise1.json", _gap_bool),
        "a judged value is bool",
    ),
    (
        "case claim a string",
        lambda d: _damage(d, "ch1_case.json", lambda b: b["claims"].__setitem__(0, "x")),
        "claims[0] is str",
    ),
    (
        "case loss a boolean",
        lambda d: _damage(d, "ch1_case.json", lambda b: b["pairs"]["small_scaled"].__setitem__("val_loss_end", True)),
        "pairs.small_scaled.val_loss_end is a boolean",
    ),
    (
        "case loss NaN",
        lambda d: _damage(
            d, "ch1_case.json", lambda b: b["pairs"]["small_scaled"].__setitem__("val_loss_end", float("nan"))
        ),
        "pairs.small_scaled.val_loss_end is NaN or infinite",
    ),
    (
        "case seed gap a boolean",
        lambda d: _damage(d, "ch1_case.json", lambda b: b["seeds"]["runs"][1].__setitem__("gap", True)),
        "seeds.runs[1].gap is a boolean",
    ),
    (
        "case steps negative",
        lambda d: _damage(d, "ch1_case.json", lambda b: b["pairs"]["big_scaled"].__setitem__("steps", -5)),
        "pairs.big_scaled.steps: -5",
    ),
    (
        "case losses -1e308",
        lambda d: _damage(d, "ch1_case.json", _losses(-1e308)),
        "loss_start: -1e+308 should be greater than or equal to 0",
    ),
    (
        "case trace loss negative",
        lambda d: _damage(d, "ch1_case.json", lambda b: b["pairs"]["big_scaled"]["trace"]["loss"].__setitem__(3, -0.5)),
        "pairs.big_scaled.trace.loss[3]: -0.5 should be greater than or equal to 0",
    ),
    (
        "entry kept as stored, its claims without kind",
        lambda d: _damage(d, "lab_book/markov.json", _unjudged_without_kind),
        "markov.json: claim 'bigram_below_unigram' has no 'kind'",
    ),
    (
        "case pair a string",
        lambda d: _damage(d, "ch1_case.json", lambda b: b["pairs"].__setitem__("small_scaled", "x")),
        "pairs.small_scaled is str",
    ),
]


@pytest.mark.parametrize("case_id, damage, phrase", HOSTILE_DATA, ids=[h[0] for h in HOSTILE_DATA])
def test_hostile_data_is_refused_before_anything_is_written(tmp_path, capsys, case_id, damage, phrase):
    """Each used to end in a traceback, a verdict from a boolean or NaN, or a smaller book with exit 0
    (18 -> 17 experiments, 141 -> 137 claims) — some after the case report was written."""
    data = tmp_path / "data"
    shutil.copytree(REPO_ROOT / "data", data)
    damage(data)
    before = _files(tmp_path)
    capsys.readouterr()
    assert main(["report", "--data", str(data)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnlab: error: ") and phrase in lines[0], lines
    assert _files(tmp_path) == before  # nothing written, not even the case's report
    assert not (tmp_path / "reports").exists() and not (tmp_path / "figures").exists()


def test_a_lab_book_without_a_case_beside_it_is_rejudged(tmp_path, capsys):
    """`attnlab report --data DIR` on a book's data alone (lab_book.json and lab_book/, no ch1_case.json,
    as `attnlab book --quick` writes it): the book is judged again, an edit changes its claims, and the
    case entry, whose source is not there, keeps its stored claims."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(REPO_ROOT / "data" / "lab_book.json", data / "lab_book.json")
    shutil.copytree(REPO_ROOT / "data" / "lab_book", data / "lab_book")
    case_before = verdicts(data, "case")
    _damage(
        data,
        "lab_book/kv_cache.json",
        lambda d: [
            row.update(val_1=row["val_4"] + 0.10 + 0.002 * i, val_2=row["val_4"] + 0.05 - 0.001 * i)
            for i, row in enumerate(d["results"]["per_seed"].values())
        ],
    )
    assert main(["report", "--data", str(data)]) == 0
    assert "re-judged alone" in capsys.readouterr().out
    assert not (data / "ch1_case.json").exists() and not (tmp_path / "reports" / "ch1_case.md").exists()
    assert verdicts(data, "kv_cache")["mqa_costs_some_quality"] == "PASS"
    assert verdicts(data, "case") == case_before
    assert (tmp_path / "reports" / "lab_book.html").is_file()


def test_an_explicit_case_json_that_is_missing_is_still_refused(tmp_path, capsys):
    data = tmp_path / "data"
    shutil.copytree(REPO_ROOT / "data" / "lab_book", data / "lab_book")
    assert main(["report", str(data / "ch1_case.json")]) == 2
    assert "case results not found" in capsys.readouterr().err


def test_a_document_that_would_be_written_with_nan_is_refused_before_the_first_write(tmp_path, capsys, monkeypatch):
    """The JSON a report is about to write is checked against its schema first: a judgement that came
    out NaN (a p-value of impossible numbers) is refused naming the file, and nothing is written."""
    import attnlab.lab.labbook as labbook

    data = tmp_path / "data"
    shutil.copytree(REPO_ROOT / "data", data)
    real = labbook.rejudged_book

    def nan_p(*a, **kw):
        book, changed = real(*a, **kw)
        doc = json.loads((data / "lab_book" / "markov.json").read_text(encoding="utf-8"))
        doc["claims"][0]["p"] = float("nan")
        return book, {**changed, data / "lab_book" / "markov.json": doc}

    monkeypatch.setattr(labbook, "rejudged_book", nan_p)
    before = _files(tmp_path)
    capsys.readouterr()
    assert main(["report", "--data", str(data)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "markov.json: claims[0].p: nan should be a finite number" in lines[0], lines
    assert _files(tmp_path) == before and not (tmp_path / "reports").exists()
