"""Routing benchmarks, two of them.

Router LLM extraction (no index): schema-valid rate, and how often the extracted company and
fiscal year agree with the question's own filing, before any resolver.

    python -m finrag.benchmarks.router_eval --profile cpu [--questions FILE] [--limit N]

Resumable: each routed question is appended to results/router_<profile>/routes.jsonl and
skipped on the next run. Writes report.md, results.json and a PNG beside it.

``--engine vllm`` runs the same prompt, schema and weights through vLLM's structured outputs
(in the vLLM venv) instead of transformers + Outlines; ``--attempts 1`` keeps only the greedy
attempt (the engines' retries sample). ``--compare DIR DIR --out OUT`` then writes one
side-by-side report of two such runs (``benchmarks/router_json_report.py``):

    .venv/bin/python -m finrag.benchmarks.router_eval --engine transformers --attempts 1 \
        --out benchmarks/results/router_json_cpu/transformers
    .venv-vllm/bin/python -m finrag.benchmarks.router_eval --engine vllm --attempts 1 \
        --out benchmarks/results/router_json_cpu/vllm
    python -m finrag.benchmarks.router_eval --compare benchmarks/results/router_json_cpu/transformers \
        benchmarks/results/router_json_cpu/vllm --out benchmarks/results/router_json_cpu

Routing over an index (``--index``): the router as ``finrag route`` runs it (deterministic
pass, the router LLM only when that pass finds no company or conflicting filing-type cues,
content disambiguation with the index) on the FinanceBench dev questions — all, and the
``tune`` and ``test`` halves of ``benchmarks/splits.py`` — and on the routing probes of
``tests/data/routing_probes.jsonl``: exact, covering, precision over the questions that name a
company, no-company and not-indexed questions apart, wrong-company routes.

    python -m finrag.benchmarks.router_eval --profile cpu --index var/fb-index

Writes results/routing_<profile>/report.md, results.json, rows.jsonl and routing.png.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from finrag.benchmarks.router_json_report import ENGINE_LABELS, write_comparison

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "financebench"


def company_matches(extracted: list[str], tickers: list[str], gold: str, table) -> bool:
    """An extracted name or ticker that the company table maps to the gold company."""
    want = table.by_name(gold) or table.fuzzy(gold)
    for name in extracted:
        got = table.by_name(name) or table.fuzzy(name) or table.by_ticker(name.upper())
        if got is not None and want is not None and got.name == want.name:
            return True
    for t in tickers:
        got = table.by_ticker(t)
        if got is not None and want is not None and got.name == want.name:
            return True
    return False


def router_call(engine_name: str, path: Path, model_id: str, attempts: int):
    """``call(messages, params) -> (RouterOutput, Completion)`` on the chosen engine, with at
    most ``attempts`` decodes per question (the first one greedy)."""
    from finrag.retrieval.routing.schema import RouterOutput

    if engine_name == "vllm":
        from finrag.models.vllm_engine import VLLMEngine

        # float32 like the transformers engine on CPU: the same weights, computed alike
        engine = VLLMEngine(str(path), model_id=model_id, dtype="float32", max_model_len=2048,
                            seed=0, json_attempts=attempts)
        return lambda messages, params: engine.generate_json([messages], RouterOutput, params)[0]
    if engine_name.startswith("llamacpp"):
        from finrag.models.llamacpp_engine import LlamaCppEngine

        # the packaged GGUF itself, 4-bit (the other engines read its float32 conversion)
        engine = LlamaCppEngine(path, model_id=model_id, context_tokens=2048,
                                json_backend="outlines" if engine_name.endswith("outlines")
                                else "grammar")
        return lambda messages, params: engine.generate_json([messages], RouterOutput, params,
                                                             attempts=attempts)[0]
    from finrag.models.transformers_engine import TransformersEngine

    engine = TransformersEngine(path, model_id=model_id)
    return lambda messages, params: engine.generate_json([messages], RouterOutput, params,
                                                         attempts=attempts)[0]


def failure_kind(text: str | None, finish_reason: str | None) -> str:
    """How a schema-invalid output failed: cut off at max_tokens, not JSON, JSON that breaks
    the schema, or no output at all (the engine refused the request or wrote nothing)."""
    if not text:
        return "refused"
    if finish_reason == "length":
        return "truncated"
    try:
        json.loads(text)
    except ValueError:
        return "parse error"
    return "schema violation"


def main(argv: list[str] | None = None) -> int:
    from tqdm import tqdm

    from finrag.models.energy import select_meter
    from finrag.models.llm import SamplingParams, StructuredOutputError
    from finrag.models.profiles import load_config, resolve_role
    from finrag.retrieval.routing.schema import router_messages
    from finrag.retrieval.routing.companies import CompanyTable
    from finrag.retrieval.ingest.metadata import parse_filename

    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.router_eval", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", default="cpu")
    p.add_argument("--questions", type=Path, default=SHARED / "questions.dev.jsonl")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--max-tokens", type=int, default=160)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--index", type=Path, default=None,
                   help="route over this index (resolver + router LLM) instead of scoring the "
                        "LLM's extraction alone")
    p.add_argument("--probes", type=Path, default=REPO / "tests" / "data" / "routing_probes.jsonl")
    p.add_argument("--engine", choices=list(ENGINE_LABELS), default="transformers",
                   help="JSON constrained by Outlines (transformers), by vLLM's structured "
                        "outputs (run with the vLLM venv's python), by llama.cpp's grammar "
                        "(llamacpp) or by Outlines on llama.cpp (llamacpp-outlines)")
    p.add_argument("--attempts", type=int, default=3,
                   help="decodes per question: the first greedy, retries sampled (1 = greedy only)")
    p.add_argument("--compare", type=Path, nargs=2, default=None, metavar="DIR",
                   help="write one side-by-side report of two extraction runs' rows into --out")
    args = p.parse_args(argv)
    if args.index is not None:
        return routing_main(args, argv)
    if args.compare is not None:
        if args.out is None:
            p.error("--compare needs --out (the folder of the side-by-side report)")
        write_comparison(args.compare, args.out, _command(argv))
        return 0
    default_dir = f"router_{args.profile}" + ("" if args.engine == "transformers"
                                              else f"_{args.engine.replace('-', '_')}")
    out = args.out or REPO / "benchmarks" / "results" / default_dir
    out.mkdir(parents=True, exist_ok=True)
    routes_path = out / "routes.jsonl"

    profile = load_config().active(args.profile)
    table = CompanyTable.load()
    questions = [json.loads(l) for l in args.questions.read_text().splitlines() if l.strip()]
    questions = questions[: args.limit] if args.limit else questions
    done = {}
    if routes_path.exists():
        for line in routes_path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                done[row["id"]] = row
    meter = select_meter()
    params = SamplingParams(max_tokens=args.max_tokens)
    todo = [q for q in questions if q["financebench_id"] not in done]
    if todo:  # a finished run only rewrites its report: no model is loaded
        # llama.cpp reads the GGUF file; transformers and vLLM its float32 conversion
        profile = profile.model_copy(update={
            "engine": "llamacpp" if args.engine.startswith("llamacpp") else "transformers"})
        weights = resolve_role(profile, "router", prepare=True, progress=True)
        call = router_call(args.engine, weights.path, profile.role("router").model,
                           args.attempts)
    with routes_path.open("a") as sink:
        for q in tqdm(todo, unit="q", desc=f"routing ({args.profile})"):
            gold = parse_filename(q["doc_name"], table)
            start = meter.start()
            failure = None
            try:
                route, comp = call(router_messages(q["question"]), params)
                valid, extracted = True, route.model_dump()
            except StructuredOutputError as e:
                valid, extracted, comp = False, None, e.completions.get(0)
                failure = failure_kind(comp.text if comp else None,
                                       comp.finish_reason if comp else None)
                error = str(e)
            reading = meter.stop(start)
            usage = {k: v for k, v in (comp.__dict__ if comp else {}).items() if k != "text"}
            if failure:
                usage["error"] = error
            row = {
                "id": q["financebench_id"], "doc_name": q["doc_name"], "valid": valid,
                "engine": args.engine, "attempts": args.attempts, "failure": failure,
                "text": comp.text if comp else None,
                "route": extracted, "usage": usage, "energy": reading.to_dict(),
                "company_match": bool(extracted) and company_matches(
                    extracted["companies"], extracted["tickers"], gold.company, table),
                "year_match": bool(extracted) and gold.fiscal_year in extracted["fiscal_years"],
            }
            sink.write(json.dumps(row) + "\n")
            sink.flush()
            done[row["id"]] = row

    rows = [done[q["financebench_id"]] for q in questions if q["financebench_id"] in done]
    n = len(rows)
    lat = sorted(r["usage"].get("latency_s", 0.0) for r in rows if r["valid"])
    summary = {
        "profile": args.profile, "model": profile.role("router").model, "questions": n,
        "engine": args.engine, "attempts": args.attempts,
        "schema_valid_rate": sum(r["valid"] for r in rows) / n,
        "company_agreement": sum(r["company_match"] for r in rows) / n,
        "year_agreement": sum(r["year_match"] for r in rows) / n,
        "both_agreement": sum(r["company_match"] and r["year_match"] for r in rows) / n,
        "mean_latency_s": sum(lat) / len(lat) if lat else None,
        "p50_latency_s": lat[len(lat) // 2] if lat else None,
        "mean_prompt_tokens": sum(r["usage"].get("prompt_tokens", 0) for r in rows) / n,
        "mean_completion_tokens": sum(r["usage"].get("completion_tokens", 0) for r in rows) / n,
        "energy_source": rows[0]["energy"]["source"] if rows else None,
    }
    command = _command(argv)
    (out / "results.json").write_text(json.dumps({"command": command, **summary}, indent=2))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    names = ["schema-valid", "company", "fiscal year", "company+year"]
    vals = [summary["schema_valid_rate"], summary["company_agreement"],
            summary["year_agreement"], summary["both_agreement"]]
    ax.barh(names, vals, color=["#229954", "#2471a3", "#2471a3", "#1a5276"])
    for y, v in enumerate(vals):
        ax.text(v, y, f" {v:.0%}", va="center")
    ax.set_xlim(0, 1.1)
    ax.invert_yaxis()
    ax.set_title(f"Router ({summary['model'].split('/')[-1]}, {args.profile}) on {n} questions")
    fig.tight_layout()
    fig.savefig(out / "router_agreement.png", dpi=120)
    plt.close(fig)
    (out / "report.md").write_text(
        f"# Router extraction — profile `{args.profile}`\n\nCommand: `{command}`\n\n"
        f"Model: {summary['model']} ({ENGINE_LABELS[args.engine]}; {args.attempts} "
        "attempt(s) a question, the first greedy). "
        f"{n} FinanceBench dev questions; agreement is measured against the question's own "
        "filing (company via the company table, fiscal year exact), before any resolver.\n\n"
        "| schema-valid | company agrees | fiscal year agrees | both | mean latency s | "
        "mean prompt / completion tokens | energy |\n|---:|---:|---:|---:|---:|---:|---|\n"
        f"| {summary['schema_valid_rate']:.1%} | {summary['company_agreement']:.1%} | "
        f"{summary['year_agreement']:.1%} | {summary['both_agreement']:.1%} | "
        f"{summary['mean_latency_s'] or float('nan'):.2f} | "
        f"{summary['mean_prompt_tokens']:.0f} / {summary['mean_completion_tokens']:.0f} | "
        f"{summary['energy_source']} |\n\n![router agreement](router_agreement.png)\n")
    print(json.dumps(summary, indent=2))
    return 0



def _command(argv) -> str:
    return "python -m finrag.benchmarks.router_eval " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))


# --- routing over an index -----------------------------------------------------------------------


def routing_main(args, argv) -> int:
    from finrag.benchmarks.splits import split_of
    from finrag.models.embedders import load_embedder
    from finrag.models.profiles import load_config, load_llm
    from finrag.retrieval.ingest.metadata import parse_filename
    from finrag.retrieval.routing.companies import CompanyTable
    from finrag.retrieval.routing.evaluation import (evaluate_routing, format_routing_report,
                                              routing_summary)
    from finrag.retrieval.routing.router import Router, make_content_scorer
    from finrag.retrieval.store.index import Index

    out = args.out or REPO / "benchmarks" / "results" / f"routing_{args.profile}"
    out.mkdir(parents=True, exist_ok=True)
    profile = load_config().active(args.profile)
    table = CompanyTable.load()
    dev = [json.loads(l) for l in args.questions.read_text().splitlines() if l.strip()]
    probes = [json.loads(l) for l in args.probes.read_text().splitlines() if l.strip()]
    if args.limit:
        dev, probes = dev[: args.limit], probes[: args.limit]
    splits = split_of([json.loads(l) for l in args.questions.read_text().splitlines() if l.strip()])

    def gold_company(doc_id: str) -> str | None:
        try:
            company = table.by_name(parse_filename(doc_id, table).company)
        except ValueError:
            return None
        return company.key if company else None

    with Index.open(args.index) as index:
        def embedder():
            return load_embedder(index.settings.embedder, kind=index.settings.embedder_kind)

        router = Router(index, table, llm=lambda: load_llm(profile, "router"),
                        content_scorer=make_content_scorer(index, embedder))
        print(f"routing {len(dev)} dev questions and {len(probes)} probes over {args.index}",
              file=sys.stderr)
        dev_report = evaluate_routing(router, tqdm_rows(dev, "dev"), gold_company)
        dev_stats = dict(router.stats)
        router.stats.clear()
        probe_report = evaluate_routing(router, tqdm_rows(probes, "probes"), gold_company)
        probe_stats = dict(router.stats)

    for row, q in zip(dev_report["rows"], dev):
        row["split"] = splits[q["financebench_id"]]
    for row, q in zip(probe_report["rows"], probes):
        row["split"], row["kind"], row["expected_status"] = "probes", q["kind"], q.get("status")
        row["status_ok"] = not q.get("status") or row["status"] == q["status"]
        row["ok"] = sorted(row["doc_ids"]) == sorted(q["doc_names"]) and row["status_ok"]
    sets = {"dev (all 95)": routing_summary(dev_report["rows"]),
            "dev tune": routing_summary([r for r in dev_report["rows"] if r["split"] == "tune"]),
            "dev test": routing_summary([r for r in dev_report["rows"] if r["split"] == "test"]),
            "probes": routing_summary(probe_report["rows"])}
    probes_ok = sum(r["ok"] for r in probe_report["rows"])
    command = "python -m finrag.benchmarks.router_eval " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    results = {"command": command, "profile": args.profile,
               "router_model": profile.role("router").model,
               "sets": {k: {key: v for key, v in s.items() if key != "misses"} for k, s in sets.items()},
               "router_stats": {"dev": dev_stats, "probes": probe_stats},
               "probes_as_expected": probes_ok, "probes": len(probes)}
    (out / "results.json").write_text(json.dumps(results, indent=2))
    with (out / "rows.jsonl").open("w") as sink:
        for row in dev_report["rows"] + probe_report["rows"]:
            sink.write(json.dumps(row) + "\n")
    _routing_plot(sets, out / "routing.png", args.profile)
    (out / "report.md").write_text(_routing_report(sets, results, dev_report, probe_report, command))
    for name, summary in sets.items():
        print(f"== {name}\n{format_routing_report(summary)}")
    return 0


def tqdm_rows(rows, desc):
    from tqdm import tqdm

    return tqdm(rows, unit="q", desc=f"routing {desc}", file=sys.stderr)


def _pct(a, b) -> str:
    return f"{a}/{b} = {100 * a / b:.1f}%" if b else "-"


def _routing_report(sets, results, dev_report, probe_report, command) -> str:
    lines = [
        f"# Routing over the FinanceBench index — profile `{results['profile']}`", "",
        f"Command: `{command}`", "",
        "The router as `finrag route` runs it: the deterministic pass (company names, aliases, "
        "tickers; fiscal periods and dates on each company's calendar; filing-type cues), the "
        f"router LLM ({results['router_model']}, one grammar-constrained JSON call) only when that "
        "pass finds no company or filing-type cues that conflict, and content disambiguation "
        "(a hybrid search scoped to the candidate filings) between filings of one period.", "",
        "Denominators: **exact**, **covering** and **precision** are over the questions whose "
        "gold filing is indexed *and* that name a company (a name, alias or ticker of the gold "
        "company written in the question); precision is gold filings routed over all filings "
        "routed for those questions. Questions naming no company and questions whose filing is "
        "not indexed are counted apart. A wrong-company route is any routed filing of another "
        "company, over every question. `tune` and `test` are the halves of `benchmarks/splits.py` "
        "(the same split as the quality benchmark); the probes are the project's own questions "
        "(`tests/data/routing_probes.jsonl`).", "",
        "| set | questions | indexed | name a company | exact | covering | precision | "
        "exact over indexed | exact over all | no company (routed) | not indexed: told / routed "
        "| wrong company |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in sets.items():
        n, nc, ni = s["named"], s["no_company"], s["not_indexed"]
        lines.append(
            f"| {name} | {s['questions']} | {s['present']} | {n['questions']} | "
            f"{_pct(n['exact'], n['questions'])} | {_pct(n['covering'], n['questions'])} | "
            f"{_pct(n['gold_routed'], n['routed_filings'])} | {_pct(s['exact'], s['present'])} | "
            f"{_pct(s['exact'], s['questions'])} | {nc['questions']} ({nc['routed']}) | "
            f"{ni['told_not_in_corpus']} / {ni['routed']} of {ni['questions']} | {s['wrong_company']} |")
    stats = results["router_stats"]
    lines += [
        "", "![routing](routing.png)", "",
        f"Router LLM calls: dev {stats['dev'].get('llm_calls', 0)} of {stats['dev'].get('routes', 0)} "
        f"questions, probes {stats['probes'].get('llm_calls', 0)} of {stats['probes'].get('routes', 0)} "
        f"(counters: dev {stats['dev']}, probes {stats['probes']}).", "",
        f"Probes routed as expected (filings and status): {results['probes_as_expected']} of "
        f"{results['probes']}.", "",
        "## Probes by kind", "", "| kind | probes | as expected |", "|---|---:|---:|",
    ]
    kinds: dict[str, list] = {}
    for r in probe_report["rows"]:
        kinds.setdefault(r["kind"], []).append(r)
    for kind, rows in kinds.items():
        lines.append(f"| {kind} | {len(rows)} | {sum(r['ok'] for r in rows)} |")
    lines += ["", "## Every miss", "",
              "Dev questions naming a company with their filing indexed and not routed to exactly it, "
              "wrong-company routes, no-company questions, and probes not routed as expected.", ""]
    misses = [r for r in dev_report["rows"] if r in dev_report["misses"] or
              (r["pdf_present"] and not r["names_company"])]
    misses += [r for r in probe_report["rows"] if not r["ok"]]
    for r in misses:
        question = " ".join(r["question"].split())
        lines.append(f"- [{r['split']}] gold {', '.join(r['gold']) or '(none)'} → {r['status']} "
                     f"{', '.join(r['doc_ids']) or '(whole corpus)'}"
                     f"{' — WRONG COMPANY' if r['wrong_company'] else ''}  \n"
                     f"  {question[:200]}  \n  _{r['detail'][:300]}_")
    if not misses:
        lines.append("(none)")
    return "\n".join(lines) + "\n"


def _routing_plot(sets, path: Path, profile: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(sets)
    metrics = [("exact", "exact"), ("covering", "covering"), ("precision", "precision")]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / len(metrics)
    colors = ["#1a5276", "#2471a3", "#229954"]
    for j, (key, label) in enumerate(metrics):
        vals = []
        for name in names:
            n = sets[name]["named"]
            vals.append(n["precision"] if key == "precision" else n[f"{key}_rate"])
        xs = [i + (j - 1) * width for i in range(len(names))]
        ax.bar(xs, [v or 0 for v in vals], width, label=label, color=colors[j])
        for x, v in zip(xs, vals):
            if v is not None:
                ax.text(x, v + 0.01, f"{v:.0%}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(names)),
                  [f"{n}\n(n={sets[n]['named']['questions']})" for n in names])
    ax.set_ylim(0, 1.15)
    ax.set_title(f"Routing on questions that name a company ({profile} profile)")
    ax.legend(fontsize=8, ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
