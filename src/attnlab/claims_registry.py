"""The registry of claims: each claim's specification, when it was fixed, and every change since.

data/claims_registry.json holds, for every claim id (the lab book's and the case's), its
statement, the chapter's words, kind, rule and **specification**, and the history of that
specification:

  spec            the specification as registered: ``{"rule", "params", "reads"}`` (an all_of:
                  ``{"rule": "all_of", "parts": [...]}``). "The specification in code" is exactly
                  what the judge called its rule of :mod:`attnlab.stats` with: the rule's name, its
                  parameters (tolerance ``tol``, SESOI ``sesoi`` and ``direction``, band ``lo``/``hi``,
                  ``margin``, the book's value ``book``) and the input it judged (``reads``; None when
                  the judge derived the numbers from its inputs). Every claim record carries it
                  (attnlab.verdicts.claim_spec, field ``spec``); the per-seed numbers are not part of it.
  registered      {commit, date, how}: when the claim id first appeared in src/
  first_data      {commit, date, path, verdict, how}: the first committed JSON holding a judged
                  verdict (PASS / FAIL / INCONCLUSIVE) for it
  post_hoc        registered in the same commit as its first data, or after it (事后); a claim
                  amended after its first data is post hoc as well (:func:`amended_after_data`)
  amendments      one entry per change of rule, parameters or kind: {date, commit, what, from, spec, why,
                  how, verdict_before}, and {kind_from, kind} when the kind changes (book → question …);
                  ``spec`` is the specification from then on, ``kind`` the kind

The specification a claim is held to is its registration with every amendment applied
(:func:`effective_spec`); ``attnlab claims --check`` refuses any claim whose specification in code
differs from it, and any claim missing from the registry. A change of specification is therefore
one new amendment in the registry, in the same commit as the code that makes it.

Specifications reconstructed from history (before claims carried ``spec``) hold only the parameters
their records show (``"reconstructed": true``); the rest are taken as unchanged. One registered as
a criterion in words (before the rules of attnlab.stats) has ``rule`` None and ``criterion``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

REGISTRY = Path("data") / "claims_registry.json"
KIND = "claims_registry"
POST_HOC = "事后 / post hoc"
BEFORE = "事前 / before data"

# the values a registry's spec is compared on (the numbers judged are data, not specification)
_DATA_KEYS = ("values", "ok")


def spec_key(spec: Mapping[str, Any] | None) -> dict | None:
    """A specification without the numbers it judged: rule, params, reads (parts for an all_of)."""
    if spec is None:
        return None
    if spec.get("rule") == "all_of":
        return {"rule": "all_of", "parts": [spec_key(p) for p in spec.get("parts") or []]}
    return {k: v for k, v in spec.items() if k not in _DATA_KEYS}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a == b or (math.isfinite(a) and math.isfinite(b) and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def differences(registered: Mapping[str, Any] | None, now: Mapping[str, Any] | None, where: str = "") -> list[str]:
    """What differs between two specifications, in words ("params.sesoi: 0.1 → 0.085")."""
    a, b = spec_key(registered), spec_key(now)
    if a is None or b is None:
        return [] if a == b else [f"{where or 'spec'}: {a} → {b}"]
    out = []
    if a.get("rule") != b.get("rule"):
        return [f"{where}rule: {a.get('rule')} → {b.get('rule')}"]
    if a.get("rule") == "all_of":
        pa, pb = a.get("parts") or [], b.get("parts") or []
        if len(pa) != len(pb):
            return [f"{where}parts: {len(pa)} → {len(pb)}"]
        for i, (x, y) in enumerate(zip(pa, pb)):
            out += differences(x, y, f"{where}parts[{i}].")
        return out
    for k in sorted(set(a) | set(b)):
        if k == "params":
            pa, pb = a.get("params") or {}, b.get("params") or {}
            out += [
                f"{where}params.{p}: {pa.get(p, '—')} → {pb.get(p, '—')}"
                for p in sorted(set(pa) | set(pb))
                if not _same(pa.get(p), pb.get(p))
            ]
        elif k != "reconstructed" and not _same(a.get(k), b.get(k)):
            out.append(f"{where}{k}: {a.get(k)} → {b.get(k)}")
    return out


def effective_spec(entry: Mapping[str, Any]) -> dict | None:
    """The specification a claim is held to: its registration with every amendment applied."""
    spec = entry.get("spec")
    for a in entry.get("amendments") or []:
        spec = a.get("spec")
    return spec


def effective_kind(entry: Mapping[str, Any]) -> str | None:
    """The kind a claim is held to: its registration's, or the latest amendment that changed it."""
    kind = entry.get("kind")
    for a in entry.get("amendments") or []:
        kind = a.get("kind", kind)
    return kind


