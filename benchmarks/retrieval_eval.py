"""Retrieval of every system on labelled questions, as a report with plots.

Runs ``retrieval.systems.evaluation.evaluate_retrieval`` (the same code as ``finrag eval retrieval``)
with its per-question rows kept in the results folder, so re-running resumes and a finished run
only redraws the report. Writes report.md, results.json, rows.jsonl and two PNGs.

    python -m finrag.benchmarks.retrieval_eval --index var/fb-index --profile cpu \\
        --systems cbr,cbr_meta,sfr,hdrr,agentic
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from finrag.benchmarks import report as R

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "financebench"


def _plots(summary: dict, out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = list(summary)
    metrics = [("hit5", "evidence hit@5"), ("hit10", "evidence hit@10"),
               ("wrong_doc_share", "wrong-filing share of context"),
               ("routing_accuracy", "routed to exactly the gold filing")]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    width = 0.8 / len(metrics)
    colors = ["#2471a3", "#1a5276", "#c0392b", "#229954"]
    for j, (key, label) in enumerate(metrics):
        xs = [i + (j - 1.5) * width for i in range(len(systems))]
        vals = [summary[s][key] for s in systems]
        ax.bar(xs, [v or 0 for v in vals], width, label=label, color=colors[j])
        for x, v in zip(xs, vals):
            if v is not None:
                ax.text(x, v + 0.01, f"{v:.0%}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(systems)), systems)
    ax.set_ylim(0, 1.12)
    ax.set_title(title)
    ax.legend(fontsize=7, ncols=4, loc="upper center", bbox_to_anchor=(0.5, -0.08))
    fig.tight_layout()
    fig.savefig(out / "retrieval_quality.png", dpi=120)
    plt.close(fig)

    stages = sorted({k for s in systems for k in summary[s]["latency_ms"] if k != "total"})
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    bottom = [0.0] * len(systems)
    cmap = plt.get_cmap("tab10")
    for j, stage in enumerate(stages):
        vals = [summary[s]["latency_ms"].get(stage, {}).get("mean", 0.0) / 1000 for s in systems]
        ax1.bar(systems, vals, bottom=bottom, label=stage, color=cmap(j % 10))
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax1.set_ylabel("seconds per question (mean)")
    ax1.set_title("Where the time goes (no generation)")
    ax1.legend(fontsize=7)
    tokens = [summary[s]["context_tokens"] or 0 for s in systems]
    ax2.bar(systems, tokens, color="#7d3c98")
    ax2.set_yscale("log")
    ax2.set_ylabel("context tokens per question (mean, log)")
    ax2.set_title("Context handed to the generator")
    for i, v in enumerate(tokens):
        ax2.text(i, v, f"{v:,.0f}", ha="center", va="bottom", fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "cost_and_latency.png", dpi=120)
    plt.close(fig)


def _report(summary: dict, meta: dict) -> str:
    def pct(v):
        return "–" if v is None else f"{v:.1%}"

    lines = [f"# Retrieval evaluation — profile `{meta['profile']}`", "",
             f"Command: `{meta['command']}`", "",
             f"{meta['questions']} questions from `{meta['questions_file']}` "
             f"({meta['on_disk']} with their filing in the index `{meta['index']}`); "
             f"large reranker {'on' if meta['large_rerank'] else 'off'}; no generation. "
             "hit@k: a chunk among the first k of the system's final ranking comes from the gold "
             "filing and covers an evidence page (SFR hands whole filings to the generator, so its "
             "hit@k says whether the evidence page is in its context at all). Wrong-filing "
             "share: "
             "chunks of the context from another filing, over questions whose filing is indexed. "
             "Latency on this 2-core CPU is only comparable between systems of this run.", "",
             "| system | routed exactly | hit@5 | hit@10 | wrong-filing share | wrong-filing share "
             "when routed | context tokens | LLM calls | p50 latency s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for system, s in summary.items():
        p50 = s["latency_ms"].get("total", {}).get("p50")
        lines.append(
            f"| {system} | {pct(s['routing_accuracy'])} | {pct(s['hit5'])} | {pct(s['hit10'])} | "
            f"{pct(s['wrong_doc_share'])} | {pct(s['wrong_doc_share_when_routed'])} | "
            f"{(s['context_tokens'] or 0):,.0f} | {(s['llm_calls'] or 0):.2f} | "
            f"{'–' if p50 is None else f'{p50 / 1000:.2f}'} |")
    facts = meta.get("facts_answered") or {}
    if any(f["facts_only"] for f in facts.values()):
        lines += ["", "Answered from the facts alone (a facts route, no passage search): such "
                  "an answer has no ranking, so hit@k above counts it as a miss. Over the "
                  "questions whose filing is indexed and that name evidence pages:", "",
                  "| system | questions | facts alone | searched | hit@5 of the searched |",
                  "|---|---:|---:|---:|---:|"]
        for system, f in facts.items():
            searched, hits = f["questions"] - f["facts_only"], f["hit5_searched"]
            share = f" ({hits / searched:.1%})" if searched else ""
            lines.append(f"| {system} | {f['questions']} | {f['facts_only']} | {searched} | "
                         f"{hits}{share} |")
    if meta.get("note"):
        lines += ["", f"Run note: {meta['note']}"]
    lines += ["", "Routing statuses:", ""]
    for system, s in summary.items():
        if s["routing_statuses"]:
            lines.append(f"- {system}: " + ", ".join(f"{k} {v}" for k, v in
                                                     s["routing_statuses"].items()))
    lines += ["", "![quality](retrieval_quality.png)", "", "![cost](cost_and_latency.png)", ""]
    return "\n".join(lines)


def facts_answered(rows: list[dict], systems: list[str]) -> dict[str, dict[str, int]]:
    """Per system, over the indexed questions with evidence pages: how many a facts route
    answered with no passage search, and how many of the others had evidence in the top 5."""
    out = {}
    for system in systems:
        mine = [r for r in rows if r["system"] == system and r["hit5"] is not None]
        searched = [r for r in mine if "facts" not in (r["timings_ms"] or {})
                    or "search" in (r["timings_ms"] or {})]
        out[system] = {"questions": len(mine), "facts_only": len(mine) - len(searched),
                       "hit5_searched": sum(bool(r["hit5"]) for r in searched)}
    return out


def main(argv: list[str] | None = None) -> int:
    from finrag.retrieval.systems.evaluation import evaluate_retrieval, load_questions
    from finrag.retrieval.systems.pipelines import Pipeline
    from finrag.retrieval.store.variant_indexes import variant_dir
    from finrag.retrieval.systems.recipes import SYSTEMS

    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.retrieval_eval", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index", type=Path, required=True)
    p.add_argument("--questions", type=Path, default=SHARED / "questions.dev.jsonl")
    p.add_argument("--systems", default="cbr,cbr_meta,sfr,hdrr,agentic")
    p.add_argument("--profile", default="cpu")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--note", default="", help="a sentence about this run for the report")
    args = p.parse_args(argv)
    systems = [s for s in args.systems.split(",") if s]
    if any(s not in SYSTEMS for s in systems):
        p.error(f"systems must be among {', '.join(SYSTEMS)}")
    out = args.out or REPO / "benchmarks" / "results" / f"retrieval_{args.profile}"
    out.mkdir(parents=True, exist_ok=True)
    questions = load_questions(args.questions, args.limit)
    pipe = Pipeline.load(args.index, profile=args.profile,
                         variant_dirs={v: variant_dir(args.index, v) for v in ("meta", "llmctx")})
    try:
        result = evaluate_retrieval(pipe, questions, systems, out=out / "rows.jsonl")
    finally:
        pipe.close()
    command = "python -m finrag.benchmarks.retrieval_eval " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    meta = {"command": command, "profile": pipe.profile.name, "index": str(args.index),
            "questions_file": R.shown_path(args.questions), "questions": len(questions),
            "on_disk": sum(q.pdf_present for q in questions),
            "large_rerank": pipe.settings.large_rerank, "energy_source": pipe.meter.source,
            "note": args.note,
            "facts_answered": facts_answered(
                [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()
                 if line.strip()], systems)}
    summary = result["systems"]
    (out / "results.json").write_text(json.dumps({**meta, "systems": summary}, indent=2))
    _plots(summary, out, f"Retrieval on {len(questions)} questions ({pipe.profile.name} profile)")
    (out / "report.md").write_text(_report(summary, meta))
    print((out / "report.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
