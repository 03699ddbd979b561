"""``attnlab serve``: the attention playground in the browser (local only by default)."""

from __future__ import annotations

import argparse
import socket

from ..errors import AttnlabError, UsageError


def port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"port must be an integer in 1-65535, got {text!r}")
    return int(text)


def add_parser(sub):
    p = sub.add_parser(
        "serve",
        help="在浏览器里打开注意力实验台（默认只限本机）/ interactive attention playground in the browser (local only)",
        description="启动注意力实验台。除非 --host 另有指定，只监听 127.0.0.1；只回答发给 127.0.0.1:PORT、"
        "localhost:PORT 或 --host 的请求。"
        "\nServe the attention playground. Listens on 127.0.0.1 unless --host says otherwise; answers only "
        "requests addressed to 127.0.0.1:PORT, localhost:PORT or --host.",
    )
    p.add_argument("--port", type=port, default=8000, help="监听的端口 / port to listen on")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="监听的网络接口（其他任何值都会把服务暴露出去）"
        " / interface to listen on (anything else exposes the server)",
    )
    p.add_argument(
        "--checkpoint",
        default=None,
        help="实验 1-2 用的检查点（或运行文件夹）；默认：案例的小模型缩放运行（runs/case/small_scaled_s20261014）"
        "或 --runs-dir 下另一个带 ckpt.pt 的运行，可在页面上选"
        " / checkpoint (or run folder) for experiment 1-2; default: the case's small scaled run "
        "(runs/case/small_scaled_s20261014) or another run with a ckpt.pt under --runs-dir, selectable on the page",
    )
    p.add_argument(
        "--runs-dir",
        default=None,
        metavar="DIR",
        help="页面列出其中运行文件夹的目录（默认：runs/，存在时加上 mine/runs 和 quick/case/runs；随包附带的案例模型总会列出）"
        " / directory whose run folders the pages list (default: runs/, plus mine/runs and "
        "quick/case/runs when present; the case models that ship with attnlab are always listed)",
    )
    p.add_argument(
        "--case-json",
        default=None,
        metavar="JSON",
        help="运行页画图用的案例数据（默认：此处的 data/ch1_case.json，否则随包附带的那一份）"
        " / the case JSON the Runs page draws (default: data/ch1_case.json here, else the copy "
        "that ships with attnlab)",
    )
    p.add_argument(
        "--book-html",
        default=None,
        metavar="HTML",
        help="在 /book 提供的全章实验手册（默认：此处的 reports/lab_book.html，否则随包附带的那一份）"
        " / the lab book served at /book (default: reports/lab_book.html here, else the copy "
        "that ships with attnlab)",
    )
    return p


def check_listen(host: str, port: int) -> None:
    """Fail with one line, before anything starts, when HOST:PORT cannot be listened on."""
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as e:
        raise UsageError(
            f"--host {host!r} is not an address of this machine ({e.strerror}); use 127.0.0.1 or an interface's address"
        ) from None
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            s.bind(addr)
        except OSError as e:
            raise AttnlabError(
                f"cannot listen on {host}:{port}: {e.strerror}; choose another --port or stop the server that uses it"
            ) from None


def make_app(args):
    """The app ``serve`` runs: with no flag it lists runs/, mine/runs, quick/case/runs and the shipped case
    models, and serves the committed case JSON and lab book (this checkout's, else the packaged copies)."""
    from ..web.server import allowed_hosts, create_app
    from ..web.sources import Sources, published

    runs_dir = args.runs_dir or "runs"
    return create_app(
        args.checkpoint,
        runs_dir=runs_dir,
        case_json=args.case_json or published("data/ch1_case.json", "ch1_case.json"),
        book_html=args.book_html or published("reports/lab_book.html", "lab_book.html"),
        case_html=published("reports/ch1_case.html", "ch1_case.html"),
        hosts=allowed_hosts(args.host, args.port),
        sources=Sources.default(runs_dir, user_roots=args.runs_dir is None),
    )


def main(args) -> int:
    import uvicorn  # the optional "web" extra; missing -> one line from cli.main

    check_listen(args.host, args.port)
    app = make_app(args)
    runs_dir = args.runs_dir or "runs"
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: listening on {args.host}; anyone who can reach it can use the server")
    print(f"attnlab playground: http://{'127.0.0.1' if args.host == '127.0.0.1' else args.host}:{args.port}/")
    if app.state.model_run:
        print(f"实验 1-2 模型 / experiment 1-2 model: {app.state.model_run}")
    else:
        print(app.state.model_problem or f"实验 1-2：{runs_dir} 下没有带 ckpt.pt 的运行 / no run with a ckpt.pt")
    for line in app.state.sources.listing().skipped:
        print(f"跳过 / skipped: {line}")
    from ..web.httpserver import server_config  # header, body and write deadlines

    server = uvicorn.Server(server_config(app, host=args.host, port=args.port))
    try:
        server.run()
    except KeyboardInterrupt:  # as uvicorn.run: Ctrl-C ends the server quietly
        pass
    return 0
