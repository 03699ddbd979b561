"""``attnlab site --out`` never deletes what it did not write (attnlab.web.site).

A folder is replaced only when it is provably an earlier site: its mark (``.attnlab-site.json``) is a
regular file that parses, names ``attnlab site`` and lists every file the build wrote with its sha256,
and the folder holds exactly those files, unchanged. Everything else is refused in one line naming
what is in the way, before anything is built or written. The GitHub Pages recipe of docs/teaching.md
is run as written in a real ``git worktree``, with the shortcut of building straight into it.

Most tests replace the 6-20 s build by a small stand-in (``fake_write``): what is under test is the
folder handling around it, which is the same whatever the site holds. One real site is built per
module (``site``) where a real one matters (its mark, the recipe).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import attnlab.web.site as S
from attnlab.cli import main
from attnlab.web.site import MARK, build_site, check_out

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("real") / "site"
    build_site(out)
    return out


def fake_write(dest: Path, *args, **kw) -> S.SiteResult:
    """A stand-in for the build: a few files in a folder, as _write leaves them."""
    (dest / "index.html").write_text("<p>site</p>", encoding="utf-8")
    (dest / "data").mkdir()
    (dest / "data" / "site.json").write_text("{}", encoding="utf-8")
    return S.SiteResult(dest, ["case/x"])


def never_built(*args, **kw):
    raise AssertionError("the build started although --out had to be refused first")


def tree(folder: Path) -> dict[str, str]:
    """Every entry under ``folder`` (links not followed): a file's sha256, a link's target, "dir"."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["site", *argv])
    got = capsys.readouterr()
    return code, got.out, got.err


def earlier(site: Path, where: Path) -> Path:
    shutil.copytree(site, where, symlinks=True)
    return where


# ----------------------------------------------------------------- what is refused, and how
def _mark_empty(d: Path, site: Path):
    d.mkdir()
    (d / MARK).write_text("")
    (d / "notes.txt").write_text("keep me")


def _mark_garbage(d: Path, site: Path):
    d.mkdir()
    (d / MARK).write_text("garbage")
    (d / "notes.txt").write_text("keep me")


def _mark_a_list(d: Path, site: Path):
    d.mkdir()
    (d / MARK).write_text("[1]")
    (d / "thesis.tex").write_text("keep me")


def _mark_a_folder(d: Path, site: Path):
    d.mkdir()
    (d / MARK).mkdir()
    (d / "notes.txt").write_text("keep me")


def _mark_without_files(d: Path, site: Path):  # what the attnlab before this check wrote: nothing proves it whole
    d.mkdir()
    (d / MARK).write_text(json.dumps({"format": "attnlab-site-v1", "generator": "attnlab site", "runs": []}))
    (d / "index.html").write_text("mine")


def _mark_a_link(d: Path, site: Path):
    d.mkdir()
    (d / MARK).symlink_to(site / MARK)
    (d / "index.html").write_text("mine")


def _site_plus_git(d: Path, site: Path):  # a pages worktree into which a site was copied
    earlier(site, d)
    (d / ".git").write_text("gitdir: /somewhere/.git/worktrees/pages\n")
    (d / "CNAME").write_text("attention.example.org\n")


def _site_plus_git_folder(d: Path, site: Path):
    earlier(site, d)
    (d / ".git" / "objects").mkdir(parents=True)
    (d / ".git" / "HEAD").write_text("ref: refs/heads/gh-pages\n")


def _site_plus_user_file_deep(d: Path, site: Path):
    earlier(site, d)
    (d / "static" / "my-notes.md").write_text("keep me")


def _site_edited(d: Path, site: Path):
    earlier(site, d)
    (d / "index.html").write_text((d / "index.html").read_text() + "<!-- my class's note -->")


def _site_edited_same_size(d: Path, site: Path):
    earlier(site, d)
    size = (d / "lookup.html").stat().st_size
    (d / "lookup.html").write_bytes(b"x" * size)


