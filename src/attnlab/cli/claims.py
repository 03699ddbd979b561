"""``attnlab claims``: the registry of claims (data/claims_registry.json) and its check.

``attnlab claims --check`` judges every claim again from the committed JSON (the lab book's
entries, which bring in the case, the head portrait and the failures) and compares each claim's
specification in code (attnlab.verdicts.claim_spec) with its registration plus amendments
(attnlab.claims_registry). It exits 1 naming every claim that differs or is missing from the
registry, 0 otherwise. Without ``--check`` it prints the registry's counts and its post hoc claims.
"""

from __future__ import annotations

from pathlib import Path


def add_parser(sub):
    p = sub.add_parser(
        "claims",
        help="论断登记表：每条论断的规格、登记时间与修订；--check 核对代码与登记 / the registry of claims; --check "
        "compares the code with it",
        description="每条论断（实验手册与案例）在 data/claims_registry.json 里登记：陈述、书中原话、类型、规则及其参数"
        "（容差、SESOI、区间、margin），登记的日期与提交、首次有数据的日期与提交，以及每次修订（日期、提交、改了什么、为什么）。"
        "--check 从提交的 JSON 重新判定每条论断，代码中的规格与“登记 + 修订”不一致、或未登记的，逐条列出并以 1 退出。"
        "\nEvery claim (lab book and case) is registered in data/claims_registry.json: statement, the "
        "chapter's words, kind, rule and its parameters (tolerance, SESOI, band, margin), when it was registered "
        "and first judged on data, and every amendment (date, commit, what, why). --check judges every claim "
        "again from the committed JSON and exits 1 naming each claim whose specification in code differs from its "
        "registration plus amendments, or that is not registered.",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="核对代码中的规格与登记表，不一致则以 1 退出 / exit 1 unless every claim's spec in code is the registered one",
    )
    p.add_argument(
        "--amend",
        nargs="+",
        default=None,
        metavar="ID",
        help="把这些论断在代码中的新规格记为一条修订（需 --why）/ record each claim's new spec in code as one amendment "
        "(with --why)",
    )
    p.add_argument(
        "--register",
        nargs="+",
        default=None,
        metavar="ID",
        help="登记新论断（在它有数据之前）/ register new claims (before their data)",
    )
    p.add_argument(
        "--withdraw",
        nargs="+",
        default=None,
        metavar="ID",
        help="撤回不再判定的已登记论断（需 --why，登记与历史保留）/ withdraw registered claims no entry judges any more "
        "(with --why; the registration and its history stay)",
    )
    p.add_argument(
        "--confirm-plan",
        default=None,
        metavar="BUDGET",
        help="验证性一轮的计划草案（不登记、不训练）：每条书中论断在冻结规格下达到 80%% 功效要的新种子与代价，预算如 6h / "
        "draft the confirmatory round (nothing registered or trained): the fresh seeds each book claim needs for 80%% "
        "power under its frozen specification, and their price, within a budget such as 6h",
    )
    p.add_argument(
        "--confirm-register",
        default=None,
        metavar="BUDGET",
        help="登记验证性一轮的计划（写入 DATA/confirmatory_plan.json，已有则拒绝）；训练前先提交它 / register the "
        "confirmatory plan (written to DATA/confirmatory_plan.json, never replaced); commit it before training",
    )
    p.add_argument(
        "--confirm-train",
        action="store_true",
        help="训练已登记（且已提交）的计划，一个种子一批，可中断续跑；进度写入 DATA/confirmatory/progress.json / "
        "train the registered, committed plan one seed's batch at a time, resumable; progress in "
        "DATA/confirmatory/progress.json",
    )
    p.add_argument(
        "--confirm-judge",
        action="store_true",
        help="所有计划的运行都训完后，判定验证性一轮（只判一次），写入 DATA/confirmatory/verdicts.json / judge the round "
        "once every planned run is finished; verdicts in DATA/confirmatory/verdicts.json",
    )
    p.add_argument(
        "--confirm-status",
        action="store_true",
        help="验证性一轮的进度：每条计划中的论断的探索性判定、种子数、已训练的运行与验证性判定 / the round's progress: each "
        "planned claim's exploratory verdict, seeds, runs trained and confirmatory verdict",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="--confirm-train 的并行进程数（每个一线程）/ worker processes, one thread each",
    )
    p.add_argument(
        "--batches", type=int, default=None, help="--confirm-train 最多训练几批 / at most this many batches (seeds)"
    )
    p.add_argument("--why", default="", help="修订的原因 / why the specification changes")
    p.add_argument(
        "--registry",
        default=None,
        metavar="PATH",
        help="登记表（默认：DATA/claims_registry.json）/ the registry (default: DATA/claims_registry.json)",
    )
    p.add_argument(
        "--data",
        default="data",
        metavar="DATA",
        help="提交的数据文件夹（默认：data/）/ the folder of the committed data (default: data/)",
    )
    return p