def load(path: Path) -> dict:
    """The registry at ``path``, checked against its schema (:class:`attnlab.schemas.ClaimsRegistry`: entries,
    specifications and amendments) before anything uses it: one line naming the file, the field and the fix."""
    from .errors import AttnlabError
    from .schemas import load as load_checked

    return load_checked("claims_registry", Path(path), error=AttnlabError)


# the words a registration fixes beside its specification: changing them is an amendment too
WORDS = ("section", "statement", "book")


def effective_words(entry: Mapping[str, Any]) -> dict:
    """The section, statement and chapter words a claim is held to: its registration's, with every
    amendment that changed them applied."""
    words = {k: entry.get(k) for k in WORDS}
    for a in entry.get("amendments") or []:
        words.update(a.get("words") or {})
    return words


def withdrawn(entry: Mapping[str, Any]) -> bool:
    """Whether an amendment withdrew the claim (it stays in the registry, with its history)."""
    return any(a.get("withdrawn") for a in entry.get("amendments") or [])


def _word_differences(entry: Mapping[str, Any], claim: Mapping[str, Any]) -> list[str]:
    held, now = effective_words(entry), described(claim)
    return [f"{k}: {_short(held[k])} → {_short(now[k])}" for k in WORDS if held[k] != now[k]]


def _short(v: Any, n: int = 40) -> str:
    text = repr(v) if not isinstance(v, str) else v
    return text if len(text) <= n else text[: n - 1] + "…"


def check(registry: Mapping[str, Any], claims: Iterable[Mapping[str, Any]], complete: bool = True) -> list[str]:
    """One line per claim whose registration (specification, kind, section, statement, the chapter's
    words) differs in code from its registration plus amendments, per claim missing from the
    registry, and (``complete``: ``claims`` are every claim judged now) per registered claim that no
    entry judges any more and no amendment withdrew. Empty: every claim is held to what was registered."""
    entries = registry.get("claims") or {}
    out = []
    seen = set()
    for c in claims:
        cid = c.get("id")
        seen.add(cid)
        e = entries.get(cid)
        if e is None:
            out.append(f"{cid}: not in the registry; register it (its spec: {spec_key(c.get('spec'))})")
            continue
        if c.get("spec") is None:
            out.append(f"{cid}: its record carries no spec; judge it again with `attnlab report`")
            continue
        diff = differences(effective_spec(e), c["spec"])
        kind = effective_kind(e)
        if kind is not None and c.get("kind", "book") != kind:
            diff.append(f"kind: {kind} → {c.get('kind', 'book')}")
        if diff:
            out.append(f"{cid}: the spec in code differs from the registered one: {'; '.join(diff)}")
        words = _word_differences(e, c)
        if words:
            out.append(f"{cid}: the words in code differ from the registered ones: {'; '.join(words)}")
    if complete:
        out += [
            f"{cid}: registered, but no entry judges it now; restore it, or withdraw it with a reason "
            f"(`attnlab claims --withdraw {cid} --why ...`)"
            for cid, e in entries.items()
            if cid not in seen and not withdrawn(e)
        ]
    return out


