"""Move each claim's first data back to the first commit that held its numbers, and recover the
specifications its code had between registration and its first committed record (run from the
repository root).

    PYTHONPATH=src python scripts/registry_first_data.py [--dry-run]

scripts/backfill_registry.py dated a claim's first data by its first committed *verdict*. A claim
whose numbers were committed before (the runs it reads, in data/ch1_case.json, a lab-book file …),
or whose verdict a test asserted before, was seen by whoever wrote it down. This script finds, for
every registered claim:

- inputs: the first commit holding a committed JSON file (data/**.json, the registry aside) that
  contains every per-seed number of one of the claim's inputs, as any committed record of the claim
  holds them (a list of numbers judged, ``val_loss_end: [4.046, 4.099, …]``). A number matches one
  that rounds to it at the decimals it is written with; numbers with fewer than 3 significant digits
  (4.0, 0.5), whole numbers and the parameter inputs (book, tol, sesoi, margin …) are not used, nor
  numbers in arrays longer than 32 (loss curves: they hold every value near a loss by chance). One
  number alone matches only with 4 significant digits or more.
- test: the first commit adding, under tests/, a line with the claim id as a string literal within two
  lines of PASS, FAIL or INCONCLUSIVE (a test asserting its verdict).

``first_data`` becomes the earliest of these and the committed verdict it held (only ever earlier;
its former value is kept as ``first_verdict``), and the claim becomes post hoc when its registration
does not precede that commit (never the other way: the registry is append only, see
attnlab.claims_registry.rewrites).

Then, for each claim registered before its first committed record, the code between the two: at each
commit of that range touching the file that holds the claim id, the rule call that follows the id
(``S.value(vals, ABOUT_4, tol=TOL_ABOUT_4)``), its numbers resolved from the module's constants.
When that call changed in the range, the specifications the registry never saw are recovered and
appended as one amendment at the end of the claim's list: ``spec`` and ``from`` are the
specification held now (the effective specification does not change), ``recovered`` lists each
earlier specification with its commit, date and call, ``date``/``commit`` those of the last change.
"""

from __future__ import annotations

import argparse
import ast
import bisect
import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))

import backfill_registry as B  # noqa: E402

REGISTRY = "data/claims_registry.json"
NOT_INPUTS = re.compile(r"(^|_)(sesoi|tol|margin|threshold|bound|book|lo|hi|alpha|level|direction)($|_)")
LONG = 32  # arrays longer than this are curves, not per-seed numbers
VERDICT_WORDS = re.compile(r"\b(PASS|FAIL|INCONCLUSIVE)\b")
RULES = ("value", "band", "every", "effect", "equivalence")
HOW_INPUTS = (
    "first commit whose committed JSON ({path}) holds every per-seed number of the claim's input "
    "{name!r} ({values}) (scripts/registry_first_data.py)"
)
HOW_TEST = (
    "first commit adding a test ({path}) with the claim id next to a verdict ({line!r}) "
    "(scripts/registry_first_data.py)"
)


def git(*args: str) -> str:
    return B.git(*args)


# ------------------------------------------------------------------ numbers in committed JSON
def _numbers(doc, out: list[float]) -> None:
    if isinstance(doc, dict):
        for v in doc.values():
            _numbers(v, out)
    elif isinstance(doc, list):
        if len(doc) > LONG and all(isinstance(x, (int, float)) for x in doc[:LONG]):
            return
        for v in doc:
            _numbers(v, out)
    elif isinstance(doc, float) or (isinstance(doc, int) and not isinstance(doc, bool)):
        out.append(float(doc))


