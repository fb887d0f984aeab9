"""Router LLM over FinanceBench dev questions: schema-valid rate, and how often the extracted
company and fiscal year agree with the question's own filing. Routing only — no resolver.

    python -m benchmarks.router_eval --profile cpu [--questions FILE] [--limit N]

Resumable: each routed question is appended to results/router_<profile>/routes.jsonl and
skipped on the next run. Writes report.md, results.json and a PNG beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

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


def main(argv: list[str] | None = None) -> int:
    from tqdm import tqdm

    from models.energy import select_meter
    from models.llm import SamplingParams, StructuredOutputError
    from models.profiles import load_config, resolve_role
    from models.router_schema import RouterOutput, router_messages
    from models.transformers_engine import TransformersEngine
    from retrieval.routing.companies import CompanyTable
    from retrieval.ingest.metadata import parse_filename

    p = argparse.ArgumentParser(prog="python -m benchmarks.router_eval", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", default="cpu")
    p.add_argument("--questions", type=Path, default=SHARED / "questions.dev.jsonl")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--max-tokens", type=int, default=160)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    out = args.out or REPO / "benchmarks" / "results" / f"router_{args.profile}"
    out.mkdir(parents=True, exist_ok=True)
    routes_path = out / "routes.jsonl"

    profile = load_config().active(args.profile)
    weights = resolve_role(profile, "router", prepare=True, progress=True)
    engine = TransformersEngine(weights.path, model_id=profile.role("router").model)
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
    with routes_path.open("a") as sink:
        for q in tqdm([q for q in questions if q["financebench_id"] not in done], unit="q",
                      desc=f"routing ({args.profile})"):
            gold = parse_filename(q["doc_name"], table)
            start = meter.start()
            try:
                (route, comp), = engine.generate_json([router_messages(q["question"])],
                                                      RouterOutput, params)
                valid, extracted, usage = True, route.model_dump(), comp.__dict__
            except StructuredOutputError as e:
                valid, extracted, usage = False, None, {"error": str(e)}
            reading = meter.stop(start)
            row = {
                "id": q["financebench_id"], "doc_name": q["doc_name"], "valid": valid,
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
    command = "python -m benchmarks.router_eval " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
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
        f"Model: {summary['model']} (transformers, Outlines JSON-schema constraint). "
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


if __name__ == "__main__":
    sys.exit(main())
