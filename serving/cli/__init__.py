"""The `finrag` command line: one module per command group, each adding its commands with
``add_parsers(sub)``.

- ``index``: ``ingest``, ``remove``, ``search``, ``documents``, ``collection``
- ``publish``: ``publish``, ``snapshots``
- ``ask``: ``route``, ``ask``, ``eval``, ``batch``
- ``doctor``: ``doctor``, ``models``
- ``serve``: ``serve``, ``demo``
- ``facts``: ``facts``, ``fetch``
- ``access``: ``token``, ``audit``

Packages above this one add theirs through the ``finrag.commands`` entry point
(``finrag bench``, from ``benchmarks.cli``), so nothing here imports them.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from importlib import metadata

from finrag.serving.cli import access, ask, doctor, facts, index, publish, serve

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights come from installed packages only
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

GROUPS = (index, publish, doctor, serve, ask, facts, access)  # `finrag --help` order


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="finrag",
        description="Question answering over SEC filings: ingest filings into a scoped hybrid "
                    "index (SQLite FTS5 + FAISS) and search it.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for group in GROUPS:
        group.add_parsers(sub)
    add_plugin_commands(sub)
    return parser


def add_plugin_commands(sub) -> None:
    """Add the commands other packages register under the ``finrag.commands`` entry points."""
    for ep in metadata.entry_points(group="finrag.commands"):
        try:
            ep.load()(sub)
        except Exception as e:  # one broken command must not take the others down
            print(f"warning: command '{ep.name}' ({ep.value}) is unavailable: "
                  f"{type(e).__name__}: {e}", file=sys.stderr)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # reports quote the command
    if args.command != "serve":  # SIGTERM ends like Ctrl-C: services stopped, work kept
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError, PermissionError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: work finished so far is kept (ingest, batch and eval resume "
              "where they stopped)", file=sys.stderr)
        return 130