def _fill(registered: Mapping[str, Any], now: Mapping[str, Any]) -> dict | None:
    """The registered spec with the numbers of today's claim (``now``, its record's spec with the
    inputs resolved): parameters a reconstruction does not show are taken from today's. None when the
    two have different shapes (an all_of of other parts): nothing to judge."""
    if registered.get("rule") is None:
        return None
    if registered.get("rule") == "all_of":
        pr, pn = registered.get("parts") or [], now.get("parts") or []
        if now.get("rule") != "all_of" or len(pr) != len(pn):
            return None
        parts = [_fill(a, b) for a, b in zip(pr, pn)]
        return None if any(p is None for p in parts) else {"rule": "all_of", "parts": parts}
    if now.get("rule") == "all_of":
        return None
    params = dict(now.get("params") or {}) if registered.get("rule") == now.get("rule") else {}
    params.update(registered.get("params") or {})
    out = {"rule": registered["rule"], "params": params}
    for k in _DATA_KEYS:
        if k in now:
            out[k] = now[k]
    return out


def _resolved(spec: Mapping[str, Any], inputs: Mapping[str, Any]) -> dict:
    """A claim's spec with each part's numbers (read from its input, or kept in the spec)."""
    if spec.get("rule") == "all_of":
        return {**spec, "parts": [_resolved(p, inputs) for p in spec.get("parts") or []]}
    out = dict(spec)
    if spec.get("reads") is not None and "values" not in spec:
        out["values"] = [float(x) for x in inputs.get(spec["reads"]) or [] if x is not None]
    return out


def registered_verdict(entry: Mapping[str, Any], claim: Mapping[str, Any]) -> str | None:
    """The verdict of the claim's *registered* specification on today's numbers: the same rule with
    the registered parameters (None: nothing to judge, e.g. a criterion registered in words)."""
    from .stats import judge_spec

    reg, now = entry.get("spec"), claim.get("spec")
    if not reg or not now:
        return None
    inputs = claim.get("inputs") or {}
    filled = _fill(reg, _resolved(now, inputs))
    if filled is None:
        return None
    if "values" not in filled and reg.get("reads") in inputs:  # today's rule reads nothing (e.g. reported)
        filled["values"] = [float(x) for x in inputs[reg["reads"]] or [] if x is not None]
    try:
        return judge_spec(filled).verdict
    except (ValueError, TypeError):
        return None


def amended_after_data(entry: Mapping[str, Any]) -> bool:
    """Whether any amendment of ``entry`` came after its first judged data (a specification fixed, in
    part, by someone who had seen the numbers)."""
    seen = (entry.get("first_data") or {}).get("date")
    return bool(seen) and any(a.get("date", "") > seen for a in entry.get("amendments") or [])


def status(entry: Mapping[str, Any] | None) -> str:
    """ "before" (fixed before its data and never changed after it), "post_hoc" (registered with or
    after its data, or amended after it) or "unregistered"."""
    if entry is None:
        return "unregistered"
    return "post_hoc" if entry.get("post_hoc") or amended_after_data(entry) else "before"


def post_hoc_why(entry: Mapping[str, Any]) -> str:
    """Why a post hoc claim is one: registered with or after its data, or amended after it."""
    if entry.get("post_hoc"):
        return "与数据同时或之后登记 / registered with or after its data"
    return "数据之后修订 / amended after its data"


