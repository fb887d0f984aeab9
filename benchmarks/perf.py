"""``finrag bench perf``: latency per stage, throughput against concurrency, and what an answer
costs (tokens, LLM calls, CPU seconds, joules with their source), with the bottleneck named.

Three ways to run it:

- ``--in-process``: the pipeline in this process. Concurrency C = C questions handed to the
  pipeline at once (``Pipeline.answer_many``: retrieval one by one, one generator batch), the
  way ``finrag batch`` scores questions. Each answer's latency is its batch's wall time.
- ``--url URL``: bounded closed-loop load on a running Serve app (``benchmarks.serve_load``):
  C clients, each sending its next request when the last reply came.
- ``--start``: the same against an app this run starts on 127.0.0.1 and stops after.

Per-stage figures come from each Answer's ``timings_ms``; the bottleneck is the stage with the
largest share of the summed mean stage time. ``--engine-only MODEL`` measures the generator
engine alone (``benchmarks.engine_only``: vLLM with dummy weights, fixed prompt and output
lengths), so a GPU with no weights on disk still gives true tokens/s and J/token.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from finrag.benchmarks import report as R
from finrag.benchmarks import serve_load as L
from finrag.benchmarks import serve_load_report as SR

GPU_RUNBOOK = """\
## Running this on a GPU server

Absolute latency, throughput and energy figures mean something only on the hardware that will
serve. On a GPU server with finrag installed with its `gpu` extra (vLLM, NVML energy):

```bash
# the whole service, as deployed (vLLM generator, NVML joules per answer)
finrag bench perf --start --config deploy/gpu.yaml --index /srv/finrag/index --profile gpu \\
    --concurrency 1,4,16,64 --requests 128 --name perf_gpu_serve
# the pipeline in one process (no HTTP, no Ray)
finrag bench perf --in-process --index /srv/finrag/index --profile gpu \\
    --concurrency 1,8,32 --requests 64 --name perf_gpu_inprocess
# the generator engine alone, with dummy weights: only config.json and the tokenizer of the
# architecture are needed (no weights), e.g. the gpu profile's generator
finrag bench perf --engine-only /srv/models/Qwen2.5-7B-Instruct --prompt-tokens 2048 \\
    --output-tokens 256 --batch-sizes 1,8,32,128 --name engine_gpu
```

