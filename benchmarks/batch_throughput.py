"""Batch scoring throughput: ``finrag batch`` on Ray Data against a plain sequential loop over
the same pipeline, on the same questions, in one run; then a resume check.

    python -m finrag.benchmarks.batch_throughput --index var/fb-index --profile cpu \\
        --questions ../shared/data/financebench/questions.dev.jsonl --batch-size 8

Writes benchmarks/results/<name>/ report.md, results.json, throughput.png and the two answer
files (sequential.jsonl, ray.jsonl). Re-running resumes both answer files (delete the folder
for a fresh measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from finrag.benchmarks import report as R

REPO = Path(__file__).resolve().parents[1]
SHARED_QUESTIONS = REPO.parent / "shared" / "data" / "financebench" / "questions.dev.jsonl"


def _plot(results: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = results["runs"]
    labels = [r["label"] for r in runs]
    rates = [r["questions_per_s"] * 60 if r["questions_per_s"] else 0 for r in runs]
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    bars = ax.barh(labels, rates, color=["#7f8c8d", "#2471a3", "#1a5276"][:len(runs)])
    for bar, r, rate in zip(bars, runs, rates):
        ax.text(rate, bar.get_y() + bar.get_height() / 2,
                f" {rate:.2f}/min  ({r['seconds'] / 60:.1f} min)", va="center", fontsize=8)
    ax.set_xlabel("questions answered per minute")
    ax.set_xlim(0, max(rates or [1]) * 1.45)
    ax.set_title(f"{results['questions']} questions, {results['system']}, profile "
                 f"{results['profile']} — speed-up {results['speedup']:.2f}×", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=120)
    plt.close(fig)


def _report(results: dict, command: str) -> str:
    lines = [f"# Batch scoring throughput ({results['profile']})", "", "```", command, "```", "",
             f"{results['questions']} questions"
             + ("" if results.get("split", "all") == "all" else
                f" (the {results['split']} half of `benchmarks/splits.py`)")
             + f", system `{results['system']}`, generation "
             f"{'on' if results['generate'] else 'off'}, index `{results['index']}`, "
             f"{results['cores']} CPU cores. The runs of profile `{results['profile']}` use the "
             "same `Pipeline` settings; every run went one after the other on the same "
             "machine.", "",
             "| run | answered | errors | wall s | questions/min | LLM calls | prompt tokens | "
             "completion tokens | energy |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results["runs"]:
        joules = "n/a" if r["energy"]["joules"] is None else f"{r['energy']['joules']:.0f} J"
        lines.append(f"| {r['label']} | {r['answered']} | {r['errors']} | {r['seconds']:.0f} | "
                     f"{(r['questions_per_s'] or 0) * 60:.2f} | {r['llm_calls']} | "
                     f"{r['prompt_tokens']} | {r['completion_tokens']} | {joules} "
                     f"({r['energy']['source']}) |")
    lines += ["", f"**Speed-up of the Ray Data run over the sequential loop: "
              f"{results['speedup']:.2f}×** (questions per second, same questions).", ""]
    if results.get("speedup_vs_baseline"):
        up = results["speedup_vs_baseline"]
        lines += [f"**Against the baseline profile `{results['baseline_profile']}`** (its "
                  f"sequential loop, same questions, same run): the sequential loop of "
                  f"`{results['profile']}` {up['sequential']:.2f}×, its Ray Data run "
                  f"{up['ray']:.2f}×.", ""]
    lines += [f"Answers that differ between the sequential and the Ray run: "
              f"{results['differing_answers']} of {results['questions']} (another thread count, "
              "or prompts batched and padded to a common length, can change a greedy decode's "
              "floating-point path).", "",
              "Resume: " + results["resume"], "", "![throughput](throughput.png)", "",
              "On this CPU the figures are only meaningful relative to each other; energy is "
              "`unavailable` where neither NVML nor RAPL can be read."]
    return "\n".join(lines) + "\n"


def split_questions(path: Path, split: str, out: Path) -> Path:
    """The question lines of one split, written to ``out/questions_<split>.jsonl``."""
    from finrag.benchmarks.splits import select

    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    chosen = select(records, split, records)
    if not chosen:
        raise ValueError(f"no {split} questions in {path} (FinanceBench records are split)")
    target = out / f"questions_{split}.jsonl"
    target.write_text("".join(json.dumps(r) + "\n" for r in chosen), encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    from finrag.serving.batch import read_questions, run_batch

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--index", type=Path, required=True)
    p.add_argument("--profile", default="cpu")
    p.add_argument("--config", type=Path, default=None, metavar="FILE",
                   help="a YAML that extends models/profiles.yaml (profiles of its own)")
    p.add_argument("--questions", type=Path, default=SHARED_QUESTIONS)
    p.add_argument("--system", default="hdrr")
    p.add_argument("--split", choices=("all", "tune", "test"), default="all",
                   help="FinanceBench questions of one half of benchmarks/splits.py (default all)")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--no-generate", action="store_true")
    p.add_argument("--baseline-profile", default=None, metavar="PROFILE",
                   help="first, a sequential loop on this profile (e.g. cpu-transformers, the "
                   "engine before): the before of a before/after, in the same run")
    p.add_argument("--name", default=None)
    p.add_argument("--out", type=Path, default=None, help="results folder (overrides --name)")
    args = p.parse_args(argv)
    if args.config is not None:  # the Ray actors' working folder is not this one
        args.config = args.config.resolve()
    out = R.results_dir(args.name or f"batch_{args.profile}", args.out)
    if args.split != "all":
        args.questions = split_questions(args.questions, args.split, out)
    common = dict(index=args.index, system=args.system, generate=not args.no_generate,
                  limit=args.limit, pipeline_kwargs=dict(profile=args.profile,
                                                              config=args.config))
    runs = []
    baseline = None
    if args.baseline_profile:
        baseline = run_batch(args.questions, out / "baseline.jsonl", sequential=True,
                             **(common | {"pipeline_kwargs": dict(profile=args.baseline_profile,
                                                                  config=args.config)}))
        runs.append(baseline | {"label": f"sequential loop, profile {args.baseline_profile} "
                                         "(baseline)"})
    seq = run_batch(args.questions, out / "sequential.jsonl", sequential=True, **common)
    runs.append(seq | {"label": "sequential loop"})
    ray_run = run_batch(args.questions, out / "ray.jsonl", workers=args.workers,
                        batch_size=args.batch_size, **common)
    runs.append(ray_run | {"label": f"Ray Data, {args.workers} actor(s) × batch {args.batch_size}"})
    again = run_batch(args.questions, out / "ray.jsonl", workers=args.workers,
                      batch_size=args.batch_size, progress=False, **common)
    import ray

    ray.shutdown()
    n = len(read_questions(args.questions)[:args.limit])

    def answers(path):
        return {r["id"]: r["answer"] for r in map(json.loads, path.read_text().splitlines())}

    a, b = answers(out / "sequential.jsonl"), answers(out / "ray.jsonl")
    resume = (f"a second `finrag batch` over the same output answered {again['answered']} and "
              f"skipped {again['already_done']} already there; the file holds {len(b)} distinct "
              f"ids in {len((out / 'ray.jsonl').read_text().splitlines())} lines.")
    if any(r["already_done"] for r in (seq, ray_run, *([baseline] if baseline else []))):
        resume += " (This run resumed earlier partial runs: the throughput covers only the " \
                  "questions answered in it.)"
    results = {"questions": n, "split": args.split, "system": args.system, "profile": args.profile,
               "generate": not args.no_generate, "index": str(args.index),
               "cores": os.cpu_count(), "runs": runs,
               "speedup": (ray_run["questions_per_s"] or 0) / (seq["questions_per_s"] or 1),
               "baseline_profile": args.baseline_profile,
               "speedup_vs_baseline": None if baseline is None else {
                   label: (r["questions_per_s"] or 0) / (baseline["questions_per_s"] or 1)
                   for label, r in (("sequential", seq), ("ray", ray_run))},
               "differing_answers": sum(a.get(k) != b.get(k) for k in a), "resume": resume}
    for run in runs:  # where the answers went, said relative to the repository
        run["out"] = R.shown_path(run["out"])
    (out / "results.json").write_text(json.dumps(results, indent=2))
    _plot(results, out)
    command = "python -m finrag.benchmarks.batch_throughput " + shlex.join(argv or sys.argv[1:])
    (out / "report.md").write_text(_report(results, command))
    print((out / "report.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