def blobs() -> list[tuple[str, str, str, list[float]]]:
    """(commit, date, path, sorted numbers) for each new version of a committed JSON file under data/,
    parents first (the registry aside)."""
    commits = git("rev-list", "--reverse", "--date-order", "HEAD", "--", "data").split()
    seen, out = set(), []
    for c in commits:
        date = git("show", "-s", "--format=%cI", c).strip()
        for line in git("ls-tree", "-r", c, "--", "data").splitlines():
            info, path = line.split("\t", 1)
            sha = info.split()[2]
            if not path.endswith(".json") or path == REGISTRY or sha in seen:
                continue
            seen.add(sha)
            try:
                doc = json.loads(git("cat-file", "blob", sha))
            except json.JSONDecodeError:
                continue
            nums: list[float] = []
            _numbers(doc, nums)
            out.append((c, date, path, sorted(nums)))
    return out


def _decimals(x: float) -> tuple[int, int] | None:
    """(decimals, significant digits) of ``x`` as written (None: not a measured number)."""
    text = repr(float(x))
    if "e" in text or "inf" in text or "nan" in text:
        m = re.match(r"-?(\d)(?:\.(\d+))?e([-+]\d+)", text)
        if not m:
            return None
        frac = m.group(2) or ""
        exp = int(m.group(3))
        return max(0, len(frac) - exp), 1 + len(frac.rstrip("0"))
    whole, frac = text.lstrip("-").split(".")
    frac = frac.rstrip("0")
    if not frac:
        return None  # a whole number: a count, a step, a parameter
    digits = (whole.lstrip("0") + frac).lstrip("0")
    return len(frac), len(digits)


def _holds(nums: list[float], x: float, dec: int) -> bool:
    half = 0.5 * 10.0 ** (-dec) * (1 + 1e-9)
    i = bisect.bisect_left(nums, x - half)
    return i < len(nums) and nums[i] <= x + half


def fingerprints(records: list[dict]) -> list[tuple[str, tuple[float, ...], list[tuple[float, int]]]]:
    """(input name, values, usable (value, decimals)) for every distinct per-seed list the claim's records held."""
    out, seen = [], set()
    for rec in records:
        for name, vals in (rec.get("inputs") or {}).items():
            if NOT_INPUTS.search(name) or not isinstance(vals, list) or not vals or len(vals) > LONG:
                continue
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
                continue
            key = (name, tuple(float(v) for v in vals))
            if key in seen:
                continue
            seen.add(key)
            usable = []
            for v in key[1]:
                d = _decimals(v)
                if d and d[1] >= 3:
                    usable.append((v, d[0], d[1]))
            if not usable or (len(usable) == 1 and usable[0][2] < 4) or len(usable) < len(vals) // 2 + 1:
                continue
            out.append((name, key[1], [(v, dec) for v, dec, _ in usable]))
    return out


# ------------------------------------------------------------------ tests asserting verdicts
def test_commits(ids: set[str]) -> dict[str, tuple[str, str, str, str]]:
    """claim id -> (commit, date, path, line) of the first commit adding a test line with the id as a string
    literal within two lines of a verdict."""
    log = git(
        "log", "--reverse", "--date-order", "-p", "-U2", "--no-merges", "--format=@@@COMMIT %H %cI", "--", "tests"
    )
    found: dict[str, tuple[str, str, str, str]] = {}
    commit = date = path = ""
    hunk: list[tuple[bool, str]] = []

    def flush():
        for i, (_added, text) in enumerate(hunk):
            for cid in re.findall(r"""["']([A-Za-z0-9_]+)["']""", text):
                if cid not in ids or cid in found:
                    continue
                near = hunk[max(0, i - 2) : i + 3]
                if any(VERDICT_WORDS.search(t) for _, t in near) and any(a for a, _ in near):
                    found[cid] = (commit, date, path, text.strip()[:120])
        hunk.clear()

    for line in log.splitlines():
        if line.startswith("@@@COMMIT "):
            flush()
            _, commit, date = line.split(" ", 2)
        elif line.startswith("+++ "):
            flush()
            path = line[6:] if line.startswith("+++ b/") else path
        elif line.startswith("@@"):
            flush()
        elif line.startswith("+") and not line.startswith("+++"):
            hunk.append((True, line[1:]))
        elif line.startswith(" "):
            hunk.append((False, line[1:]))
    flush()
    return found


