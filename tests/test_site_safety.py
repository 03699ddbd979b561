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
