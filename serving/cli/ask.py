"""``finrag route``, ``ask``, ``eval`` and ``batch``: questions routed, answered one at a time,
evaluated on labelled questions, and answered in bulk."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from finrag.serving.options import (add_index_option, add_pipeline_options, add_profile_options,
                                       index_dir, load_pipeline, pipeline_kwargs)
from finrag.retrieval.systems.recipes import SYSTEMS
from finrag.serving.cli.output import print_answer, snippet


def _route_questions(router, args) -> int:
    """Routing accuracy on labelled questions (question, doc_name, pdf_present per line)."""
    from finrag.retrieval.ingest.metadata import parse_filename
    from finrag.retrieval.routing.evaluation import evaluate_routing, format_routing_report

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
        print(f"    {snippet(r['question'])}\n    {r['detail']}")
    return 0


def cmd_route(args) -> int:
    from finrag.retrieval.routing.companies import CompanyTable
    from finrag.retrieval.store.index import Index
    from finrag.retrieval.routing.router import Router, make_content_scorer

    question = (args.question or "").strip()
    if not question and not args.questions:
        print("error: empty question", file=sys.stderr)
        return 2
    llm = None
    if not args.no_llm:  # loaded only if the resolver alone cannot route the question
        from finrag.models.profiles import load_config, load_llm

        profile = load_config(args.config).active(args.profile)
        llm = lambda: load_llm(profile, "router")  # noqa: E731
    with Index.open(index_dir(args)) as index:
        def embedder():
            from finrag.models.profiles import load_config, load_profile_embedder

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


def cmd_ask(args) -> int:
    from finrag.retrieval.systems.run import QuestionError, check_question

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
        from finrag.serving.cli.plots import plot_facts

        if plot_facts(answer.get("facts") or [], args.plot, title=question):
            print(f"plot: {args.plot}", file=sys.stderr)
        else:
            print("plot: the answer has no series of XBRL values to plot", file=sys.stderr)
    return 0


def cmd_eval(args) -> int:
    from finrag.retrieval.systems.evaluation import evaluate_retrieval, format_table, load_questions
    from finrag.retrieval.systems.recipes import SYSTEMS

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


def cmd_batch(args) -> int:
    from finrag.serving.batch import run_batch

    summary = run_batch(args.questions, args.out, index=index_dir(args), system=args.system,
                        generate=not args.no_generate, sequential=args.sequential,
                        workers=args.workers, batch_size=args.batch_size, limit=args.limit,
                        progress=not args.quiet, pipeline_kwargs=pipeline_kwargs(args),
                        address=args.address)
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


def add_parsers(sub) -> None:
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
    p.add_argument("--address", metavar="ADDR",
                   help="the Ray cluster to run on (default: $RAY_ADDRESS, else a Ray started "
                        "on this machine)")
    p.add_argument("--limit", type=int, default=None, help="only the first N questions")
    p.add_argument("--no-generate", action="store_true", help="retrieval and context only")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_pipeline_options(p)
    p.set_defaults(func=cmd_batch)