def current_claims(data: Path) -> list[dict]:
    """Every claim of the lab book judged now, from the JSON in ``data`` (nothing is written)."""
    from ..errors import AttnlabError
    from ..lab import EXPERIMENTS
    from ..lab.labbook import judged_now

    data = Path(data)
    if not (data / "lab_book").is_dir():
        raise AttnlabError(f"--data {data}: no lab_book/ folder there; give the folder that holds lab_book.json")
    return [c for _, c in judged_now(EXPERIMENTS, data)]


def committed_verdicts(data: Path) -> dict[str, str]:
    """{claim id: the verdict its committed record in ``data``/lab_book holds} (before a re-judgement)."""
    from ..lab import EXPERIMENTS
    from ..lab.labbook import read_entries

    docs = read_entries(EXPERIMENTS, Path(data))
    return {c["id"]: c.get("verdict") for doc in docs.values() for c in doc.get("claims") or [] if "id" in c}


def main(args) -> int:
    from .. import claims_registry as R

    data = Path(args.data)
    if args.confirm_plan:
        return _confirm_plan(data, args.confirm_plan)
    if args.confirm_register:
        return _confirm_register(data, args.confirm_register)
    if args.confirm_judge:
        from ..lab.confirm import judge_round

        doc = judge_round(Path("."), data)
        print(
            f"验证性判定 / confirmatory verdicts: {len(doc['claims'])} claim(s) → {data / 'confirmatory/verdicts.json'}"
        )
        return _confirm_status(data)
    if args.confirm_status:
        return _confirm_status(data)
    if args.confirm_train:
        from ..lab.confirm import train

        if not 1 <= args.workers <= 256 or (args.batches is not None and args.batches < 1):
            from ..errors import UsageError

            raise UsageError("--workers must be 1–256 and --batches at least 1")
        train(Path("."), data, workers=args.workers, max_batches=args.batches)
        return 0
    path = Path(args.registry) if args.registry else R.find(Path("."), data)
    registry = R.load(path)
    claims = current_claims(data)
    if args.amend or args.register or args.withdraw:
        return _write(args, registry, path, claims)
    if args.check:
        problems = R.check(registry, claims)
        rewritten, history = R.history_problems(path)
        for line in problems:
            print(line)
        for line in rewritten:
            print(f"改写了已登记的历史 / rewrote the registered history: {line}")
        if problems:
            print(
                f"{len(problems)} 条论断与登记表不符 / claim(s) differ from the registry {path}: record each change "
                "as an amendment (`attnlab claims --amend ID --why ...`), register a new claim (`--register ID`), "
                "or restore the registered specification"
            )
        if rewritten:
            print(
                f"登记表只能追加：{len(rewritten)} 处改写 / the registry is append-only: {len(rewritten)} rewrite(s) of "
                f"what was committed; restore it (`git checkout -- {path}` or `git show` of the last good version) "
                "and record changes as new amendments"
            )
        if problems or rewritten:
            return 1
        print(f"{len(claims)} 条论断都符合登记 / claims match the registry {path}; {history}")
        return 0
    print(R.count_text(R.counts(registry, [c["id"] for c in claims])))
    print("事后登记或修订过的论断 / claims registered post hoc or amended:")
    for c in claims:
        e = registry["claims"].get(c["id"])
        if e is None or e.get("post_hoc") or e.get("amendments"):
            print(f"{c['id']}（现判定 / now {c['verdict']}）: {R.mark(e, c)}")
    return 0


def _write(args, registry: dict, path: Path, claims: list[dict]) -> int:
    """--register / --amend: one entry per claim and change, written atomically."""
    from datetime import datetime, timezone

    from .. import claims_registry as R
    from ..errors import AttnlabError
    from ..io import write_json

    by_id = {c["id"]: c for c in claims}
    committed = committed_verdicts(Path(args.data))
    unknown = [cid for cid in (args.register or []) + (args.amend or []) if cid not in by_id]
    judged = [cid for cid in args.withdraw or [] if cid in by_id]
    if judged:
        raise AttnlabError(f"{', '.join(judged)}: an entry still judges it; remove it from the code before withdrawing")
    if unknown:
        raise AttnlabError(f"no claim {', '.join(unknown)} in the lab book judged now; give ids its entries judge")
    date = datetime.now(timezone.utc).isoformat(timespec="seconds")
    done = []  # said once the registry is written: a failed write registers nothing
    try:
        for cid in args.withdraw or []:
            R.withdraw(registry, cid, args.why, date)
            done.append(f"{cid}: withdrawn")
        for cid in args.register or []:
            R.register(registry, by_id[cid], date)
            done.append(f"{cid}: registered")
        for cid in args.amend or []:
            a = R.amend(registry, by_id[cid], args.why, date, committed.get(cid))
            done.append(f"{cid}: amended ({a['what']})")
    except ValueError as e:
        raise AttnlabError(str(e)) from None
    from ..schemas import check

    check("claims_registry", registry, path, error=AttnlabError)  # what is written is what is read back
    try:
        write_json(path, registry)
    except OSError as e:
        raise AttnlabError(f"cannot write the registry {path} ({e.strerror or e}); nothing was registered") from None
    for line in done:
        print(line)
    return 0