# ------------------------------------------------------------------ specifications in code
def _constants(src: str) -> dict:
    """The module's constants that are numbers, or the book's values (``book_values("key")``: the book's
    numbers do not change, so today's reference values stand for the ones that commit read)."""
    out: dict = {}
    for m in re.finditer(r"^([A-Z][A-Z0-9_]*)\s*(?::[^=\n]*)?=\s*(.+)$", src, re.M):
        try:
            v = _eval(ast.parse(m.group(2).strip(), mode="eval").body, out)
        except (SyntaxError, ValueError, TypeError):
            continue
        if isinstance(v, (float, dict)):
            out[m.group(1)] = v
    return out


def _eval(node, consts: dict[str, float]):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id in consts:
        return consts[node.id]
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "book_values" and len(node.args) == 1:
        from attnlab.book import book_values

        key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            try:
                return book_values(key.value)
            except (KeyError, ValueError) as err:
                raise ValueError("no such book value") from err
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        box = _eval(node.value, consts)
        if isinstance(box, dict) and node.slice.value in box:
            v = box[node.slice.value]
            return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
        raise ValueError("not a number")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, consts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        a, b = _eval(node.left, consts), _eval(node.right, consts)
        return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b, ast.Div: a / b}[type(node.op)]
    raise ValueError("not a number")


def rule_call(src: str, cid: str) -> dict | None:
    """The rule call that follows the claim id's literal in ``src``: its text, and the specification it
    makes (rule and numeric parameters) when its numbers resolve."""
    for hit in re.finditer(re.escape(f'"{cid}"'), src):
        window = src[hit.start() : hit.start() + 900]
        m = re.search(r"\bS\.(" + "|".join(RULES) + r")\(", window)
        if m and "claim(" not in window[: m.start()] and "\n\n\n" not in window[: m.start()]:
            break
    else:
        return None
    start, depth = m.end(), 1
    j = start
    while j < len(window) and depth:
        depth += {"(": 1, ")": -1}.get(window[j], 0)
        j += 1
    text = window[m.start() : j]
    out: dict = {"call": re.sub(r"\s+", " ", text)}
    try:
        call = ast.parse(text.replace("S.", "", 1), mode="eval").body
        consts = _constants(src)
        args = [_eval(a, consts) for a in call.args[1:]]
        kwargs = {k.arg: _eval(k.value, consts) for k in call.keywords}
        from attnlab import stats

        j = getattr(stats, m.group(1))([1.0, 2.0, 3.0], *args, **kwargs)
        params = {k: round(v, 10) if isinstance(v, float) else v for k, v in j.spec["params"].items()}
        out["spec"] = {"rule": j.spec["rule"], "params": params}
    except (SyntaxError, ValueError, TypeError, ZeroDivisionError, AttributeError):
        pass
    return out


def _same_call(a: dict | None, b: dict | None) -> bool:
    if a is None or b is None:
        return True  # not found on one side: nothing to compare
    if "spec" in a and "spec" in b:
        from attnlab.claims_registry import differences

        return not differences(a["spec"], b["spec"])
    return re.sub(r"[A-Za-z_]+", "", a["call"]) == re.sub(r"[A-Za-z_]+", "", b["call"]) and (
        a["call"].split("(")[0] == b["call"].split("(")[0]
    )


