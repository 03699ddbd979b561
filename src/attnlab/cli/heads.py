"""``attnlab heads``: head portrait, ablation, attention maps and dynamics (§1.8.5, §1.12.4)."""

from __future__ import annotations

from pathlib import Path

from . import common


def add_parser(sub):
    p = sub.add_parser(
        "heads",
        help="head portrait, ablation, attention maps, dynamics / 注意力头画像",
        description="Head portrait of a checkpoint (§1.8.5): entropy, diagonal, "
        "previous-token weight, distance and its spread, ablation Δloss; "
        "--maps draws heatmaps; --dynamics trains once and follows the "
        "portrait across steps (§1.12.4).",
    )
    p.add_argument("checkpoint", nargs="?", help="attnlab checkpoint, run directory or bare state_dict")
    p.add_argument(
        "--text", action="append", default=None, help="analyse this text instead of the validation poems (repeatable)"
    )
    common.add_corpus(p)
    common.add_set(p, help="config of a bare state_dict, or of the --dynamics run")
    common.add_out(p, None, "result JSON (default next to the checkpoint)")
    p.add_argument("--maps", default=None, metavar="PNG", help="also draw attention heatmaps")
    p.add_argument("--no-ablate", action="store_true", help="skip the head ablation")
    p.add_argument("--ablate-batches", type=common.positive_int, default=8)
    p.add_argument(
        "--rejudge",
        default=None,
        metavar="JSON",
        help="train and analyse nothing: re-judge the §1.8.5/§1.8.6 claims of a heads JSON and write them into it",
    )
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="CHECKPOINT",
        help="the same model trained on another seed (repeatable): claims are judged over all",
    )
    p.add_argument("--dynamics", action="store_true", help="train and follow the heads across --steps")
    p.add_argument("--steps", default="100,500,1500", help="snapshot steps for --dynamics")
    p.add_argument(
        "--ckpt-dir",
        default="runs/dynamics",
        help="where the --dynamics run goes (DIR/dynamics; rerun to resume or reuse it)",
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
    from ..experiments.common import ExperimentError, load_model
    from ..experiments.heads import analyze, attention_maps, dynamics, dynamics_table, head_claims, portrait_table
    from ..io import check_output_file, check_writable, write_json

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
            result = read_json(path, error=ExperimentError, hint=hint)
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
        from ..experiments.plots import plot_attention_maps

        model, tok, _, _ = load_model(args.checkpoint, cfg=cfg, corpus=args.corpus)
        maps = attention_maps(model, tok, result["eval"]["texts"][0])
        maps_json = Path(args.maps).with_suffix(".json")
        write_json(maps_json, maps)
        plot_attention_maps(maps, args.maps)
        print(f"注意力图 / attention maps: {args.maps} (data {maps_json})")
    return 0