def mark(entry: Mapping[str, Any] | None, claim: Mapping[str, Any]) -> str:
    """The registry column of a report: 事前 / 事后, the amendments, and the registered spec's verdict
    beside the current one when they could differ."""
    if entry is None:
        return "未登记 / unregistered"
    amended = len(entry.get("amendments") or [])
    post_hoc = status(entry) == "post_hoc"
    words = [f"{POST_HOC}（{post_hoc_why(entry)}）" if post_hoc else BEFORE]
    if amended:
        words.append(f"修订 {amended} 次 / amended {amended}×")
    if post_hoc or amended:
        v = registered_verdict(entry, claim)
        words.append(f"登记的规格判定 / registered spec: {v}" if v else "登记时只有文字标准 / registered in words only")
    last = (entry.get("amendments") or [{}])[-1]
    if amended > 1 and last.get("from"):  # the specification in force before the latest amendment, too
        v = registered_verdict({"spec": last["from"]}, claim)
        if v:  # nothing to judge for a criterion in words
            words.append(f"末次修订前的规格判定 / spec before the latest amendment: {v}")
    if last.get("kind_from"):
        words.append(f"原类型 / kind was: {last['kind_from']}")
    earlier = [s for a in entry.get("amendments") or [] for s in a.get("recovered") or [] if s.get("spec")]
    if earlier:  # specifications the code held before its first record, recovered from its history
        shown = [
            f"{_spec_words(s['spec'])} ({s['commit'][:7]}): {registered_verdict(s, claim) or '—'}" for s in earlier
        ]
        words.append("代码史中的早期规格判定 / earlier specs in the code's history: " + " → ".join(shown))
    return "；".join(words)


def _spec_words(spec: Mapping[str, Any]) -> str:
    """A specification in a few words: ``value book=4.0 tol=0.59``."""
    params = " ".join(
        f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in (spec.get("params") or {}).items()
    )
    return f"{spec.get('rule')} {params}".strip()


def counts(registry: Mapping[str, Any], ids: Iterable[str]) -> dict[str, int]:
    """How many of ``ids`` were fixed before their data (and never changed after it), post hoc (of which
    registered with or after their data, and registered before it but amended after), amended, unregistered."""
    entries = registry.get("claims") or {}
    out = {"before": 0, "post_hoc": 0, "registered_after": 0, "amended_after": 0, "amended": 0, "unregistered": 0}
    for cid in ids:
        e = entries.get(cid)
        out[status(e)] += 1
        if e is None:
            continue
        if e.get("post_hoc"):
            out["registered_after"] += 1
        elif amended_after_data(e):
            out["amended_after"] += 1
        if e.get("amendments"):
            out["amended"] += 1
    return out


def count_text(c: Mapping[str, int]) -> str:
    """The registry's headline: fixed before their data, after, amended."""
    text = (
        f"登记 / registration: {c['before']} 条事前定下未改 / fixed before data, unchanged; {c['post_hoc']} 条事后 / "
        f"post hoc（{c['registered_after']} 条登记不早于数据 / registered with or after data, {c['amended_after']} 条"
        f"数据后修订 / amended after data）; {c['amended']} 条修订过 / amended"
    )
    return text + (f", {c['unregistered']} 条未登记 / unregistered" if c.get("unregistered") else "")


def amend(registry: dict, claim: Mapping[str, Any], why: str, date: str, committed_verdict: str | None = None) -> dict:
    """Append to ``registry`` one amendment: the claim's specification in code replaces the one it was
    held to (``why`` in words; its commit is the one that adds the entry). Returns the amendment;
    ValueError when nothing differs or the claim is not registered.

    A rule of attnlab.stats whose code changes moves a verdict under the same specification: with
    ``committed_verdict`` (the verdict its committed record holds) differing from the claim's verdict
    now, the amendment records that move (``what``: the verdict before and after; ``spec`` unchanged)."""
    cid = claim["id"]
    e = (registry.get("claims") or {}).get(cid)
    if e is None:
        raise ValueError(f"{cid} is not registered: register it first (attnlab claims --register {cid})")
    if not why.strip():
        raise ValueError("say why the specification changes (--why)")
    before = effective_spec(e)
    diff = differences(before, claim.get("spec"))
    kind_before, kind = effective_kind(e), claim.get("kind", "book")
    if kind_before != kind:
        diff.append(f"kind: {kind_before} → {kind}")
    held, words = effective_words(e), {k: v for k, v in described(claim).items() if k in WORDS}
    changed_words = {k: words[k] for k in WORDS if held[k] != words[k]}
    spec_changed = bool(diff)
    diff += _word_differences(e, claim)
    now = claim.get("verdict")
    moved = committed_verdict is not None and committed_verdict != now
    if not diff and not moved:
        raise ValueError(
            f"{cid}: its specification, kind and words in code are the registered ones and its verdict is unchanged; "
            "nothing to amend"
        )
    held_spec = {**e, "spec": before, "amendments": []}
    what = "; ".join(diff) if diff else f"the rule's code (same specification): verdict {committed_verdict} → {now}"
    entry = {
        "date": date,
        "commit": None,
        "what": what,
        "from": before,
        "spec": spec_key(claim.get("spec")) if spec_changed else before,
        "verdict_before": committed_verdict if moved else registered_verdict(held_spec, claim),
        **({"kind_from": kind_before, "kind": kind} if kind_before != kind else {}),
        **({"words_from": {k: held[k] for k in changed_words}, "words": changed_words} if changed_words else {}),
        "why": why.strip(),
        "how": "recorded by `attnlab claims --amend` with the change (its commit is the one that adds this entry)",
    }
    e.setdefault("amendments", []).append(entry)
    return entry