def _site_file_replaced_by_link(d: Path, site: Path):
    earlier(site, d)
    (d / "book.html").unlink()
    (d / "book.html").symlink_to(Path.home())


def _user_folder(d: Path, site: Path):
    d.mkdir()
    (d / "notes.txt").write_text("keep me")


REFUSED = [  # (name, prepare(d, site), phrase of the one line)
    ("an empty mark", _mark_empty, "(it is empty)"),
    ("a garbage mark", _mark_garbage, "not valid JSON"),
    ("a mark [1]", _mark_a_list, "not a mapping"),
    ("a folder named like the mark", _mark_a_folder, "not a file"),
    ("a mark without its list of files", _mark_without_files, "without the list of its files"),
    ("a mark that is a link", _mark_a_link, "(it is a link)"),
    ("a site plus .git and CNAME", _site_plus_git, "plus 2 entries attnlab did not write (.git, CNAME)"),
    ("a site plus a .git folder", _site_plus_git_folder, "plus 1 entry attnlab did not write (.git/)"),
    ("a site plus a file deep inside", _site_plus_user_file_deep, "(static/my-notes.md)"),
    ("a site with an edited page", _site_edited, "changed since it was built (index.html)"),
    ("a site with a page edited to the same size", _site_edited_same_size, "(lookup.html)"),
    ("a site with a page replaced by a link", _site_file_replaced_by_link, "book.html (a link)"),
    ("a folder of the reader's", _user_folder, "(notes.txt)"),
]


@pytest.mark.parametrize("name, prepare, phrase", REFUSED, ids=[r[0] for r in REFUSED])
def test_only_a_provable_earlier_site_is_replaced(site, tmp_path, capsys, monkeypatch, name, prepare, phrase):
    """Before: any folder holding an entry named .attnlab-site.json was replaced whole, exit 0."""
    out = tmp_path / "pages"
    prepare(out, site)
    before = tree(out)
    monkeypatch.setattr(S, "_write", never_built)
    code, stdout, err = run_cli(capsys, "--out", str(out))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"attnlab: error: --out {out} ") and phrase in lines[0], lines[0]
    assert tree(out) == before, "a refused --out was changed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pages"], "something was written beside --out"


def test_a_refusal_names_the_first_few_entries_and_the_count(tmp_path, capsys, monkeypatch):
    out = tmp_path / "mine"
    out.mkdir()
    (out / MARK).write_text("{}")
    for i in range(12):
        (out / f"paper{i:02d}.pdf").write_text("x")
    monkeypatch.setattr(S, "_write", never_built)
    code, _, err = run_cli(capsys, "--out", str(out))
    assert code == 2 and "not one attnlab wrote" in err
    (out / MARK).unlink()
    code, _, err = run_cli(capsys, "--out", str(out))
    assert (
        code == 2
        and "12 entries attnlab did not write (paper00.pdf, paper01.pdf, paper02.pdf, paper03.pdf and 8 more)" in err
    ), err


def test_a_real_site_is_provably_an_earlier_site(site):
    mark = json.loads((site / MARK).read_text())
    written = sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file() and p.name != MARK)
    assert sorted(mark["files"]) == written and len(written) > 40
    for rel, entry in mark["files"].items():
        assert entry["bytes"] == (site / rel).stat().st_size
    assert check_out(site) is True


def test_an_earlier_site_is_replaced_whole_and_nothing_is_left_beside_it(site, tmp_path, monkeypatch):
    out = earlier(site, tmp_path / "site")
    monkeypatch.setattr(S, "_write", fake_write)
    result = build_site(out)
    assert result.replaced and result.note is None
    assert sorted(json.loads((out / MARK).read_text())["files"]) == ["data/site.json", "index.html"]
    assert not (out / "lookup.html").exists()  # the earlier site's files are gone ...
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # ... and so is every folder of the build
    build_site(out)  # the stand-in's own site is an earlier site too
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_an_empty_or_missing_folder_is_fine(tmp_path, monkeypatch):
    monkeypatch.setattr(S, "_write", fake_write)
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "new" / "site"):
        build_site(out)
        assert (out / "index.html").is_file() and (out / MARK).is_file()


