"""One system's answers under several configurations, question by question: accuracy with its
interval, the paired difference against the first run, cost and latency, by question type.

Each configuration is a ``finrag bench quality`` run of its own (its results folder); this
reads their ``per_question.jsonl`` and ``results.json`` and answers nothing:

    finrag bench quality --profile cpu --split tune --systems hdrr --name quality_tune_cpu …
    finrag bench quality --profile cpu-large --split tune --systems hdrr --name quality_tune_large …
    python -m finrag.benchmarks.quality_compare benchmarks/results/quality_tune_cpu \\
        benchmarks/results/quality_tune_large --system hdrr --name quality_cpu_generator

The runs must hold the same questions and the same judge, or the comparison says why not.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from finrag.benchmarks import report as R
from finrag.benchmarks import stats


def load_run(folder: Path, system: str) -> dict[str, Any]:
    results = folder / "results.json"
    rows_file = folder / "per_question.jsonl"
    if not results.is_file() or not rows_file.is_file():
        raise FileNotFoundError(f"{folder} is not a quality run (no results.json / "
                                "per_question.jsonl): run finrag bench quality first")
    import json

    meta = json.loads(results.read_text(encoding="utf-8"))
    rows = {r["id"]: r for r in R.read_jsonl(rows_file) if r["system"] == system}
    if not rows:
        raise ValueError(f"{folder} holds no answers of system {system!r}")
    unlabelled = sorted(i for i, r in rows.items() if r.get("label") is None)
    if unlabelled:
        raise ValueError(f"{folder}: {len(unlabelled)} answers of {system} carry no label "
                         f"(e.g. {unlabelled[0]}); compare runs with a judge")
    return {"folder": R.shown_path(folder), "profile": meta["profile"], "split": meta.get("split"),
            "judge": meta["judge"], "command": meta["command"], "rows": rows,
            "latency_s": meta["systems"][system]["latency_s"]}


def compare(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ids = set(runs[0]["rows"])
    for run in runs[1:]:
        if set(run["rows"]) != ids:
            raise ValueError(f"{run['folder']} answered other questions than {runs[0]['folder']}"
                             f" ({len(run['rows'])} against {len(ids)})")
        if run["judge"] != runs[0]["judge"]:
            raise ValueError(f"{run['folder']} was judged otherwise than {runs[0]['folder']}: "
                             f"{run['judge']} against {runs[0]['judge']}")
    out = []
    base = {i: float(r["label"] == "correct") for i, r in runs[0]["rows"].items()}
    for run in runs:
        correct = {i: float(r["label"] == "correct") for i, r in run["rows"].items()}
        generated = [r for r in run["rows"].values() if r.get("llm_calls")]
        by_type: dict[str, list[float]] = defaultdict(list)
        for i, r in run["rows"].items():
            by_type[r.get("question_type") or "?"].append(correct[i])
        out.append({
            "folder": run["folder"], "profile": run["profile"], "questions": len(correct),
            "accuracy": stats.bootstrap_ci(list(correct.values())),
            "paired_vs_first": stats.paired_difference(correct, base),
            "generated": len(generated),
            "prompt_tokens_generated": (sum(r["prompt_tokens"] or 0 for r in generated)
                                        / len(generated)) if generated else None,
            "context_tokens_generated": (sum(r["context_tokens"] or 0 for r in generated)
                                         / len(generated)) if generated else None,
            "latency_s": run["latency_s"],
            "by_type": {t: sum(v) / len(v) for t, v in sorted(by_type.items())},
            "type_counts": {t: len(v) for t, v in sorted(by_type.items())},
            "changed_vs_first": sorted(i for i in correct if correct[i] != base[i]),
        })
    return {"runs": out, "split": runs[0]["split"], "judge": runs[0]["judge"],
            "commands": [r["command"] for r in runs]}


def _plot(result: dict, out: Path) -> str:
    plt = R.pyplot()
    runs = result["runs"]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for run in runs:
        acc, lat = run["accuracy"], run["latency_s"]["p50"]
        ax.errorbar([lat], [100 * acc["estimate"]],
                    yerr=[[100 * (acc["estimate"] - acc["low"])],
                          [100 * (acc["high"] - acc["estimate"])]], fmt="o", capsize=4)
        ax.annotate(run["profile"], (lat, 100 * acc["estimate"]), textcoords="offset points",
                    xytext=(6, 4), fontsize=8)
    ax.set_xlabel("p50 latency per answer (s)")
    ax.set_ylabel("accuracy (%), 95% interval")
    ax.set_title("Accuracy against latency, same questions", fontsize=10)
    ax.grid(alpha=0.3)
    return R.savefig(fig, out, "accuracy_latency.png")


def write_report(result: dict, out: Path, command: str, system: str) -> None:
    runs = result["runs"]
    split = result["split"] or "all"
    first = runs[0]["profile"]
    lines = R.header(f"One system, several configurations — `{system}`", command,
                     R.config_hash(result["commands"]))
    lines += [f"Questions: {runs[0]['questions']} (split `{split}`), the same in every run; "
              f"judge `{result['judge'].get('model_id')}` "
              f"(engine {result['judge'].get('engine', 'not recorded')}), the same in every run. "
              "Each run answered and was judged by its own command:", ""]
    lines += [f"- `{c}`" for c in result["commands"]]
    lines += ["", "| profile | accuracy [95% CI] | paired vs " + f"`{first}` [95% CI]"
              " | generated answers | prompt tokens (generated) | context tokens (generated) "
              "| p50 s | p95 s |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for run in runs:
        acc, d = run["accuracy"], run["paired_vs_first"]
        paired = "–" if run is runs[0] else (
            f"{100 * d['mean_diff']:+.1f} pp [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}]")
        lines.append(
            f"| `{run['profile']}` | {R.pct(acc['estimate'])} [{R.pct(acc['low'])}, "
            f"{R.pct(acc['high'])}] | {paired} | {run['generated']} | "
            f"{R.num(run['prompt_tokens_generated'], '{:,.0f}')} | "
            f"{R.num(run['context_tokens_generated'], '{:,.0f}')} | "
            f"{run['latency_s']['p50']:.2f} | {run['latency_s']['p95']:.2f} |")
    types = list(runs[0]["by_type"])
    lines += ["", "Accuracy by question type:", "",
              "| profile | " + " | ".join(f"{t} ({runs[0]['type_counts'][t]})" for t in types)
              + " |", "|---|" + "---:|" * len(types)]
    for run in runs:
        lines.append(f"| `{run['profile']}` | "
                     + " | ".join(R.pct(run["by_type"][t]) for t in types) + " |")
    lines += ["", "Questions whose label differs from the first run's:", ""]
    for run in runs[1:]:
        lines.append(f"- `{run['profile']}`: {len(run['changed_vs_first'])} "
                     f"({', '.join(run['changed_vs_first']) or 'none'})")
    lines += ["", f"![accuracy against latency]({_plot(result, out)})", "",
              "Latency is each run's own wall time on this machine, one question at a time; "
              "the runs were taken one after the other, alone."]
    (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="quality results folders; the first is "
                   "the one the others are compared with")
    p.add_argument("--system", default="hdrr")
    p.add_argument("--name", default="quality_compare")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if len(args.runs) < 2:
        p.error("give two runs or more")
    result = compare([load_run(f, args.system) for f in args.runs])
    out = R.results_dir(args.name, args.out)
    R.write_json(out / "results.json", result)
    command = "python -m finrag.benchmarks.quality_compare " + " ".join(
        sys.argv[1:] if argv is None else argv)
    write_report(result, out, command, args.system)
    print(f"wrote {out / 'report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
