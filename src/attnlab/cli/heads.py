"""``attnlab heads``: head portrait, ablation, attention maps and dynamics (§1.8.5, §1.12.4)."""

from __future__ import annotations

from pathlib import Path

from . import common


def add_parser(sub):
    p = sub.add_parser(
        "heads",
        help="注意力头画像、头消融、热力图与训练动态 / head portrait, ablation, attention maps, dynamics",
        description="检查点的注意力头画像（§1.8.5）：权重熵、对角权重、前一个字的权重、注意距离及其离散度、"
        "消融后的 Δloss；--maps 画热力图；--dynamics 训练一次并跟踪画像随步数的变化（§1.12.4）。"
        "\nHead portrait of a checkpoint (§1.8.5): weight entropy, diagonal, previous-token weight, distance "
        "and its spread, ablation Δloss; --maps draws heatmaps; --dynamics trains once and follows the "
        "portrait across steps (§1.12.4).",
    )
    p.add_argument(
        "checkpoint",
        nargs="?",
        help="attnlab 检查点、运行文件夹或裸 state_dict / attnlab checkpoint, run directory or bare state_dict",
    )
    p.add_argument(
        "--text",
        action="append",
        type=common.text_arg,
        default=None,
        help="分析这段文字而不是验证集的诗，可重复 / analyse this text instead of the validation poems (repeatable)",
    )
    common.add_corpus(p)
    common.add_set(
        p,
        help="裸 state_dict 或 --dynamics 运行的配置，可重复 / config of a bare state_dict, or of the --dynamics run "
        "(repeatable)",
    )
    common.add_out(p, None, "结果 JSON（默认：检查点旁边）/ result JSON (default: next to the checkpoint)")
    p.add_argument(
        "--maps",
        default=None,
        metavar="PNG",
        help="同时画注意力热力图（默认：不画）/ also draw attention heatmaps (default: none)",
    )
    p.add_argument("--no-ablate", action="store_true", help="跳过头消融 / skip the head ablation")
    p.add_argument(
        "--ablate-batches",
        type=common.positive_int,
        default=8,
        metavar="N",
        help="头消融用的验证批数 / validation batches of the head ablation",
    )
    p.add_argument(
        "--rejudge",
        default=None,
        metavar="JSON",
        help="不训练、不分析：重新判定一个 heads JSON 的 §1.8.5/§1.8.6 断言并写回"
        " / train and analyse nothing: re-judge the §1.8.5/§1.8.6 claims of a heads JSON and write them into it",
    )
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="CHECKPOINT",
        help="同一模型换种子训练的检查点，可重复；断言在全部种子上判定"
        " / the same model trained on another seed (repeatable): claims are judged over all",
    )
    p.add_argument(
        "--dynamics",
        action="store_true",
        help="训练并在 --steps 各步跟踪注意力头 / train and follow the heads across --steps",
    )
    p.add_argument(
        "--steps",
        default="100,500,1500",
        help="--dynamics 的快照步数，逗号分隔 / snapshot steps for --dynamics, comma-separated",
    )
    p.add_argument(
        "--ckpt-dir",
        default="runs/dynamics",
        metavar="DIR",
        help="--dynamics 运行放在 DIR/dynamics；重跑即续跑或复用"
        " / where the --dynamics run goes (DIR/dynamics; rerun to resume or reuse it)",
    )
    return p


def parse_steps(s: str) -> list[int]:
    from ..config import MAX_STEPS
    from ..errors import UsageError

    try:
        steps = [int(v) for v in s.split(",") if v.strip()]
    except ValueError:
        steps = []
    if not steps or any(n <= 0 for n in steps):
        raise UsageError(f"--steps expects comma-separated positive integers, got {s!r}")
    if max(steps) > MAX_STEPS:
        raise UsageError(f"--steps {max(steps):,} is more than the sane maximum of {MAX_STEPS:,} steps")
    return steps


