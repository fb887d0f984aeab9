"""``finrag publish`` and ``finrag snapshots``: a versioned, checksummed, read-only snapshot of
an index for serving (``retrieval.store.publish``), and the versions published so far."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from finrag.retrieval.store.snapshot import DEFAULT_KEEP
from finrag.retrieval.systems.options import add_index_option, index_dir


def cmd_publish(args) -> int:
    from finrag.retrieval.store.publish import publish

    if args.keep < 1:
        print(f"error: --keep {args.keep}: keep at least 1 version", file=sys.stderr)
        return 2
    quiet = args.quiet or args.json
    snapshot = publish(index_dir(args), args.to, keep=args.keep,
                       progress=None if quiet else lambda m: print(m, file=sys.stderr))
    if args.json:
        print(json.dumps(snapshot.to_dict(), indent=2))
    elif snapshot.new:
        print(f"published {snapshot.name} of {snapshot.source} to {args.to}: generation "
              f"{snapshot.generation}, {snapshot.documents} documents, {snapshot.chunks} "
              f"chunks, {snapshot.size_bytes() / 1e6:.1f} MB; CURRENT is {snapshot.name}")
    else:
        print(f"{snapshot.source} is unchanged since {snapshot.name} (generation "
              f"{snapshot.generation}): nothing published; CURRENT is {snapshot.name}")
    return 0


def cmd_snapshots(args) -> int:
    from finrag.retrieval.store.publish import snapshots
    from finrag.retrieval.store.snapshot import SnapshotError, current_version, verify

    current = current_version(args.to).name if (args.to / "CURRENT").is_file() else None
    rows, failed = [], 0
    for snap in snapshots(args.to):
        row = snap.to_dict() | {"current": snap.name == current}
        if args.verify:
            try:
                verify(snap.folder)
                row["verified"] = True
            except SnapshotError as e:
                row["verified"], row["error"] = False, str(e)
                failed += 1
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{'version':9} {'created':25} {'generation':>10} {'documents':>9} "
              f"{'chunks':>7} {'MB':>8}")
        for r in rows:
            mark = "  CURRENT" if r["current"] else ""
            check = "" if "verified" not in r else "  ok" if r["verified"] else "  DAMAGED"
            print(f"{r['name']:9} {r['created']:25} {r['generation']:>10} {r['documents']:>9} "
                  f"{r['chunks']:>7} {r['bytes'] / 1e6:>8.1f}{mark}{check}")
        for r in rows:
            if r.get("error"):
                print(f"error: {r['error']}", file=sys.stderr)
    return 1 if failed else 0


def add_parsers(sub) -> None:
    p = sub.add_parser("publish", help="publish an index as a read-only, checksummed snapshot "
                                       "for serving",
                       description="Copy the index consistently (SQLite's online backup: a "
                                   "running ingest goes on, and nothing it has not committed is "
                                   "copied) into ROOT/vNNNNNN with a manifest of every file's "
                                   "sha256, then point ROOT/CURRENT at it. An app served from "
                                   "ROOT (`finrag serve --index ROOT`) switches to it on its "
                                   "next request. An index unchanged since the current version "
                                   "is not published again.")
    p.add_argument("--to", type=Path, required=True, metavar="ROOT",
                   help="the publish root: one folder per version, and CURRENT")
    p.add_argument("--keep", type=int, default=DEFAULT_KEEP, metavar="K",
                   help=f"versions kept, the newest (CURRENT's always) ({DEFAULT_KEEP})")
    p.add_argument("--json", action="store_true", help="print the snapshot's manifest as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    add_index_option(p)
    p.set_defaults(func=cmd_publish)

    p = sub.add_parser("snapshots", help="the versions of a publish root",
                       description="List the published versions, CURRENT's marked; --verify "
                                   "checks every file against its manifest (exit status 1 if "
                                   "one does not match).")
    p.add_argument("--to", type=Path, required=True, metavar="ROOT", help="the publish root")
    p.add_argument("--verify", action="store_true", help="check every file's sha256")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_snapshots)