def recovered(cid: str, reg: str, first: str) -> list[dict]:
    """The specifications the claim's code held from its registration ``reg`` up to its first committed
    record ``first`` (exclusive), each {commit, date, call, spec?}, when the call changed in that range."""
    try:
        files = git("grep", "-l", f'"{cid}"', reg, "--", "src").splitlines()
    except subprocess.CalledProcessError:  # the id is built by an f-string: no literal to follow
        return []
    files = [f.split(":", 1)[1] for f in files]
    if not files:
        return []
    commits = [reg] + git("rev-list", "--reverse", "--ancestry-path", f"{reg}..{first}", "--", *files).split()
    commits = [c for c in commits if c != first]
    states = []
    for c in commits:
        call = None
        for f in files:
            try:
                src = git("show", f"{c}:{f}")
            except subprocess.CalledProcessError:
                continue
            call = rule_call(src, cid)
            if call:
                break
        if call and (not states or not _same_call(states[-1], call)):
            date = git("show", "-s", "--format=%cI", c).strip()
            states.append({"commit": c, "date": date, **call})
    # the state at the first record: compare the last state in range with it
    at_first = None
    for f in files:
        try:
            at_first = rule_call(git("show", f"{first}:{f}"), cid)
        except subprocess.CalledProcessError:
            continue
        if at_first:
            break
    if at_first and states and not _same_call(states[-1], at_first):
        states.append({"commit": first, "date": git("show", "-s", "--format=%cI", first).strip(), **at_first})
    return states if len(states) > 1 else []


# ------------------------------------------------------------------ the update
def _earlier(a: tuple[str, str] | None, b: tuple[str, str] | None, dates: dict[str, str]) -> bool:
    """(commit, date) ``a`` strictly precedes ``b``."""
    if a is None:
        return False
    if b is None or b[0] is None:
        return True
    if a[0] == b[0]:
        return False
    anc = subprocess.run(["git", "merge-base", "--is-ancestor", a[0], b[0]], cwd=ROOT).returncode == 0
    if anc:
        return True
    if subprocess.run(["git", "merge-base", "--is-ancestor", b[0], a[0]], cwd=ROOT).returncode == 0:
        return False
    return a[1] < b[1]


