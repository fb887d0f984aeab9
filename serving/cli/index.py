"""``finrag ingest``, ``remove``, ``search``, ``documents`` and ``collection``: filings into an
index, out of it, what it holds and who may read it."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from finrag.serving.options import add_index_option, add_profile_options, index_dir
from finrag.serving.cli.output import pages, snippet


def cmd_ingest(args) -> int:
    from finrag.models.profiles import load_config, load_profile_embedder
    from finrag.retrieval.routing.companies import CompanyTable
    from finrag.retrieval.indexer import Ingestor

    if not args.ray and (args.address or args.workers):
        print("error: --address and --workers are for --ray", file=sys.stderr)
        return 2
    companies = CompanyTable.load(args.companies or [])
    profile = load_config().active(args.profile)
    workers = None
    if args.ray:
        from finrag.serving.ray_ingest import RayWorkers

        try:
            workers = RayWorkers(profile, address=args.address, workers=args.workers,
                                 threads=args.threads, batch_size=args.batch_size)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    embedder = load_profile_embedder(profile, **(
        {"batch_size": args.batch_size} if args.batch_size else {}))
    contextualizer = None
    if args.variant == "llmctx":  # the profile's generator writes the contexts
        from finrag.models.profiles import load_llm
        from finrag.retrieval.ingest.variants import Contextualizer

        contextualizer = Contextualizer(lambda: load_llm(profile, "generator"),
                                        model_id=profile.role("generator").model,
                                        batch_size=args.context_batch_size)
    ingestor = Ingestor(index_dir(args), embedder, chunk_size=args.chunk_size,
                        chunk_overlap=args.chunk_overlap, metadata=args.metadata,
                        companies=companies, tables=not args.no_tables,
                        variant=args.variant, contextualizer=contextualizer,
                        replace=args.replace, accept_repaired=args.accept_repaired,
                        collections=args.collection)
    try:
        report = ingestor.run(args.paths, progress=not args.quiet, workers=workers,
                              on_error=lambda m: print(f"error: {m}", file=sys.stderr))
        counts = ingestor.index.catalog.counts() | {"facts": ingestor.facts.counts()["facts"]}
        size = ingestor.index.size_bytes()
        variant = ingestor.index.settings.variant
    finally:
        ingestor.close()
        if workers is not None:
            workers.close()
    mode = workers.plan if workers is not None and workers.plan else "sequential"
    summary = report.summary() | {"index": str(index_dir(args)), "variant": variant,
                                  "mode": mode,
                                  "ray_start_seconds": round(workers.start_seconds, 2)
                                  if workers is not None else None,
                                  "ray_nodes": workers.nodes if workers is not None else None,
                                  "index_totals": counts,
                                  "index_bytes": size,
                                  "errors": [m for _, m in report.failed]}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        s = summary
        print(f"ingested {s['added']} document(s) ({s['replaced']} replacing an older "
              f"file), skipped {s['skipped']} already indexed, "
              f"{s['failed']} failed — {s['pages']} pages, {s['chunks']} chunks in "
              f"{s['seconds']:.1f}s ({s['pages_per_s'] or 0:.1f} pages/s)")
        if variant == "llmctx":
            print(f"chunk contexts: {s['contexts_generated']} written by the LLM in "
                  f"{s['context_seconds']:.1f}s, {s['contexts_reused']} reused")
        if s["facts_files"]:
            print(f"XBRL facts: {s['facts_added']} stored from {s['facts_files']} file(s)")
        print(f"index {s['index']} ({variant}): {counts['documents']} documents, "
              f"{counts['chunks']} chunks, {counts['tables']} tables, "
              f"{counts['facts']} XBRL facts, {size / 1e6:.1f} MB")
    return 0 if report.ok else 1


def cmd_search(args) -> int:
    from finrag.models.profiles import load_config, load_profile_embedder
    from finrag.retrieval.store.index import Index, UnknownDocumentError

    query = args.query.strip()
    if not query:
        print("error: empty query", file=sys.stderr)
        return 2
    with Index.open(index_dir(args)) as index:
        vector = None
        if args.mode != "fts":
            embedder = load_profile_embedder(load_config(args.config).active(args.profile))
            index.check_embedder(embedder)
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
        print(f"{r['rank']:>2}. {r['doc_id']}  {pages(r['first_page'], r['last_page'])}  "
              f"score={r['score']:.4f}")
        print(textwrap.indent(snippet(r["text"]), "    "))
    return 0


def cmd_documents(args) -> int:
    from finrag.retrieval.store.index import Index

    with Index.open(index_dir(args)) as index:
        docs = [d.to_dict() for d in index.documents()]
    if args.json:
        print(json.dumps(docs, indent=2))
        return 0
    print(f"{'doc_id':44} {'company':24} {'type':8} {'FY':>4} {'Q':>2} {'pages':>5} {'chunks':>6}"
          f"  collections")
    for d in docs:
        print(f"{d['doc_id'][:44]:44} {d['company'][:24]:24} {d['doc_type']:8} "
              f"{d['fiscal_year'] or '':>4} {d['fiscal_quarter'] or '':>2} "
              f"{d['page_count']:>5} {d['chunk_count']:>6}  {','.join(d['collections'])}")
    return 0


def cmd_collection(args) -> int:
    from finrag.retrieval.store.index import Index

    if args.action == "list":
        with Index.open(index_dir(args)) as index:
            counts = index.catalog.collection_counts()
        if args.json:
            print(json.dumps(counts, indent=2))
        for name, n in ([] if args.json else counts.items()):
            print(f"{name:32} {n:>6} document(s)")
        return 0
    if not args.doc_ids:
        print(f"error: `finrag collection {args.action} NAME DOC_ID...` needs document ids",
              file=sys.stderr)
        return 2
    change = {"add": [args.name]} if args.action == "add" else {"remove": [args.name]}
    failed = 0
    with Index.open(index_dir(args), readonly=False) as index:  # the writer's lock
        for doc_id in args.doc_ids:
            try:
                after = index.catalog.change_collections(doc_id, **change)
            except (KeyError, ValueError) as e:
                print(f"error: {e.args[0]}", file=sys.stderr)
                failed += 1
                continue
            print(f"{doc_id}: {', '.join(after)}")
        _variants_in_step(index, args.doc_ids)
    return 1 if failed else 0


def _variants_in_step(index, doc_ids: list[str]) -> None:
    """The variant indexes beside the index follow a removal or a change of collections."""
    from finrag.retrieval.store.variant_indexes import in_step, variants_beside

    for name, state in in_step(index, variants_beside(index.folder), doc_ids).items():
        if state != "in step":
            print(f"note: the {name} variant index: {state}", file=sys.stderr)


def cmd_remove(args) -> int:
    from finrag.retrieval.indexer import remove_document
    from finrag.retrieval.store.index import Index

    missing = []
    with Index.open(index_dir(args), readonly=False) as index:  # the writer's lock
        for doc_id in args.doc_ids:
            if remove_document(index, doc_id):
                print(f"removed {doc_id}")
            else:
                missing.append(doc_id)
        _variants_in_step(index, args.doc_ids)
    for doc_id in missing:
        print(f"error: no document {doc_id!r} in the index (see `finrag documents`)",
              file=sys.stderr)
    return 1 if missing else 0


def add_parsers(sub) -> None:
    p = sub.add_parser("ingest", help="add filings (PDF, SEC HTML) and XBRL facts "
                                      "(companyfacts JSON) to an index",
                       description="Parse, chunk, embed and index filings; store the XBRL facts "
                                   "of SEC companyfacts files (CIK##########.json) and of "
                                   "inline-XBRL 10-K/10-Q HTML. Resumable: documents and facts "
                                   "files already stored (same sha256) are skipped; each is "
                                   "added all-or-nothing. Exit status 1 if any file failed.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or folders of filings")
    p.add_argument("--metadata", type=Path, metavar="FILE",
                   help="sidecar JSONL with document metadata (FinanceBench documents.jsonl "
                        "or finrag's format); otherwise parsed from file names")
    p.add_argument("--companies", type=Path, action="append", metavar="FILE",
                   help="extra company table YAML (name, ticker, aliases); repeatable")
    p.add_argument("--chunk-size", type=int, default=2500, help="characters per chunk (2500)")
    p.add_argument("--chunk-overlap", type=int, default=1250, help="overlap in characters (1250)")
    p.add_argument("--batch-size", type=int, default=None,
                   help="embedding batch size (the embedder's own: 32 on torch, 8 on OpenVINO, "
                        "its fastest on two cores)")
    p.add_argument("--no-tables", action="store_true", help="skip table extraction")
    p.add_argument("--variant", choices=("plain", "meta", "llmctx"), default="plain",
                   help="indexed chunk text, fixed per index: plain; meta (V-A: "
                        "'[Company: X, Fiscal Year: Y, ...]' prefix); llmctx (V-B: an "
                        "LLM-written context per chunk, persisted, resumable) (plain)")
    p.add_argument("--profile", default=None,
                   help="model profile: its embedder embeds the chunks, its generator writes "
                        "llmctx contexts (default: config)")
    p.add_argument("--context-batch-size", type=int, default=8,
                   help="llmctx: chunks per LLM batch; each batch is persisted (8)")
    p.add_argument("--replace", action="store_true",
                   help="a file whose document id is indexed with other content replaces that "
                        "document (in one transaction); without it such a file is refused")
    p.add_argument("--accept-repaired", action="store_true",
                   help="index damaged PDFs that only open repaired (truncated, broken "
                        "cross-references; part of their text may be missing); refused "
                        "without it")
    p.add_argument("--collection", action="append", metavar="NAME",
                   help="the collection(s) the documents belong to, for those whose sidecar "
                        "entry names none: who may read them (a token names the collections "
                        "it reads); repeatable (default: 'default'; `finrag fetch`'s sidecar "
                        "says 'public')")
    p.add_argument("--ray", action="store_true",
                   help="parse, chunk and embed on Ray Data (parse tasks, an embedder actor "
                        "pool); this process alone writes the index, in file order")
    p.add_argument("--address", metavar="ADDR",
                   help="--ray: the Ray cluster to use (default: $RAY_ADDRESS, else a Ray "
                        "started on this machine)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="--ray: documents in work at once (default: the cluster's CPUs / "
                        "--threads)")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="--ray: CPUs (threads) per worker (1)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_index_option(p)
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("remove", help="take documents out of an index",
                       description="Delete documents with their pages, tables, chunks, vectors "
                                   "and the facts read from their files, each in one "
                                   "transaction. Exit status 1 if an id is not in the index.")
    p.add_argument("doc_ids", nargs="+", metavar="DOC_ID", help="document id (`finrag "
                                                                 "documents`)")
    add_index_option(p)
    p.set_defaults(func=cmd_remove)

    p = sub.add_parser("search", help="hybrid search, optionally inside chosen documents",
                       description="FTS5 BM25 and dense search fused by reciprocal rank fusion. "
                                   "--doc restricts results to those documents.")
    p.add_argument("query")
    p.add_argument("--doc", action="append", metavar="ID", help="restrict to a document id; repeatable")
    p.add_argument("-k", type=int, default=5, help="number of results (5)")
    p.add_argument("--mode", choices=("hybrid", "fts", "dense"), default="hybrid")
    p.add_argument("--json", action="store_true", help="print results as JSON")
    add_index_option(p)
    add_profile_options(p, "model profile whose embedder embeds the query")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("documents", help="list the documents in an index")
    p.add_argument("--json", action="store_true")
    add_index_option(p)
    p.set_defaults(func=cmd_documents)

    p = sub.add_parser("collection", help="who may read which documents: list collections, "
                                          "add documents to one or take them out",
                       description="A document belongs to one or more collections; a token "
                                   "reads the documents of the collections it names. `add` and "
                                   "`remove` change one document in one transaction; a document "
                                   "stays in at least one collection. Exit status 1 if a "
                                   "document could not be changed.")
    p.add_argument("action", choices=("list", "add", "remove"))
    p.add_argument("name", nargs="?", help="the collection (add, remove)")
    p.add_argument("doc_ids", nargs="*", metavar="DOC_ID", help="documents to change")
    p.add_argument("--json", action="store_true", help="list: as JSON")
    add_index_option(p)
    p.set_defaults(func=cmd_collection)