def main(args) -> int:
    from ..config import Config
    from ..corpus import load_corpus
    from ..errors import UsageError
    from ..io import check_output_file, check_writable, write_json
    from ..lab.heads import analyze, dynamics_table, head_claims, portrait_table
    from ..lab.portrait import attention_maps, dynamics
    from ..tools import ExperimentError, load_model

    def print_claims(claims) -> None:
        from ..verdicts import count_line, verdict_of

        for c in claims:
            print(
                f"  {verdict_of(c)} [{c['kind']}] {c['section']} {c['id']}: {c['measured']}"
                + (f" — {c['reason']['category']}: {c['reason']['text']}" if c.get("reason") else "")
            )
        if claims:
            print(f"  {count_line(claims)}")

    if args.rejudge:
        from ..io import read_json

        path = Path(args.rejudge)
        hint = "; give a JSON written by `attnlab heads`"
        try:
            from ..schemas import check

            result = check("heads", read_json(path, error=ExperimentError, hint=hint), path, error=ExperimentError)
            result["claims"] = head_claims([result] + result.get("other_seeds", []))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise ExperimentError(f"cannot re-judge {path}: {e}; give a JSON written by `attnlab heads`") from None
        write_json(path, result)
        print_claims(result["claims"])
        return 0

    if args.dynamics:
        cfg = Config.from_overrides(args.overrides)
        common.check_trainable(cfg)
        steps = parse_steps(args.steps)
        out = Path(args.out or Path(args.ckpt_dir) / "dynamics.json")
        check_output_file(out)
        check_writable(args.ckpt_dir)
        text = load_corpus(args.corpus, min_chars=cfg.block_size + 1)
        result = dynamics(text, cfg, steps, args.ckpt_dir, corpus=args.corpus, ablate=not args.no_ablate, progress=True)
        write_json(out, result)
        print(dynamics_table(result))
        print(f"结果 / result: {out}")
        return 0
    if not args.checkpoint:
        raise UsageError("give a checkpoint (or --dynamics): attnlab heads runs/default/ckpt.pt")
    cfg = Config.from_overrides(args.overrides) if args.overrides else None
    ckpt = Path(args.checkpoint)
    out = Path(args.out) if args.out else (ckpt if ckpt.is_dir() else ckpt.parent) / "heads.json"
    if ckpt.exists():
        if args.maps:
            check_output_file(args.maps, "--maps")
        check_output_file(out)
    result = analyze(
        args.checkpoint,
        args.text,
        corpus=args.corpus,
        cfg=cfg,
        ablate=not args.no_ablate,
        ablate_batches=args.ablate_batches,
    )
    if args.also:
        others = [
            analyze(
                path,
                args.text,
                corpus=args.corpus,
                cfg=cfg,
                ablate=not args.no_ablate,
                ablate_batches=args.ablate_batches,
            )
            for path in args.also
        ]
        for o in others:
            o.pop("claims", None)
        result["other_seeds"] = others
        result["claims"] = head_claims([result] + others)
    write_json(out, result)
    for note in result["notes"]:
        print(f"注 / note: {note}")
    print(f"评估集 / evaluation: {result['eval']['protocol']}")
    print(portrait_table(result))
    if result["book"]:
        print(
            "右侧四列是书中 §1.8.5 的表（默认配置训练 1500 步）/ the right four columns are the "
            "book's table (§1.8.5, default config, 1500 steps)"
        )
    print_claims(result.get("claims", []))
    print(f"结果 / result: {out}")
    if args.maps:
        from ..lab.plot import plot_attention_maps

        model, tok, _, info = load_model(args.checkpoint, cfg=cfg, corpus=args.corpus)
        maps = attention_maps(model, tok, result["eval"]["texts"][0], source=info)  # the figure names its step
        maps_json = Path(args.maps).with_suffix(".json")
        write_json(maps_json, maps)
        plot_attention_maps(maps, args.maps)
        print(f"注意力图 / attention maps: {args.maps} (data {maps_json})")
    return 0