def update(reg: dict, log=print) -> dict:
    from attnlab.claims_registry import effective_spec, registered_verdict, spec_key
    from attnlab.cli.claims import current_claims

    now = {c["id"]: c for c in current_claims(ROOT / "data")}
    entries = reg["claims"]
    hist = B.history()
    records: dict[str, list[dict]] = {}
    first_record: dict[str, tuple[str, str]] = {}
    for commit, date, _msg, _path, claims in hist:
        for rec in claims:
            cid = rec.get("id")
            if cid in entries:
                records.setdefault(cid, []).append(rec)
                first_record.setdefault(cid, (commit, date))
    log("reading the numbers of every committed JSON version …")
    cache = os.environ.get("REGISTRY_FIRST_DATA_CACHE")  # a pickle of the numbers, for reruns while developing
    if cache and Path(cache).is_file():
        all_blobs = pickle.loads(Path(cache).read_bytes())
    else:
        all_blobs = blobs()
        if cache:
            Path(cache).write_bytes(pickle.dumps(all_blobs))
    tests = test_commits(set(entries))
    dates: dict[str, str] = {}
    report = {"moved": [], "post_hoc": [], "recovered": []}
    for cid, e in entries.items():
        old = e.get("first_data") or {}
        best = (old.get("commit"), old.get("date")) if old.get("commit") else None
        found = None
        for name, vals, usable in fingerprints(records.get(cid, [])):
            for commit, date, path, nums in all_blobs:
                if best and not _earlier((commit, date), best, dates):
                    continue
                if all(_holds(nums, v, d) for v, d in usable):
                    best, found = (commit, date), ("inputs", path, name, vals)
                    break
        t = tests.get(cid)
        if t and _earlier((t[0], t[1]), best, dates):
            best, found = (t[0], t[1]), ("test", t[2], t[3])
        if found:
            commit, date = best
            if found[0] == "inputs":
                how = HOW_INPUTS.format(path=found[1], name=found[2], values=", ".join(f"{v:g}" for v in found[3]))
                path, verdict = found[1], None
            else:
                how = HOW_TEST.format(path=found[1], line=found[2])
                path, verdict = found[1], next(iter(VERDICT_WORDS.findall(found[2])), None)
            e["first_data"] = {
                "commit": commit,
                "date": date,
                "authored": B.AUTHORED.get(commit) or git("show", "-s", "--format=%aI", commit).strip(),
                "path": path,
                "verdict": verdict,
                "found": found[0],
                "how": how,
                "first_verdict": old,
            }
            report["moved"].append((cid, old.get("commit"), old.get("date"), commit, date, found[0], how))
        r = e.get("registered") or {}
        fd = e.get("first_data") or {}
        if not e.get("post_hoc") and fd.get("commit") and r.get("commit"):
            if not _earlier((r["commit"], r["date"]), (fd["commit"], fd["date"]), dates):
                e["post_hoc"] = True
                e["post_hoc_how"] = (
                    f"registered at {r['commit'][:10]} ({r['date']}), not before its first data at "
                    f"{fd['commit'][:10]} ({fd['date']}): {fd.get('found', 'a committed verdict')}"
                )
                report["post_hoc"].append((cid, r["commit"], fd["commit"], fd.get("found")))
        # specifications between registration and the first committed record, missed by the backfill
        fr = first_record.get(cid)
        if r.get("commit") and fr and _earlier((r["commit"], r["date"]), fr, dates) and cid in now:
            if any(a.get("recovered") for a in e.get("amendments") or []):
                continue  # recovered already
            states = recovered(cid, r["commit"], fr[0])
            if states:
                held = effective_spec(e)
                claim = now[cid]
                for s in states:
                    if "spec" in s and claim.get("spec") and claim["spec"].get("reads") is not None:
                        s["spec"] = {**s["spec"], "reads": claim["spec"]["reads"]}
                        s["verdict_now"] = registered_verdict({"spec": s["spec"]}, claim)
                last = states[-1]
                calls = " → ".join(f"{s['call']} ({s['commit'][:7]})" for s in states)
                e.setdefault("amendments", []).append(
                    {
                        "date": last["date"],
                        "authored": git("show", "-s", "--format=%aI", last["commit"]).strip(),
                        "commit": last["commit"],
                        "what": f"recovered: the code's specification changed before its first committed record: {calls}",
                        "from": held,
                        "spec": spec_key(held),
                        "verdict_before": None,
                        "recovered": states,
                        "why": (
                            "recovered from the code's history: the registry's back-fill read committed records only, "
                            f"and the specification in code changed between the registration ({r['commit'][:7]}) and "
                            f"the first committed record ({fr[0][:7]}); the specification held is unchanged"
                        ),
                        "how": "scripts/registry_first_data.py: the rule call after the claim id in src/ at each commit "
                        "of that range, its numbers resolved from the module's constants",
                    }
                )
                report["recovered"].append((cid, states))
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
    ap.add_argument("--out", default=str(ROOT / REGISTRY))
    args = ap.parse_args(argv)
    from attnlab.claims_registry import count_text, counts, rewrites
    from attnlab.io import write_json

    path = ROOT / REGISTRY
    old = json.loads(path.read_text(encoding="utf-8"))
    reg = json.loads(path.read_text(encoding="utf-8"))
    rep = update(reg)
    for cid, oc, od, nc, nd, what, _how in rep["moved"]:
        print(f"first data {cid}: {(oc or '-')[:7]} {od} → {nc[:7]} {nd} ({what})")
    for cid, rc, fc, what in rep["post_hoc"]:
        print(f"post hoc  {cid}: registered {rc[:7]}, first data {fc[:7]} ({what})")
    for cid, states in rep["recovered"]:
        print(f"recovered {cid}: " + " → ".join(f"{s['call']} [{s.get('verdict_now')}]" for s in states))
    problems = rewrites(old, reg)
    if problems:
        print("refused, the registry would be rewritten:\n" + "\n".join(problems), file=sys.stderr)
        return 1
    ids = list(reg["claims"])
    print("before:", count_text(counts(old, ids)))
    print("after: ", count_text(counts(reg, ids)))
    if not args.dry_run:
        write_json(Path(args.out), reg)
        print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