def described(claim: Mapping[str, Any]) -> dict:
    """What a registry entry says a claim is: its id, kind, section, statement, the book's words, its
    rule and the names of its inputs (the specification itself is ``spec``)."""
    return {
        "id": claim["id"],
        "kind": claim.get("kind"),
        "section": claim.get("section"),
        "statement": claim.get("statement"),
        "book": claim.get("book"),
        "rule": claim.get("rule"),
        "inputs": list((claim.get("inputs") or {}).keys()),
    }


def register(registry: dict, claim: Mapping[str, Any], date: str) -> dict:
    """Register a new claim with its specification in code (before it is judged on committed data)."""
    cid = claim["id"]
    entries = registry.setdefault("claims", {})
    if cid in entries:
        raise ValueError(f"{cid} is registered already; change its specification with --amend")
    entries[cid] = {
        **described(claim),
        "registered": {
            "commit": None,
            "date": date,
            "how": "recorded by `attnlab claims --register` (its commit is the one that adds this entry)",
        },
        "first_data": {
            "commit": None,
            "date": None,
            "path": None,
            "verdict": None,
            "how": "not judged on committed data yet",
        },
        "post_hoc": False,
        "spec": spec_key(claim.get("spec")),
        "spec_how": "the specification in code when it was registered",
        "amendments": [],
    }
    return entries[cid]


def for_reports(data: Path | None = None) -> dict:
    """The registry the reports mark their claims with: ``data``/claims_registry.json, else the
    repository's; an empty one when there is none (every claim then reads "unregistered")."""
    from .corpus import REPO_ROOT

    for p in ([Path(data) / REGISTRY.name] if data is not None else []) + [REPO_ROOT / REGISTRY]:
        if p.is_file():
            return load(p)
    return {"kind": KIND, "claims": {}}


def find(root: Path, data: Path | None = None) -> Path:
    """Where the registry of a data folder is (``data``/claims_registry.json, default root/data)."""
    return (Path(data) if data is not None else Path(root) / "data") / REGISTRY.name


def withdraw(registry: dict, cid: str, why: str, date: str) -> dict:
    """Append an amendment that withdraws a registered claim no entry judges any more (its
    registration and history stay; ``check`` no longer asks for it)."""
    e = (registry.get("claims") or {}).get(cid)
    if e is None:
        raise ValueError(f"{cid} is not registered: nothing to withdraw")
    if withdrawn(e):
        raise ValueError(f"{cid} is withdrawn already")
    if not why.strip():
        raise ValueError("say why the claim is withdrawn (--why)")
    spec = effective_spec(e)
    entry = {
        "date": date,
        "commit": None,
        "what": "withdrawn",
        "from": spec,
        "spec": spec,
        "verdict_before": None,
        "withdrawn": True,
        "why": why.strip(),
        "how": "recorded by `attnlab claims --withdraw` (its commit is the one that adds this entry)",
    }
    e.setdefault("amendments", []).append(entry)
    return entry


