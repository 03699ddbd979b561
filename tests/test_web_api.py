"""The playground's HTTP API: validation, error messages, no paths from requests.

Uses a real (3-step, 1-layer) checkpoint so the JSON the pages read is the
JSON the model produces.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import torch

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from attnlab.errors import CheckpointError  # noqa: E402
from attnlab.web import server  # noqa: E402
from attnlab.web.server import MAX_BODY_BYTES, create_app  # noqa: E402

LOCAL = "http://127.0.0.1"  # the server answers only its own Host (DNS-rebinding guard)

STATIC = Path(server.__file__).parent / "static"
TEXT = "床前明月光，疑是地上霜。举头望明月，低头思故乡。\n" * 30


def tiny_case(path: Path) -> Path:
    trace = {
        "step": [0, 10, 20],
        "loss": [7.0, 5.0, 4.2],
        "layers": [
            {"weight_entropy": [0.99, 0.5, 0.1], "jacobian_fro": [0.3, 0.1, 0.001], "logit_std": [1.0, 10.0, 100.0]}
        ],
    }
    pairs = {
        k: {"loss_start": 7.0, "loss_end": 4.2, "val_loss_end": 4.3, "trace": trace}
        for k in ("small_unscaled", "small_scaled", "big_unscaled", "big_scaled")
    }
    path.write_text(json.dumps({"pairs": pairs}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """runs/tiny with a trained checkpoint and metrics.jsonl, plus a case JSON."""
    from attnlab import Config, train

    root = tmp_path_factory.mktemp("lab")
    runs = root / "runs"
    cfg = Config(n_layer=1, n_head=2, d_model=16, block_size=16, vocab_size=40, max_steps=3, batch_size=4, device="cpu")
    train(TEXT, cfg, out_dir=runs / "tiny")
    (runs / "empty-dir").mkdir()  # no metrics.jsonl: not a run
    return {"root": root, "runs": runs, "ckpt": runs / "tiny" / "ckpt.pt", "case": tiny_case(root / "case.json")}


@pytest.fixture(scope="module")
def client(lab):
    return TestClient(
        base_url=LOCAL, app=create_app(str(lab["ckpt"]), runs_dir=str(lab["runs"]), case_json=str(lab["case"]))
    )


@pytest.fixture(scope="module")
def bare():
    return TestClient(
        base_url=LOCAL, app=create_app(None, runs_dir="/nonexistent/runs", case_json="/nonexistent/case.json")
    )


# ------------------------------------------------------------------ pages, assets
@pytest.mark.parametrize("path", ["/", "/lookup", "/exp1-1", "/exp1-2", "/runs"])
def test_pages_are_served_with_a_same_origin_policy(bare, path):
    r = bare.get(path)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in r.headers["content-security-policy"]
    assert "connect-src 'self'" in r.headers["content-security-policy"]


def test_every_page_gets_the_one_header_with_itself_marked(bare):
    from attnlab.web.server import HEADER_MARK, NAV, PAGES

    for route, name in PAGES.items():
        assert (STATIC / name).read_text(encoding="utf-8").count(HEADER_MARK) == 1, name  # no copy of its own
        html = bare.get(route).text
        assert html.count('<header class="top">') == 1 and HEADER_MARK not in html
        for href, zh, _ in NAV:
            assert f'href="{href}">{zh}' in html, (route, href)
        here = re.findall(r'<a class="here" href="([^"]+)"', html)
        assert here == ([route] if route in {h for h, _, _ in NAV} else []), route


def test_static_files_name_no_other_host():
    # The only absolute URL allowed is the SVG namespace, which is an identifier, not a request.
    for p in STATIC.rglob("*"):
        if p.suffix in (".html", ".js", ".css"):
            text = p.read_text(encoding="utf-8").replace("http://www.w3.org/2000/svg", "")
            assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.I), p.name


def test_font_is_small_licensed_and_covers_every_page_character():
    fontTools = pytest.importorskip("fontTools.ttLib")
    font_path = STATIC / "fonts" / "NotoSansCJKtc-subset.woff2"
    assert font_path.stat().st_size < 2_600_000  # corpus + GB 2312 level 1 + the pages: 2.1 MiB
    assert "SIL OPEN FONT LICENSE" in (STATIC / "fonts" / "OFL.txt").read_text(encoding="utf-8")
    cmap = fontTools.TTFont(str(font_path)).getBestCmap()
    used = set()
    for p in (
        list(STATIC.glob("*.html")) + list(STATIC.glob("*.js")) + [Path(server.__file__), STATIC.parent / "timeline.py"]
    ):
        used |= set(p.read_text(encoding="utf-8"))
    missing = sorted(
        c for c in used if ord(c) > 0x7F and c.isprintable() and ord(c) not in cmap and not 0x2000 <= ord(c) <= 0x206F
    )  # general punctuation may fall back
    assert not missing, f"re-run scripts/make_font_subset.py; not in the font: {''.join(missing)}"


def test_static_cannot_escape_its_folder(bare):
    for path in ("/static/../server.py", "/static/%2e%2e/server.py", "/static/..%2fserver.py"):
        r = bare.get(path)
        assert r.status_code == 404, path
        assert "create_app" not in r.text


# ------------------------------------------------------------------------ no checkpoint
def test_without_checkpoint_info_says_how_to_start(bare):
    info = bare.get("/api/info").json()
    assert info["checkpoint"] is None and "--checkpoint" in info["hint"]


def test_without_checkpoint_attention_is_409_with_hint(bare):
    r = bare.post("/api/attention", json={"text": "明月"})
    assert r.status_code == 409 and "--checkpoint" in r.json()["detail"]


def test_bad_checkpoint_fails_at_start(tmp_path):
    with pytest.raises(CheckpointError):
        create_app(str(tmp_path / "missing.pt"))
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError):
        create_app(str(junk))


# ------------------------------------------------------------------------ attention
def test_attention_maps_and_metrics(client, lab):
    info = client.get("/api/info").json()
    assert (info["n_layer"], info["n_head"], info["block_size"]) == (1, 2, 16)
    assert info["checkpoint"] == "tiny"  # the run folder (issue 26: not just "ckpt.pt"), never the full path
    r = client.post("/api/attention", json={"text": "明月光"})
    assert r.status_code == 200, r.text
    data = r.json()
    assert [t["text"] for t in data["tokens"]] == ["明", "月", "光"]
    assert len(data["layers"]) == 1 and len(data["layers"][0]["heads"]) == 2
    for head in data["layers"][0]["heads"]:
        w = head["weights"]
        assert len(w) == 3 and all(len(row) == 3 for row in w)
        for i, row in enumerate(w):
            assert sum(row) == pytest.approx(1.0, abs=1e-3)
            assert all(x == 0 for x in row[i + 1 :])  # causal: no weight on the future
        assert set(head["metrics"]) == {"entropy", "diag", "prev", "distance"}
        assert 0 <= head["metrics"]["entropy"] <= 1.0001
        assert head["metrics"]["diag"] == pytest.approx(sum(w[i][i] for i in (1, 2)) / 2, abs=2e-3)
    # the weights served are the model's own attention_patterns (the API rounds to 4 decimals)
    from attnlab.tools import load_model

    model, tok, _, _ = load_model(lab["ckpt"])
    idx = torch.tensor([tok.encode("明月光")], dtype=torch.long)
    with torch.no_grad():
        pats = model.eval().attention_patterns(idx)
    for h, head in enumerate(data["layers"][0]["heads"]):
        assert torch.allclose(
            torch.tensor(head["weights"], dtype=torch.float64), pats[0][0, h].double(), atol=5.1e-5, rtol=0
        )


def test_unknown_characters_become_unk(client):
    data = client.post("/api/attention", json={"text": "明X月"}).json()
    assert [t["text"] for t in data["tokens"]] == ["明", "<unk>", "月"]
    assert data["tokens"][1] == {"text": "<unk>", "char": "X", "typed": "X", "unk": True}
    assert data["n_unk"] == 1


def test_single_token_has_undefined_metrics_not_nan(client):
    data = client.post("/api/attention", json={"text": "明"}).json()
    m = data["layers"][0]["heads"][0]["metrics"]
    assert m["entropy"] is None  # JSON null, never NaN
    assert data["layers"][0]["heads"][0]["weights"] == [[1.0]]


@pytest.mark.parametrize(
    "body, status, words",
    [
        ({"text": ""}, 422, "empty"),
        ({"text": "   \n"}, 422, "empty"),
        ({"text": "明" * 17}, 422, "block_size=16"),
        ({"text": "明" * 5000}, 422, "text"),
        ({"text": 5}, 422, "string"),
        ({"text": ["明"]}, 422, "string"),
        ({"txt": "明"}, 422, "text"),
        ({"text": "明", "path": "/etc/passwd"}, 422, "path"),
        ([1, 2], 422, "invalid"),
    ],
)
def test_attention_rejects_bad_requests_with_a_message(client, body, status, words):
    r = client.post("/api/attention", json=body)
    assert r.status_code == status
    detail = r.json()["detail"]
    assert isinstance(detail, str) and words in detail
    assert "Traceback" not in r.text


def test_malformed_and_oversized_bodies(client):
    r = client.post("/api/attention", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and "JSON" in r.json()["detail"]
    big = json.dumps({"text": "明" * MAX_BODY_BYTES}).encode()
    r = client.post("/api/attention", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413

    def chunks():  # no Content-Length: the cap still holds
        for _ in range(8):
            yield b" " * (MAX_BODY_BYTES // 4)

    r = client.post("/api/attention", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    r = client.post("/api/attention", content=b'{"text": "\xff\xfe"}', headers={"content-type": "application/json"})
    assert r.status_code in (400, 422) and r.json()["detail"]


def test_unexpected_errors_are_500_without_traceback(lab, monkeypatch):
    app = create_app(str(lab["ckpt"]), runs_dir=str(lab["runs"]))
    c = TestClient(base_url=LOCAL, app=app, raise_server_exceptions=False)
    from attnlab.model import TinyGPT

    monkeypatch.setattr(TinyGPT, "attention_patterns", lambda self, idx: 1 / 0)
    r = c.post("/api/attention", json={"text": "明月"})
    assert r.status_code == 500
    assert r.json() == {"detail": "internal error (ZeroDivisionError)"}


def test_methods_and_unknown_endpoints(client):
    assert client.delete("/api/runs").status_code == 405
    assert client.put("/api/attention", json={"text": "a"}).status_code == 405
    r = client.get("/api/no-such-thing")
    assert r.status_code == 404 and r.json()["detail"]
    r = client.get("/api/attention")  # only POST answers there
    assert r.status_code in (404, 405) and r.json()["detail"]


# ------------------------------------------------------------------------------ runs
def test_runs_lists_only_run_directories(client):
    assert client.get("/api/runs").json() == {"runs": ["tiny"]}


def test_run_metrics_columns(client):
    m = client.get("/api/runs/tiny").json()
    assert m["name"] == "tiny" and m["rows"] == len(m["step"]) == len(m["loss"]) >= 1
    assert len(m["layers"]) == 1
    assert set(m["layers"][0]) >= {"weight_entropy", "jacobian_fro", "logit_std"}
    assert len(m["layers"][0]["jacobian_fro"]) == len(m["step"])


@pytest.mark.parametrize(
    "name",
    ["..", "...", "../tiny", "..%2Ftiny", "%2e%2e", "tiny%00", "empty-dir", "/etc", "tiny/metrics.jsonl", "a" * 300],
)
def test_run_names_cannot_reach_other_files(client, name):
    r = client.get(f"/api/runs/{name}")
    assert r.status_code == 404
    assert "loss" not in r.json()


def test_symlinked_run_is_not_served(lab, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "metrics.jsonl").write_text('{"step": 0, "loss": 1.0}\n')
    link = lab["runs"] / "sneaky"
    try:
        link.symlink_to(outside, target_is_directory=True)
    except OSError:
        pytest.skip("no symlinks here")
    try:
        c = TestClient(base_url=LOCAL, app=create_app(None, runs_dir=str(lab["runs"])))
        assert "sneaky" not in c.get("/api/runs").json()["runs"]
        assert c.get("/api/runs/sneaky").status_code == 404
    finally:
        link.unlink()


def test_metrics_reader_skips_bad_lines_and_keeps_val(tmp_path):
    runs = tmp_path / "runs"
    (runs / "r1").mkdir(parents=True)
    lines = [
        json.dumps(
            {
                "step": s,
                "loss": 5.0 - s,
                "lr": 1e-3,
                "grad_norm": 1.0,
                "layers": [{"weight_entropy": 0.9, "jacobian_fro": 0.2, "logit_std": 1.0, "q_std": 0.2, "k_std": 0.2}],
            }
            | ({"val_loss": 4.9} if s == 2 else {})
        )
        for s in range(4)
    ]
    lines.insert(1, "{broken")
    lines.append(json.dumps({"step": 9, "loss": float("nan"), "layers": []}).replace("NaN", "NaN"))
    (runs / "r1" / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    m = TestClient(base_url=LOCAL, app=create_app(None, runs_dir=str(runs))).get("/api/runs/r1").json()
    assert m["skipped_lines"] == 1 and m["rows"] == 5
    assert m["val_step"] == [2] and m["val_loss"] == [4.9]
    assert m["loss"][-1] is None  # NaN becomes null, the JSON stays valid
    assert m["layers"][0]["weight_entropy"][:4] == [0.9] * 4


def test_long_runs_are_thinned(tmp_path):
    (tmp_path / "r").mkdir()
    with open(tmp_path / "r" / "metrics.jsonl", "w") as f:
        for s in range(server.MAX_POINTS * 2 + 7):
            f.write(json.dumps({"step": s, "loss": 1.0}) + "\n")
    m = TestClient(base_url=LOCAL, app=create_app(None, runs_dir=str(tmp_path))).get("/api/runs/r").json()
    assert len(m["step"]) <= server.MAX_POINTS + 1 and m["step"][-1] == server.MAX_POINTS * 2 + 6


# ------------------------------------------------------------------------------ case
def test_case_json(client, bare, tmp_path):
    pairs = client.get("/api/case").json()["pairs"]
    assert set(pairs) == {"small_unscaled", "small_scaled", "big_unscaled", "big_scaled"}
    r = bare.get("/api/case")
    assert r.status_code == 404 and "attnlab case" in r.json()["detail"] and "make" not in r.json()["detail"]
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    r = TestClient(base_url=LOCAL, app=create_app(None, case_json=str(bad))).get("/api/case")
    assert r.status_code == 422 and "parsed" in r.json()["detail"]


# ------------------------------------------------------------------------------- CLI
def test_serve_defaults_to_loopback(capsys):
    from attnlab.cli import build_parser, main, serve

    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port, args.checkpoint) == ("127.0.0.1", 8000, None)
    assert args.func is serve.main
    assert main(["serve", "--port", "70000"]) == 2
    err = capsys.readouterr().err
    assert "port must be an integer" in err and len(err.splitlines()) == 1


def test_serve_is_registered_in_the_cli():
    from attnlab.cli import build_parser

    args = build_parser().parse_args(["serve", "--port", "8123"])
    assert args.port == 8123 and args.host == "127.0.0.1"


def test_missing_web_extra_is_a_clear_error(monkeypatch, capsys):
    import sys

    from attnlab.cli import main

    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if the web extra were not installed
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert "attnlab[web]" in err and len(err.splitlines()) == 1


def test_ci_deps_script_is_idempotent_shell():
    script = Path(__file__).resolve().parents[1] / "scripts" / "ci_system_deps.sh"
    text = script.read_text()
    assert text.startswith("#!") and os.access(script, os.X_OK)
    assert "dpkg" in text and "apt-get install -y" in text
