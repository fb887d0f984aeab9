"""``finrag serve`` and ``finrag demo``: the HTTP service on this machine, and the demo that
indexes, searches and serves the look-alike corpus."""

from __future__ import annotations

from pathlib import Path

from finrag.serving.options import add_index_option


def cmd_serve(args) -> int:
    import signal
    import threading

    from finrag.serving.server import service_from_file

    service = service_from_file(args.config, index=str(args.index) if args.index else None,
                                profile=args.profile, host=args.host, port=args.port)
    stop = threading.Event()
    url = service.start(progress=lambda m: print(m, flush=True))
    for sig in (signal.SIGINT, signal.SIGTERM):  # after Ray's start, which sets its own
        signal.signal(sig, lambda *_: stop.set())
    try:
        print(f"finrag is serving on {url}  (profile {service.cfg.profile or 'default'}, "
              f"index {service.cfg.index_dir()})\n"
              f"  the web page:  open {url}/\n"
              f"  OpenAI clients: base_url {url}/v1  (models finrag-hdrr, finrag-cbr, …)\n"
              f"  POST {url}/v1/answer   GET {url}/v1/documents   GET {url}/healthz   "
              f"GET {url}/metrics   {url}/docs\n"
              "Ctrl-C stops it.", flush=True)
        stop.wait()
    finally:
        print("stopping…", flush=True)
        service.stop()
    print("stopped", flush=True)
    return 0


def cmd_demo(args) -> int:
    from finrag.serving.cli.demo import run_demo

    return run_demo(args.workdir, serve=not args.no_serve, profile=args.profile, port=args.port)


def add_parsers(sub) -> None:
    p = sub.add_parser("serve", help="run the HTTP service (Ray Serve) on this machine",
                       description="Start Ray Serve with the app of a Serve config file "
                                   "(deploy/cpu.yaml unless --config) and serve until Ctrl-C "
                                   "or SIGTERM, then shut Serve and Ray down. `serve run "
                                   "deploy/cpu.yaml` runs the same app. Set RAY_ADDRESS to "
                                   "deploy onto a running cluster instead.")
    p.add_argument("--config", type=Path, default=None, metavar="FILE",
                   help="Serve config YAML (deploy/cpu.yaml)")
    p.add_argument("--profile", default=None, help="model profile (the config's)")
    p.add_argument("--host", default=None, help="address to listen on (the config's: 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (the config's: 8000)")
    add_index_option(p)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("demo", help="the embedded look-alike corpus: ingest, search, serve, ask",
                       description="Generate the demo corpus (fictional look-alike 10-Ks), "
                                   "ingest it, show whole-corpus vs scoped search, then start "
                                   "the Serve app on 127.0.0.1, ask over HTTP (answers with "
                                   "citations, tokens, LLM calls, per-stage latency, energy), "
                                   "compare CBR and HDRR on a look-alike question, and stop.")
    p.add_argument("--workdir", type=Path, default=Path(".finrag/demo"),
                   help="where the corpus and its index go (.finrag/demo)")
    p.add_argument("--profile", default="cpu", help="model profile of the service (cpu)")
    p.add_argument("--port", type=int, default=None, help="port (a free one)")
    p.add_argument("--no-serve", action="store_true", help="search only, no service")
    p.set_defaults(func=cmd_demo)