# ---- append only: the registry's own history -------------------------------------------------
#
# A registration or an amendment, once committed, is never edited, reordered or removed: the
# registry grows only by new claims and new amendments. From the version that carries ``sealed``
# on, each committed version is compared with the one before it, and the file on disk with the last
# committed one. What may still change: a claim's first data may move earlier (a better reading of
# the history finds older inputs), never later, and a claim may become post hoc, never stop being one
# — both only ever make a specification look less fixed beforehand.

# what a registration fixes once committed
FIXED = ("id", "kind", "section", "statement", "book", "rule", "inputs", "registered", "spec", "spec_how")


def rewrites(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What ``new`` (a later version of a registry) changed of ``old`` other than by adding."""
    out = []
    if old.get("sealed") is not None and new.get("sealed") != old.get("sealed"):
        out.append(f"sealed: {old.get('sealed')} → {new.get('sealed')}")
    olds, news = old.get("claims") or {}, new.get("claims") or {}
    for cid, o in olds.items():
        n = news.get(cid)
        if not isinstance(n, Mapping) or not isinstance(o, Mapping):
            if o != n:
                out.append(f"{cid}: its registration was removed or replaced")
            continue
        out += [f"{cid}: its registered {k} was edited" for k in FIXED if o.get(k) != n.get(k)]
        oa, na = list(o.get("amendments") or []), list(n.get("amendments") or [])
        if na[: len(oa)] != oa:
            i = next((i for i, a in enumerate(oa) if i >= len(na) or na[i] != a), len(oa))
            out.append(f"{cid}: amendment {i + 1} of {len(oa)} was edited, reordered or removed")
        was, now = (o.get("first_data") or {}).get("date"), (n.get("first_data") or {}).get("date")
        if was and (not now or now > was):
            out.append(f"{cid}: its first data moved later ({was} → {now})")
        if o.get("post_hoc") and not n.get("post_hoc"):
            out.append(f"{cid}: it stopped being post hoc")
    return out


def git_output(root: Path, *args: str) -> str:
    """The standard output of ``git -C root args``; CalledProcessError when git fails."""
    import subprocess

    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def history_problems(path: Path) -> tuple[list[str], str]:
    """(problems, what was checked): every rewrite of a sealed registry in its committed history and in
    the file on disk. Without git history (a wheel, an export) nothing is checked, and the second
    value says so."""
    import json
    import subprocess

    path = Path(path).resolve()
    try:
        root = Path(git_output(path.parent, "rev-parse", "--show-toplevel").strip())
        rel = path.relative_to(root).as_posix()
        log = git_output(root, "log", "--reverse", "--format=%H", "--", rel).split()
        shallow = git_output(root, "rev-parse", "--is-shallow-repository").strip() == "true"
    except (OSError, subprocess.SubprocessError, ValueError):
        return [], "历史未核对：这里没有 git 历史 / history not checked: no git history here"
    versions = []
    for commit in log:
        try:
            versions.append((commit[:10], json.loads(git_output(root, "show", f"{commit}:{rel}"))))
        except (subprocess.SubprocessError, ValueError, RecursionError):
            continue  # the file was deleted in that commit, or is not JSON there: nothing registered
    try:
        versions.append(("工作区 / working tree", json.loads(path.read_text(encoding="utf-8"))))
    except (OSError, ValueError, RecursionError):
        pass  # load() reports an unreadable registry itself
    start = next((i for i, (_, doc) in enumerate(versions) if isinstance(doc, dict) and doc.get("sealed")), None)
    if start is None:
        return [], "历史未核对：登记表尚未封存 / history not checked: the registry is not sealed"
    problems = []
    for (_, old), (where, new) in zip(versions[start:], versions[start + 1 :]):
        if not isinstance(new, dict):
            problems.append(f"{where}: the registry is not a JSON object")
            continue
        problems += [f"{where}: {p}" for p in rewrites(old, new)]
    checked = len(versions) - start - 1
    note = f"历史 / history: 封存以来 {checked} 次改动只增不改 / {checked} change(s) since it was sealed"
    if shallow:
        note += "（浅克隆，只核对了能看到的提交 / shallow clone: only the commits present)"
    return problems, note
