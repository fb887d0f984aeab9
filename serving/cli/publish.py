"""``finrag publish`` and ``finrag snapshots``: a versioned, checksummed, read-only snapshot of
an index for serving (``retrieval.store.publish``), and the versions published so far."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from finrag.retrieval.store.snapshot import DEFAULT_KEEP
from finrag.serving.options import add_index_option, index_dir


def cmd_publish(args) -> int:
    from finrag.retrieval.store.publish import publish

    if args.keep < 1:
        print(f"error: --keep {args.keep}: keep at least 1 version", file=sys.stderr)
        return 2
    from finrag.retrieval.store.variant_indexes import variant_dir, variants_beside

    quiet = args.quiet or args.json
    say = None if quiet else (lambda m: print(m, file=sys.stderr))
    # the variant indexes beside the index go with it, each to the root's own variant folder
    # (where `finrag serve --index ROOT` finds it), so no variant is left a version behind
    roots = {None: (index_dir(args), args.to)} | {
        name: (folder, variant_dir(args.to, name))
        for name, folder in variants_beside(index_dir(args)).items()}
    published = {name: publish(source, root, keep=args.keep, progress=say)
                  for name, (source, root) in roots.items()}
    snapshot = published.pop(None)
    if args.json:
        print(json.dumps(snapshot.to_dict() | {
            "variants": {name: s.to_dict() for name, s in published.items()}}, indent=2))
        return 0
    for name, s in [(None, snapshot), *published.items()]:
        root = roots[name][1]
        if s.new:
            print(f"published {s.name} of {s.source} to {root}: generation {s.generation}, "
                  f"{s.documents} documents, {s.chunks} chunks, {s.size_bytes() / 1e6:.1f} MB; "
                  f"CURRENT is {s.name}")
        else:
            print(f"{s.source} is unchanged since {s.name} of {root} (generation "
                  f"{s.generation}): nothing published; CURRENT is {s.name}")
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
