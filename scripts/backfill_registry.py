"""Back-fill data/claims_registry.json from git history (run from the repository root).

    PYTHONPATH=src python scripts/backfill_registry.py [--out data/claims_registry.json]

For every claim the lab book judges now (attnlab claims: the lab book's entries, the case's
claims among them) it finds, in the repository's full history:

- registered: the first commit (in date order, parents first) that adds a line of src/**.py
  holding the claim id as a string literal, or, for an id built by an f-string, the f-string's
  fixed start as it stands in src/ today (``f"kv_formula_{``). The id can be older than the
  parameters it is judged with: the source at that commit is not run, so the registered
  parameters are those of its first judged record when that is later (``how`` says which).
- first data: the first commit whose committed JSON (data/lab_book/<entry>.json,
  data/ch1_case.json, data/failure_symptoms.json, data/head_portrait.json) holds a judged verdict
  for it: PASS, FAIL or INCONCLUSIVE (or, before verdicts, ``pass`` true / false).
- post hoc (事后): registered in the same commit as its first data, or in a commit that has it as
  an ancestor (or, on branches that do not contain one another, a later date).
- amendments: each change of the claim's rule or parameters between one committed record of a
  file and the next. Records before ``spec`` show their parameters only in words: the rule
  (``rule``), the parameters its detail text prints (``stated > 0``, ``smallest effect of interest
  0.1``, ``book 5.18``, ``± 0.5``, ``[0.1, 0.2]``, ``vs ±0.05``) and the parameter inputs
  (``sesoi``, ``tol``, ``margin``, ``threshold``, ``bound``); before the rules of attnlab.stats,
  the criterion in words (``expected``, numbers of the data itself - "mean ± 0.146" - masked).
  A parameter shown in one record and not the next is not a change. The why is the commit's
  message, "reconstructed from git history".

The last specification of each claim's chain (its registration, or its last amendment) is the
exact specification in code today, so ``attnlab claims --check`` passes on the data it was built
from. Dates: ``date`` is the commit's committer date, ``authored`` its author date; which of two
commits came first is their ancestry (a rebase rewrote committer dates: two commits a second apart
may have been written an hour apart), and only for commits on parallel branches their committer
dates. Nothing is guessed beyond this: every date says how it was found.

When: data/claims_registry.json was made by this script, and re-running it is how the registry is
rebuilt when the file is lost or unreadable (``attnlab claims`` names it then). A deliberate change of a
claim's specification is an amendment (``attnlab claims --amend ID --why ...``), not a re-run.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

DATA_PATHS = ("data/ch1_case.json", "data/failure_symptoms.json", "data/head_portrait.json", "data/lab_book")
JUDGED = ("PASS", "FAIL", "INCONCLUSIVE")
PARAM_INPUT = re.compile(r"(^|_)(sesoi|tol|margin|threshold|bound)")
NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?|inf"
RECON = "reconstructed from git history"
AUTHORED: dict[str, str] = {}  # commit -> its author date (a rebase rewrites committer dates, not these)


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


# ------------------------------------------------------------------ the committed records
def history() -> list[tuple[str, str, str, str, list[dict]]]:
    """(commit, date, message, path, claims) for each new version of a committed claims file, parents first
    (date: the commit's committer date; :data:`AUTHORED` keeps its author date)."""
    commits = git("rev-list", "--reverse", "--date-order", "HEAD", "--", *DATA_PATHS).split()
    seen, out = set(), []
    for c in commits:
        date, authored, msg = git("show", "-s", "--format=%cI%x00%aI%x00%B", c).split("\x00", 2)
        AUTHORED[c] = authored.strip()
        for line in git("ls-tree", "-r", c, "--", *DATA_PATHS).splitlines():
            info, path = line.split("\t", 1)
            sha = info.split()[2]
            if not path.endswith(".json") or (path, sha) in seen:
                continue
            seen.add((path, sha))
            try:
                doc = json.loads(git("cat-file", "blob", sha))
            except json.JSONDecodeError:
                continue
            claims = doc.get("claims") if isinstance(doc, dict) else None
            if isinstance(claims, list):
                out.append((c, date.strip(), msg.strip(), path, [x for x in claims if isinstance(x, dict)]))
    return out


def verdict(c: dict) -> str | None:
    v = c.get("verdict")
    if v:
        return v
    p = c.get("pass")
    return "PASS" if p is True else "FAIL" if p is False else None


def _num(s: str) -> float:
    return float(s)


def observed(c: dict) -> dict:
    """The specification a committed record shows: its ``spec`` when it has one, else what its rule,
    detail text and parameter inputs show (``reconstructed``), else its criterion in words."""
    if c.get("spec"):
        from attnlab.claims_registry import spec_key

        return spec_key(c["spec"])
    rule = c.get("rule")
    if not rule:
        text = str(c.get("expected") or "")
        text = re.sub(r"±\s*(" + NUM + r")", "± #", text)  # a tolerance read off the seeds' spread
        text = re.sub(r"\((" + NUM + r")\)", "(#)", text)
        text = re.sub(r"tol (" + NUM + r")", "tol #", text)
        text = text.replace(" — one seed: no spread", "")  # a note on the data, not the criterion
        return {"rule": None, "criterion": text, "reconstructed": True}
    detail = str(c.get("detail") or c.get("expected") or "")
    params: dict = {}
    if rule == "effect":
        if "stated > 0" in detail:
            params["direction"] = 1
        elif "stated < 0" in detail:
            params["direction"] = -1
        if m := re.search(r"smallest effect of interest (" + NUM + ")", detail):
            params["sesoi"] = _num(m.group(1))
    elif rule == "value":
        if m := re.search(r"^book (" + NUM + ");", detail):
            params["book"] = _num(m.group(1))
        if m := re.search(r"the book's ± (" + NUM + ")", detail):
            params["tol"] = _num(m.group(1))
    elif rule in ("band", "every"):
        pat = (
            r"the book's \[(" + NUM + "), (" + NUM + r")\]"
            if rule == "band"
            else r"inside \[(" + NUM + "), (" + NUM + r")\]"
        )
        if m := re.search(pat, detail):
            params["lo"], params["hi"] = _num(m.group(1)), _num(m.group(2))
    elif rule == "equivalence":
        if m := re.search(r"vs ±(" + NUM + ")", detail):
            params["margin"] = _num(m.group(1))
    shown = {
        f"input:{k}": v
        for k, v in (c.get("inputs") or {}).items()
        if PARAM_INPUT.search(k) and isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    out = {"rule": rule, "params": params, "reconstructed": True}
    if shown:
        out["shown"] = shown
    return out


def _close(a, b) -> bool:
    from attnlab.stats import param_value

    a, b = param_value(a), param_value(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if a == b:
            return True
        return f"{float(a):.3g}" == f"{float(b):.3g}" or abs(a - b) <= 1e-3 * max(abs(a), abs(b))
    return a == b


def changes(old: dict, new: dict) -> list[str]:
    """What changed between two observed specifications, comparing only what both show."""
    if old.get("rule") != new.get("rule"):
        what = [f"rule: {old.get('rule') or 'criterion in words'} → {new.get('rule') or 'criterion in words'}"]
        if old.get("rule") is None and old.get("criterion"):
            what.append(f"criterion was: {old['criterion']}")
        return what
    if old.get("rule") is None:
        a, b = old.get("criterion"), new.get("criterion")
        return [f"criterion: {a} → {b}"] if a and b and a != b else []
    if old.get("rule") == "all_of" and "parts" in old and "parts" in new:
        pa, pb = old["parts"], new["parts"]
        if len(pa) != len(pb):
            return [f"parts: {len(pa)} → {len(pb)}"]
        return [f"parts[{i}].{w}" for i, (x, y) in enumerate(zip(pa, pb)) for w in changes(x, y)]
    out = []
    pa, pb = old.get("params") or {}, new.get("params") or {}
    out += [f"params.{k}: {pa[k]} → {pb[k]}" for k in sorted(set(pa) & set(pb)) if not _close(pa[k], pb[k])]
    sa, sb = old.get("shown") or {}, new.get("shown") or {}
    out += [f"{k}: {sa[k]} → {sb[k]}" for k in sorted(set(sa) & set(sb)) if not _close(sa[k], sb[k])]
    if "reads" in old and "reads" in new and old["reads"] != new["reads"]:
        out.append(f"reads: {old['reads']} → {new['reads']}")
    return out


# ------------------------------------------------------------------ registration in src/
def _token(cid: str, src: str) -> tuple[str, str] | None:
    """The text whose first appearance in src/ registers ``cid``: the literal, or an f-string's fixed start."""
    for q in ('"', "'"):
        if f"{q}{cid}{q}" in src:
            return f"{q}{cid}{q}", "the claim id as a string literal"
    for m in re.finditer(r"""f(["'])([A-Za-z0-9_.]+)\{""", src):
        start = m.group(2)
        if cid.startswith(start) and len(start) >= 4:
            return m.group(0), "the fixed start of the f-string that builds the id"
    return None


def first_added(tokens: dict[str, str]) -> dict[str, tuple[str, str, str]]:
    """For each claim, the first commit (date order, parents first) adding a src/**.py line holding its token."""
    log = git(
        "log", "--reverse", "--date-order", "-p", "--no-merges", "--format=@@@COMMIT %H %cI %aI", "--", "src/*.py"
    )
    found: dict[str, tuple[str, str, str]] = {}
    commit = date = path = ""
    waiting = dict(tokens)
    for line in log.splitlines():
        if line.startswith("@@@COMMIT "):
            _, commit, date, AUTHORED[commit] = line.split(" ", 3)
        elif line.startswith("+++ b/"):
            path = line[6:]
        elif line.startswith("+") and not line.startswith("+++"):
            for cid, tok in list(waiting.items()):
                if tok in line:
                    found[cid] = (commit, date, path)
                    del waiting[cid]
        if not waiting:
            break
    return found


def before(a: str, b: str, dates: dict[str, str]) -> bool:
    """Commit ``a`` strictly precedes ``b``: an ancestor of it (or, when neither contains the other, earlier)."""
    if a == b:
        return False
    if subprocess.run(["git", "merge-base", "--is-ancestor", a, b], cwd=ROOT).returncode == 0:
        return True
    if subprocess.run(["git", "merge-base", "--is-ancestor", b, a], cwd=ROOT).returncode == 0:
        return False
    return dates[a] < dates[b]


def _why(msg: str) -> str:
    first = msg.splitlines()[0] if msg else ""
    return f"{first} ({RECON}: the commit's message)"


# ------------------------------------------------------------------ the registry
def build() -> dict:
    from attnlab import claims_registry as R
    from attnlab.claims_registry import KIND, spec_key
    from attnlab.cli.claims import current_claims

    now = {c["id"]: c for c in current_claims(ROOT / "data")}
    src = "\n".join((ROOT / p).read_text(encoding="utf-8") for p in git("ls-files", "src/*.py").split())
    tokens, token_how = {}, {}
    for cid in now:
        t = _token(cid, src)
        if t:
            tokens[cid], token_how[cid] = t
    registered = first_added(tokens)
    hist = history()
    dates = {c: d for c, d, *_ in hist}
    for c, d, _ in registered.values():
        dates[c] = d
    entries = {}
    for cid, claim in now.items():
        first = None  # (commit, date, path, verdict)
        state = None  # the observed spec the claim holds now in history
        per_file: dict[str, dict] = {}
        chain: list[dict] = []  # amendments
        last_verdict = None
        first_spec = first_seen = None
        for commit, date, msg, path, claims in hist:
            rec = next((x for x in claims if x.get("id") == cid), None)
            if rec is None:
                continue
            v = verdict(rec)
            obs = observed(rec)
            if first is None and v in JUDGED:
                first = (commit, date, path, v)
                first_spec = obs
            if state is None:
                state = first_seen = obs
            elif obs != per_file.get(path) and (what := changes(state, obs)):
                chain.append(
                    {
                        "date": date,
                        "authored": AUTHORED.get(commit),
                        "commit": commit,
                        "what": "; ".join(what),
                        "from": state,
                        "spec": obs,
                        "verdict_before": last_verdict,
                        "why": _why(msg),
                        "how": f"{RECON}: the claim's record in {path} changed at this commit",
                    }
                )
                state = obs
            per_file[path] = obs
            last_verdict = v
        reg = registered.get(cid)
        code = claim.get("spec")
        e: dict = R.described({**claim, "id": cid})
        e["registered"] = (
            {
                "commit": reg[0],
                "date": reg[1],
                "authored": AUTHORED.get(reg[0]),
                "how": f"first commit adding a line of {reg[2]} (src/) with {token_how[cid]} {tokens[cid]!r}",
            }
            if reg
            else {"commit": None, "date": None, "how": "the id is not found in src/'s history"}
        )
        e["first_data"] = (
            {
                "commit": first[0],
                "date": first[1],
                "authored": AUTHORED.get(first[0]),
                "path": first[2],
                "verdict": first[3],
                "how": "first commit whose committed JSON holds a judged verdict (PASS/FAIL/INCONCLUSIVE) for it",
            }
            if first
            else {"commit": None, "date": None, "path": None, "verdict": None, "how": "never judged in a commit"}
        )
        if reg and first:
            e["post_hoc"] = not before(reg[0], first[0], dates)
        else:
            e["post_hoc"] = bool(first)  # no registration found: not shown to precede its data
        if not chain:
            e["spec"] = spec_key(code)
            e["spec_how"] = (
                "the specification in code now; its records since the first data print no change of rule or "
                "parameters (a parameter a record does not print can have changed unseen)"
            )
        else:
            e["spec"] = first_spec or first_seen
            e["spec_how"] = f"as its first {'judged ' if first_spec else ''}record shows it ({RECON})"
            chain[-1]["spec"] = spec_key(code)
            chain[-1]["spec_how"] = (
                "the specification in code now: the records after this change print no other change of rule or "
                "parameters (a parameter a record does not print can have changed unseen)"
            )
        e["amendments"] = chain
        entries[cid] = e
    return {
        "kind": KIND,
        "about": (
            "每条论断的规格（规则与参数）、登记与首次有数据的时间、以及每次修订；由 scripts/backfill_registry.py 从 git "
            "历史重建，此后每次修改规格都在这里加一条修订。/ Each claim's specification (rule and parameters), when it "
            "was registered and first judged on data, and every amendment; back-filled from git history by "
            "scripts/backfill_registry.py, and from now on one amendment per change of specification."
        ),
        "method": (__doc__ or "").strip(),
        "claims": dict(sorted(entries.items())),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "data" / "claims_registry.json"))
    args = ap.parse_args(argv)
    from attnlab.claims_registry import count_text, counts
    from attnlab.io import write_json

    reg = build()
    write_json(Path(args.out), reg)
    print(args.out)
    print(count_text(counts(reg, reg["claims"])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