Energy comes from NVML there (GPU board energy counter) and is labelled so; on a machine without
NVML or RAPL every joules field stays empty ("unavailable"), never estimated. Then
`finrag bench pareto` combines these results with `finrag bench quality`'s.
"""


# --- in-process ------------------------------------------------------------------------------

def in_process(pipe, questions: list[dict], levels: list[int], *, requests: int, system: str,
               generate: bool, warmup: int = 1, progress: bool = True) -> dict[str, Any]:
    """Every level answers ``requests`` questions (cycled from the first), C at a time."""
    rows: list[dict] = []

    def batch(qs: list[dict], label: str, c: int, seq0: int, t_level: float) -> None:
        t0 = time.perf_counter()
        answers = pipe.answer_many([q["question"] for q in qs], system, generate=generate)
        wall_ms = (time.perf_counter() - t0) * 1000
        for k, (q, a) in enumerate(zip(qs, answers)):
            row = {"status": 200, "outcome": SR.OK, "latency_ms": round(wall_ms, 2),
                   "phase": label, "concurrency": c, "seq": seq0 + k,
                   "question_id": q.get("id") or q["_i"],
                   "t_end_s": round(time.perf_counter() - t_level, 3),
                   **L.answer_fields(a.to_dict())}
            rows.append(row)
            if progress:
                print(f"[{label}] {seq0 + k + 1}/{requests} {row['question_id']}: "
                      f"{wall_ms / 1000:.2f} s (batch of {len(qs)}), {row['prompt_tokens']}+"
                      f"{row['completion_tokens']} tok, {row['llm_calls']} LLM calls",
                      file=sys.stderr, flush=True)

    t = time.perf_counter()
    for i in range(warmup):
        batch([questions[i % len(questions)]], "warmup", 1, i, t)
    levels_out = []
    for c in levels:
        label, start, sent = f"c={c}", time.perf_counter(), 0
        while sent < requests:
            qs = [questions[(sent + k) % len(questions)] for k in range(min(c, requests - sent))]
            batch(qs, label, c, sent, start)
            sent += len(qs)
        mine = [r for r in rows if r["phase"] == label]
        levels_out.append({"concurrency": c,
                           **SR.summarise(mine, time.perf_counter() - start, sent)})
    return {"levels": levels_out, "overload": None, "metrics": [], "rows": rows}


# --- figures ---------------------------------------------------------------------------------

def bottleneck(level: dict[str, Any]) -> dict[str, Any] | None:
    """The stage with the largest share of the summed mean stage time at a level."""
    stages = level.get("stage_ms") or {}
    total = sum(v["mean"] or 0 for v in stages.values())
    if not total:
        return None
    stage = max(stages, key=lambda s: stages[s]["mean"] or 0)
    return {"stage": stage, "share": (stages[stage]["mean"] or 0) / total,
            "mean_ms": stages[stage]["mean"]}


def stage_table(level: dict[str, Any]) -> list[str]:
    stages = level.get("stage_ms") or {}
    total = sum(v["mean"] or 0 for v in stages.values()) or 1
    lines = ["| stage | p50 ms | p95 ms | p99 ms | mean ms | share of stage time |",
             "|---|---:|---:|---:|---:|---:|"]
    for s, v in stages.items():
        lines.append(f"| {s} | {R.num(v['p50'], '{:,.0f}')} | {R.num(v['p95'], '{:,.0f}')} | "
                     f"{R.num(v['p99'], '{:,.0f}')} | {R.num(v['mean'], '{:,.0f}')} | "
                     f"{R.pct((v['mean'] or 0) / total)} |")
    return lines


def cost_rows(levels: list[dict]) -> list[str]:
    lines = ["| C | answers/s | prompt tok | completion tok | LLM calls | CPU s/answer | "
             "joules/answer (source) |", "|---:|---:|---:|---:|---:|---:|---|"]
    for lv in levels:
        e = lv["energy"]
        joules = (f"{e['joules_per_answer']:.1f} ({e['source']})"
                  if e["joules_per_answer"] is not None else f"n/a ({e['source']})")
        lines.append(f"| {lv['concurrency']} | {R.num(lv['answers_per_s'], '{:.3f}')} | "
                     f"{R.num(lv['prompt_tokens'])} | {R.num(lv['completion_tokens'])} | "
                     f"{R.num(lv['llm_calls'], '{:.2f}')} | {R.num(lv['cpu_seconds'], '{:.2f}')} "
                     f"| {joules} |")
    return lines


def stage_plot(levels: list[dict], out: Path, title: str) -> str:
    import numpy as np

    plt = R.pyplot()
    stages = list(dict.fromkeys(s for lv in levels for s in lv.get("stage_ms") or {}))
    fig, ax = plt.subplots(figsize=(8.5, 0.5 * len(levels) + 2.2))
    y = np.arange(len(levels))[::-1]
    left = np.zeros(len(levels))
    for i, s in enumerate(stages):
        vals = np.array([((lv.get("stage_ms") or {}).get(s) or {}).get("mean") or 0
                         for lv in levels]) / 1000
        ax.barh(y, vals, left=left, label=s, color=plt.cm.tab10(i % 10))
        left += vals
    ax.set_yticks(y, [f"C={lv['concurrency']}" for lv in levels])
    ax.set_xlabel("mean seconds per answer, by stage")
    ax.set_title(f"where an answer's time goes — {title}")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return R.savefig(fig, out, "stages.png")


def report(result: dict[str, Any], files: list[str]) -> str:
    m = result["meta"]
    lines = R.header(f"Performance — {m['mode']}, profile `{m['profile']}`", m["command"],
                     m["config_hash"])
    lines += [f"Machine: {m['machine']}. Mode: {m['mode_desc']}. System `{m['system']}`, "
              f"generation {'on' if m['generate'] else 'off'}; {m['questions']} questions from "
              f"`{m['questions_file']}`, cycled; {m['requests']} answers per level. Energy "
              f"source: {m['energy_source']}. On this {m['cores']}-core CPU absolute times are "
              "only comparable within this run (between levels and stages).", "",
              "## Bottleneck", ""]
    for lv in result["levels"]:
        b = lv.get("bottleneck")
        if b:
            lines.append(f"- C={lv['concurrency']}: **{b['stage']}** — {R.pct(b['share'])} of "
                         f"the stage time, {b['mean_ms'] / 1000:.2f} s per answer on average")
    lines += ["", "## Latency and throughput per concurrency level", ""]
    lines += SR.level_table(result["levels"])
    lines += ["", "## Cost per answer", ""]
    lines += cost_rows(result["levels"])
    if all(lv.get("cpu_seconds") is None for lv in result["levels"]):
        lines += ["", "CPU seconds are measured in-process only: behind the Serve app the stages "
                  "run in other processes, and the Ingress's own CPU time would undercount."]
    for lv in result["levels"]:
        lines += ["", f"## Stages at C={lv['concurrency']}", ""] + stage_table(lv)
    if result.get("overload"):
        s = result["overload"]["summary"]
        lines += ["", f"Overload probe: {result['overload']['n']} simultaneous requests → "
                  f"{s['ok']} × 200, {s['rejected_503']} × 503 with Retry-After, "
                  f"{s['unexpected']} unexpected, {s['lost']} lost.", ""]
    if result.get("failures"):
        lines += ["", "## Failed checks", ""] + [f"- {f}" for f in result["failures"]]
    lines += ["", *[f"![{f}]({f})" for f in files], "", GPU_RUNBOOK]
    return "\n".join(lines)


# --- command ---------------------------------------------------------------------------------

def add_parser(sub) -> None:
    from finrag.benchmarks import engine_only
    from finrag.serving.options import add_pipeline_options

    p = sub.add_parser("perf", help="latency per stage, throughput against concurrency, tokens, "
                       "CPU seconds and joules per answer", description=__doc__.split("\n\n")[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--in-process", action="store_true", help="the pipeline in this process")
    where.add_argument("--url", help="a running Serve app, e.g. http://127.0.0.1:8000")
    where.add_argument("--start", action="store_true", help="start the Serve app on 127.0.0.1 "
                       "for this run (deploy/cpu.yaml or --serve-config) and stop it after")
    where.add_argument("--engine-only", metavar="MODEL", help="the vLLM engine alone on MODEL "
                       "(a folder with config.json and tokenizer) with dummy weights")
    add_pipeline_options(p)
    p.add_argument("--serve-config", type=Path, default=None, help="Serve config for --start")
    p.add_argument("--questions", type=Path, default=R.SHARED / "questions.dev.jsonl")
    p.add_argument("--system", default="hdrr")
    p.add_argument("--no-generate", action="store_true", help="stop after retrieval")
    p.add_argument("--concurrency", default="1,2", help="levels, e.g. 1,2,4,8")
    p.add_argument("--requests", type=int, default=30, help="answers per level (default 30: "
                   "p95/p99 are reported only from at least 30)")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--overload", type=int, default=0, help="--url/--start: N simultaneous "
                   "requests after the levels")
    p.add_argument("--max-in-flight", type=int, default=None, help="--start: the app's limit")
    engine_only.add_arguments(p)
    p.add_argument("--name", default=None, help="results folder name (default "
                   "perf_<profile>_<mode>)")
    p.add_argument("--out", type=Path, default=None, help="results folder (overrides --name)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=main)


def _sec(ms: float | None) -> str:
    return R.num(None if ms is None else ms / 1000, "{:.2f}")


def _levels(text: str) -> list[int]:
    try:
        levels = [int(c) for c in text.split(",") if c.strip()]
    except ValueError:
        raise ValueError(f"--concurrency takes integers, e.g. 1,2,4, got {text!r}") from None
    if not levels or min(levels) < 1:
        raise ValueError("--concurrency needs levels >= 1")
    return levels


def main(args) -> int:
    import json

    from finrag.benchmarks import engine_only

    if args.engine_only:
        return engine_only.main(args)
    levels = _levels(args.concurrency)
    if args.requests < 1:
        raise ValueError("--requests must be >= 1 (every level is bounded)")
    questions = L.load_questions(args.questions)
    mode = "in-process" if args.in_process else ("started app" if args.start else "app")
    profile = args.profile
    config: dict[str, Any] = {"mode": mode, "system": args.system, "generate": not args.no_generate,
                              "levels": levels, "requests": args.requests,
                              "questions": str(args.questions)}
    if args.in_process:
        from finrag.benchmarks.quality import system_config
        from finrag.serving.options import load_pipeline

        pipe = load_pipeline(args)
        profile = pipe.profile.name
        out = R.results_dir(args.name or f"perf_{profile}_inprocess", args.out)
        try:
            config["pipeline"] = system_config(pipe, args.system)
            result = in_process(pipe, questions, levels, requests=args.requests,
                                system=args.system, generate=not args.no_generate,
                                warmup=args.warmup, progress=not args.quiet)
            source = pipe.meter.source
        finally:
            pipe.close()
        desc = "the pipeline in this process; C questions per `answer_many` call"
        result["failures"] = []
    else:
        out = R.results_dir(args.name or f"perf_{profile or 'app'}_serve", args.out)
        argv = ["--questions", str(args.questions), "--system", args.system,
                "--concurrency", args.concurrency, "--requests", str(args.requests),
                "--warmup", str(args.warmup), "--overload", str(args.overload),
                "--out", str(out)]
        if args.no_generate:
            argv.append("--no-generate")
        if args.url:
            argv += ["--url", args.url]
            desc = f"closed-loop HTTP load on the running app {args.url}"
        else:
            if args.index is None:
                raise ValueError("--start needs --index")
            argv += ["--start", "--index", str(args.index)]
            argv += ["--profile", profile] if profile else []
            argv += ["--config", str(args.serve_config)] if args.serve_config else []
            argv += ["--max-in-flight", str(args.max_in_flight)] if args.max_in_flight else []
            desc = "closed-loop HTTP load on the Serve app started on 127.0.0.1 for this run"
        code = L.main(argv)
        if not (out / "results.json").is_file():
            raise RuntimeError(f"the load run wrote no results (exit {code})")
        result = json.loads((out / "results.json").read_text())
        profile = result["meta"].get("profile") or profile
        source = ", ".join(sorted({lv["energy"]["source"] for lv in result["levels"]}))
        config["target"] = result["meta"]["target_desc"]
    for lv in result["levels"]:
        lv["bottleneck"] = bottleneck(lv)
    result["meta"] = {**result.get("meta", {}), "command": R.command_line(args), "mode": mode,
                      "mode_desc": desc, "profile": profile, "system": args.system,
                      "generate": not args.no_generate, "questions": len(questions),
                      "questions_file": R.shown_path(args.questions), "requests": args.requests,
                      "energy_source": source, "cores": os.cpu_count(),
                      "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                                 f"{platform.python_version()}",
                      "config_hash": R.config_hash(config)}
    title = f"{profile}, {args.system}, {mode}"
    files = SR.draw_plots(result["levels"], result["rows"], out, title)
    files.append(stage_plot(result["levels"], out, title))
    R.write_json(out / "results.json", result)
    (out / "report.md").write_text(report(result, files), encoding="utf-8")
    for lv in result["levels"]:
        b = lv["bottleneck"]
        print(f"C={lv['concurrency']}: {R.num(lv['answers_per_s'], '{:.3f}')} answers/s, p50 "
              f"{_sec(lv['latency_ms']['p50'])} s, p99 {_sec(lv['latency_ms']['p99'])} s; "
              f"bottleneck {b['stage'] if b else '–'}"
              + (f" ({R.pct(b['share'])})" if b else ""))
    print(f"report: {out / 'report.md'}")
    return 1 if result.get("failures") else 0