def _confirm_plan(data: Path, budget: str) -> int:
    """--confirm-plan: the draft of the confirmatory round, printed (nothing written)."""
    from ..lab.confirm import CONFIRM_SEED, draft
    from ..lab.decide import parse_duration

    plan = draft(data, parse_duration(budget), frozen="(draft)")
    print(
        f"验证性一轮（草案）/ confirmatory round (draft): seeds from {CONFIRM_SEED}; budget "
        f"{plan.budget_core_s / 3600:.2f} core-h, bought {plan.spent_core_s / 3600:.2f} core-h"
    )
    for c in plan.claims:
        mark = "✓" if c.bought else "·"
        print(f"{mark} {c.claim} [{c.experiment}] seeds {c.seeds if c.seeds is not None else '—'}: {c.why}")
    bought = sum(c.bought for c in plan.claims)
    print(f"{bought} of {len(plan.claims)} book claims within the budget")
    from ..lab import EXPERIMENTS
    from ..lab.plan import book_speed, default_records_dir

    here = book_speed(EXPERIMENTS, default_records_dir(data.resolve().parent))  # a few seconds; prices stay
    if here.ratio:
        print(
            f"本机速度 / this machine's speed: x{here.ratio:.2f} the calibration machine's, measured just now: "
            f"the {plan.spent_core_s / 3600:.2f} core-h bought take about {plan.spent_core_s * here.ratio / 3600:.2f} "
            "core-h here (the prices above are the calibration's)"
        )
    return 0


def _confirm_register(data: Path, budget: str) -> int:
    """--confirm-register: freeze the specifications at HEAD (the registry must match the code and be
    committed) and write the plan; the user commits it before the first confirmatory run."""
    from .. import claims_registry as R
    from ..errors import AttnlabError
    from ..lab.confirm import draft, git, register
    from ..lab.decide import parse_duration

    root = Path(".")
    registry = R.find(root, data)
    problems = R.check(R.load(registry), current_claims(data))
    if problems:
        raise AttnlabError(f"the registry differs from the code ({problems[0]}): `attnlab claims --check` first")
    if git(root, "status", "--porcelain", "--", "src", str(registry)).strip():
        raise AttnlabError("the specifications are not committed (src/ or the registry has changes): commit them first")
    frozen = git(root, "rev-parse", "HEAD").strip()
    plan = draft(data, parse_duration(budget), frozen=frozen)
    path = register(plan, data)
    bought = sum(c.bought for c in plan.claims)
    print(
        f"登记 / registered {path}: specifications frozen at {frozen[:7]}; {bought} of {len(plan.claims)} book claims, "
        f"{plan.spent_core_s / 3600:.2f} of {plan.budget_core_s / 3600:.2f} core-h; commit it before training "
        "(attnlab claims --confirm-train)"
    )
    return 0


def _confirm_status(data: Path) -> int:
    """--confirm-status: the registered round beside today's exploratory verdicts, claim by claim."""
    from ..lab.confirm import PLAN_FILE, headline, registered, standing

    plan = registered(Path("."), data)  # the status of a plan that was rewritten is refused
    stand = standing(data)
    now = committed_verdicts(data)
    spent = stand["trained_core_s"]
    print(
        f"验证性一轮 / confirmatory round ({PLAN_FILE}, registered {plan['registered_commit'][:7]}, specifications frozen "
        f"at {plan['frozen'][:7]}): {stand['trained']} of {stand['runs']} runs trained"
        + (f", {spent / 3600:.2f} core-h spent" if spent is not None else "")
    )
    print("论断 / claim | 探索性 / exploratory | 验证性 / confirmatory")
    for cid, row in stand["claims"].items():
        print(f"{cid} | {now.get(cid, '—')} | {row['text']}")
    print(headline(stand, now))
    return 0
