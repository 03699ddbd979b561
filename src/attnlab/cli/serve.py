"""``attnlab serve``: the attention playground in the browser (local only by default)."""
from __future__ import annotations

import argparse


def port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"port must be an integer in 1-65535, got {text!r}")
    return int(text)


def add_parser(sub):
    p = sub.add_parser(
        "serve", help="interactive attention playground in the browser (local only)",
        description="Serve the attention playground. Listens on 127.0.0.1 unless --host says otherwise; "
                    "answers only requests addressed to 127.0.0.1:PORT, localhost:PORT or --host.")
    p.add_argument("--port", type=port, default=8000)
    p.add_argument("--host", default="127.0.0.1",
                   help="interface to listen on (default 127.0.0.1; anything else exposes the server)")
    p.add_argument("--checkpoint", default=None, help="checkpoint for experiment 1-2 (e.g. runs/x/ckpt.pt)")
    p.add_argument("--runs-dir", default="runs", help="directory whose run folders the Runs page lists")
    p.add_argument("--case-json", default="data/ch1_case.json")
    return p


def main(args) -> int:
    import uvicorn                       # the optional "web" extra; missing -> one line from cli.main

    from ..web.server import allowed_hosts, create_app

    app = create_app(args.checkpoint, runs_dir=args.runs_dir, case_json=args.case_json,
                     hosts=allowed_hosts(args.host, args.port))
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: listening on {args.host}; anyone who can reach it can use the server")
    print(f"attnlab playground: http://{'127.0.0.1' if args.host == '127.0.0.1' else args.host}:{args.port}/")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
