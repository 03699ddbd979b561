"""`attnlab report` judges every lab-book entry again from its JSON alone: an edit of the stored
per-seed numbers changes exactly the claims that read them, and nothing is trained or loaded."""

import json
import shutil

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