def test_a_file_added_during_the_build_is_kept_and_the_build_refused(site, tmp_path, monkeypatch):
    """The check is made again just before the swap: a file put into --out while the site was being
    built (the build takes 20 s) makes it no longer an earlier site, so it is refused, not deleted."""
    out = earlier(site, tmp_path / "site")

    def slow_write(dest, *a, **k):
        (out / "CNAME").write_text("attention.example.org")  # the reader, meanwhile
        return fake_write(dest)

    monkeypatch.setattr(S, "_write", slow_write)
    before = tree(site)
    with pytest.raises(S.OutputError, match=r"plus 1 entry attnlab did not write \(CNAME\)"):
        build_site(out)
    assert (out / "CNAME").read_text() == "attention.example.org"
    assert {k: v for k, v in tree(out).items() if k != "CNAME"} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


# ------------------------------------------------------------------ the GitHub Pages recipe
def recipe() -> list[str]:
    """The shell lines of docs/teaching.md's gh-pages recipe, as a reader copies them."""
    text = (REPO / "docs" / "teaching.md").read_text(encoding="utf-8")
    part = text[text.index("Option 1: a gh-pages branch") :]
    block = re.search(r"```\n(.*?)```", part, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def git(*args, cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_github_pages_recipe_runs_in_a_real_worktree_and_the_shortcut_is_refused(site, tmp_path, capsys):
    """docs/teaching.md's lines, run as written in a real repository (the `attnlab site` line by the
    module's build, `git push` left out: there is no remote); then building straight into the pages
    worktree, the obvious shortcut, is refused and its .git is untouched; then an update as the docs
    say (build again, repeat from `git rm`)."""
    repo = tmp_path / "book-repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "README.md").write_text("a class's repository\n")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "first", cwd=repo)
    lines = recipe()
    assert lines[0] == "attnlab site --out /tmp/attnlab-site" and lines[-1].endswith("git push -u origin gh-pages")
    built = tmp_path / "attnlab-site"
    shutil.copytree(site, built)
    script = "set -e\n" + "\n".join(lines[1:-1] + [lines[-1].replace(" && git push -u origin gh-pages", "")])
    script = script.replace("/tmp/attnlab-site", str(built))
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t"}
    env |= {"GIT_COMMITTER_EMAIL": "t@e", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(["bash", "-c", script], cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    pages = tmp_path / "attnlab-pages"
    assert git("branch", "--show-current", cwd=pages).strip() == "gh-pages"
    committed = set(git("ls-files", cwd=pages).split())
    assert committed == {str(p.relative_to(site)) for p in site.rglob("*") if p.is_file()}
    assert not git("status", "--porcelain", cwd=pages)

    dot_git = (pages / ".git").read_text()
    code, _, err = run_cli(capsys, "--out", str(pages))  # the shortcut
    assert code == 2 and "plus 1 entry attnlab did not write (.git)" in err, err
    assert (pages / ".git").read_text() == dot_git and not git("status", "--porcelain", cwd=pages)
    assert git("worktree", "list", cwd=repo).count("\n") == 2

    # an update: a new build (one page changed), then the lines from `git rm` on
    (built / "index.html").write_text("<p>rebuilt</p>")
    again = "set -e\n" + "\n".join(lines[lines.index("git rm -rq --ignore-unmatch .") :][:-1])
    again += "\n" + lines[-1].replace(" && git push -u origin gh-pages", "")
    again = "cd " + str(pages) + "\n" + again.replace("/tmp/attnlab-site", str(built))
    done = subprocess.run(["bash", "-c", again], cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (pages / "index.html").read_text() == "<p>rebuilt</p>" and (pages / ".git").read_text() == dot_git
    assert git("rev-list", "--count", "HEAD", cwd=pages).strip() == "2"
    assert git("log", "-1", "--format=%s", cwd=repo).strip() == "first"  # main is untouched


# -------------------------------------------------------- interrupted builds, two at once
SLOW_BUILD = """
import sys, time
import attnlab.web.site as S
from attnlab.cli import main

def slow(dest, *a, **k):
    (dest / "half.html").write_text("half of a site")
    print("building", flush=True)
    time.sleep(120)

S._write = slow
sys.exit(main(["site", "--out", sys.argv[1]]))
"""


def start_slow_build(out: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_BUILD, str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "building", proc.stderr.read()
    return proc


def beside(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir())


def test_sigterm_during_a_build_cleans_up_and_a_second_build_is_refused_meanwhile(tmp_path, capsys, monkeypatch):
    """kill (SIGTERM) during a build: its temporary folder and lock are removed and --out, an earlier
    site, is as it was. While it ran, a second build of the same --out was refused naming it."""
    out = tmp_path / "site"
    monkeypatch.setattr(S, "_write", fake_write)
    build_site(out)
    before = tree(out)
    proc = start_slow_build(out)
    try:
        assert any(n.endswith(".tmp") for n in beside(out))  # it is building beside --out
        monkeypatch.setattr(S, "_write", never_built)
        code, _, err = run_cli(capsys, "--out", str(out))
        assert code == 2 and f"--out {out} is being built by process {proc.pid}" in err, err
        assert len(err.strip().splitlines()) == 1
    finally:
        proc.terminate()  # SIGTERM
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "stopped (SIGTERM)" in err and "Traceback" not in err, err
    assert beside(out) == ["site"] and tree(out) == before


def test_what_a_killed_build_left_is_removed_by_the_next_and_nothing_else(tmp_path, monkeypatch):
    """kill -9 leaves the temporary folder and the lock file; the next build of the same --out removes
    them, recognised by the build mark inside. A folder with the same kind of name but no mark, and the
    folders of another --out's build, are left alone."""
    out = tmp_path / "site"
    proc = start_slow_build(out)
    proc.kill()
    proc.communicate(timeout=60)
    left = [n for n in beside(out)]
    assert any(n.endswith(".tmp") for n in left) and any(n.endswith(".lock") for n in left), left
    tmp_left = next(tmp_path.glob(".attnlab-site-*.tmp"))
    decoy = tmp_path / tmp_left.name.replace(".tmp", "x.tmp")  # same tag and shape, not attnlab's
    decoy.mkdir()
    (decoy / "mine.txt").write_text("keep me")
    other = tmp_path / ".attnlab-site-0123456789-abc.tmp"  # another --out's
    shutil.copytree(tmp_left, other)
    monkeypatch.setattr(S, "_write", fake_write)
    result = build_site(out)
    assert sorted(beside(out)) == sorted(["site", decoy.name, other.name])
    assert (decoy / "mine.txt").read_text() == "keep me" and (other / "half.html").exists()
    assert result.note and decoy.name in result.note and "left" in result.note


def test_an_earlier_site_that_cannot_be_deleted_is_named_and_removed_by_the_next_build(tmp_path, capsys, monkeypatch):
    out = tmp_path / "site"
    monkeypatch.setattr(S, "_write", fake_write)
    build_site(out)

    def refuse(path, *a, **k):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(S.shutil, "rmtree", refuse)
    code, stdout, err = run_cli(capsys, "--out", str(out))
    assert code == 0 and "site written" in stdout
    assert re.search(
        r"attnlab: note: the earlier site was moved to \S+\.attnlab-site-old-\S+ but cannot be deleted "
        r"\(Permission denied\); delete it yourself",
        err,
    ), err
    old = next(tmp_path.glob(".attnlab-site-old-*"))
    assert (old / MARK).is_file() and (old / "data" / "site.json").is_file()  # the mark stays: still provably ours
    monkeypatch.undo()
    monkeypatch.setattr(S, "_write", fake_write)
    assert build_site(out).note is None
    assert beside(out) == ["site"]


# ------------------------------------------------------------- refused before the build
def test_a_mount_point_is_refused_before_the_build(tmp_path, capsys, monkeypatch):
    """Before: refused only when the finished site could not be renamed over it (a 20 s build)."""
    out = tmp_path / "mnt"
    out.mkdir()
    ismount = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: Path(p) == out or ismount(p))
    monkeypatch.setattr(S, "_write", never_built)
    code, _, err = run_cli(capsys, "--out", str(out))
    assert code == 2 and f"--out {out} is a mount point" in err and f"{out / 'site'}" in err, err
    assert beside(out) == ["mnt"]
    shm = Path("/dev/shm")
    if shm.is_dir() and S.is_mount_point(shm) and os.access(shm, os.W_OK):  # a real one, empty or not
        with pytest.raises(S.OutputError, match="is a mount point"):
            check_out(shm)


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_a_real_mount_point_is_refused_in_a_second_not_after_the_build(tmp_path):
    """An empty tmpfs mounted in a private mount namespace (where one may be made: root, or a user
    namespace). Before: the whole build ran (19 s here), then "Device or resource busy"."""
    mnt = tmp_path / "m"
    mnt.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "MNT": str(mnt), "PY": sys.executable}
    env["CODE"] = "import sys; from attnlab.cli import main; sys.exit(main(['site', '--out', sys.argv[1]]))"
    script = 'mount -t tmpfs none "$MNT" 2>/dev/null || exit 77; exec "$PY" -c "$CODE" "$MNT"'
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True, timeout=300)
    if done.returncode == 77 or "unshare failed" in done.stderr or "Operation not permitted" in done.stderr:
        pytest.skip("no mount namespace may be made here")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and f"--out {mnt} is a mount point" in lines[0], done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def shipped_copy(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    for name in S.CASE_RUNS:
        (root / name).mkdir(parents=True)
        shutil.copyfile(S.SHIPPED_RUNS / name / "ckpt.pt", root / name / "ckpt.pt")
    return root


def _linked(ckpt: Path):
    real = ckpt.with_name("real.pt")
    ckpt.rename(real)
    ckpt.symlink_to(real)


def _looped(ckpt: Path):
    ckpt.unlink()
    ckpt.symlink_to(ckpt.name)


def _dangling(ckpt: Path):
    ckpt.unlink()
    ckpt.symlink_to("gone.pt")


def _truncated(ckpt: Path):
    data = ckpt.read_bytes()
    ckpt.write_bytes(data[: len(data) // 2])


def _a_folder(ckpt: Path):
    ckpt.unlink()
    ckpt.mkdir()


CHECKPOINTS = [
    ("a linked checkpoint", _linked, r"is a link \(to \S+real.pt\); attnlab reads no linked checkpoint"),
    ("a link loop", _looped, "is a link in a loop"),
    ("a link to nothing", _dangling, r"is a link to nothing \(gone.pt\)"),
    (
        "a truncated checkpoint",
        _truncated,
        r"is damaged: it does not load as a checkpoint \(1,171,308 bytes; truncated",
    ),
    ("a folder for a checkpoint", _a_folder, "is a folder, not a file"),
]


@pytest.mark.parametrize("name, damage, phrase", CHECKPOINTS, ids=[c[0] for c in CHECKPOINTS])
def test_a_damaged_shipped_checkpoint_is_named_before_the_build(tmp_path, monkeypatch, name, damage, phrase):
    """Before: a linked or truncated checkpoint was found by the server after the build started (a
    Python dict printed as the reason), a loop was "missing"."""
    root = shipped_copy(tmp_path)
    damage(root / S.CASE_RUNS[0] / "ckpt.pt")
    monkeypatch.setattr(S, "_write", never_built)
    with pytest.raises(S.SiteError) as e:
        build_site(tmp_path / "site", runs_root=root)
    msg = str(e.value)
    assert msg.startswith(f"the case model {S.CASE_RUNS[0]} that ships with attnlab ({root / S.CASE_RUNS[0]}")
    assert re.search(phrase, msg) and "reinstall attnlab" in msg and "{" not in msg, msg
    assert "\n" not in msg and beside(tmp_path / "site") == ["runs"]


def test_a_report_embeds_only_files_beside_it(tmp_path):
    """An edited report referencing a file by absolute path, by ../ or through a link inside its folder
    does not get that file embedded in the public site; its own figures are."""
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
    (tmp_path / "private").mkdir()
    secret = tmp_path / "private" / "secret.png"
    secret.write_bytes(png)
    reports, figures = tmp_path / "out" / "reports", tmp_path / "out" / "figures"
    reports.mkdir(parents=True)
    figures.mkdir()
    (figures / "loss.png").write_bytes(png)
    (reports / "here.png").write_bytes(png)
    (reports / "link.png").symlink_to(secret)
    good = S.self_contained('<img src="here.png"><img src="../figures/loss.png">', reports, "r.html")
    assert good.count("data:image/png;base64,") == 2
    for ref in (str(secret), "../../private/secret.png", "link.png", f"file://{secret}"):
        with pytest.raises(S.SiteError, match="outside the folders a report embeds from") as e:
            S.self_contained(f'<p>x</p><img src="{ref}">', reports, "r.html")
        assert ref in str(e.value)


# ------------------------------------------------------------------ the ONNX manifest's door
def _manifest(tmp_path: Path, text: str | None) -> Path:
    folder = tmp_path / "onnx"
    folder.mkdir()
    if text is None:
        os.mkfifo(folder / "manifest.json")
    else:
        (folder / "manifest.json").write_text(text)
    return folder


def _committed_manifest(change) -> str:
    doc = json.loads((S.ONNX_DIR / "manifest.json").read_text())
    change(doc["runs"]["case/big_scaled"]["tensors"][0])
    return json.dumps(doc, allow_nan=True)


MANIFESTS = [
    ("[1]", "[1]", "the top level is list"),
    ("100,000 deep", "[" * 100_000 + "]" * 100_000, "nested deeper than"),
    ("NaN offset", _committed_manifest(lambda t: t.__setitem__("offset", float("nan"))), "NaN or infinite"),
    ("offset 1e12", _committed_manifest(lambda t: t.__setitem__("offset", 1e12)), "tensors[0].offset is float"),
    (
        "offset 10**12",
        _committed_manifest(lambda t: t.__setitem__("offset", 10**12)),
        "tensors[0].offset: 1000000000000 should be less than or equal to 268435456",
    ),
    ("a FIFO", None, "is a FIFO, not a regular file"),
    ("empty", "", "not valid JSON"),
]


@pytest.mark.parametrize("name, text, phrase", MANIFESTS, ids=[m[0] for m in MANIFESTS])
def test_the_onnx_manifest_is_read_through_the_schema_door(tmp_path, monkeypatch, name, text, phrase):
    """Before: json.loads outside read_json: a traceback, a hang on a FIFO, a MemoryError at 1e12."""
    import signal

    folder = _manifest(tmp_path, text)
    monkeypatch.setattr(S, "_write", never_built)

    def hang(*a):
        raise AssertionError("no answer within 10 s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(10)
    try:
        with pytest.raises(S.SiteError) as e:
            build_site(tmp_path / "site", onnx_dir=folder)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    msg = str(e.value)
    assert msg.startswith(str(folder / "manifest.json")) and phrase in msg and "\n" not in msg, msg
    assert "export_onnx.py" in msg and beside(tmp_path / "site") == ["onnx"]


def test_umask_mask_is_public_and_leaves_the_umask_as_it_was():
    from attnlab.io import umask_mask

    before = os.umask(0o027)
    try:
        assert umask_mask() == 0o027 and umask_mask() == 0o027
    finally:
        os.umask(before)
    src = (REPO / "src" / "attnlab" / "web" / "site.py").read_text(encoding="utf-8")
    assert "_umask" not in src.replace("umask_mask", "")
