"""``benchmarks/perf_compare.py``'s figures and report: the after/before ratios of medians with
their bootstrap intervals, the per-stage table, the markdown report and its plot. (The parent
process imports this module when the run is done; a worker, which runs inside another
revision's worktree, never does.)"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import numpy as np

from finrag.benchmarks import report as R
from finrag.benchmarks import serve_load_report as L
from finrag.benchmarks.stats import bootstrap_ci

SIDES = ("before", "after")
MIN_TAIL = 30  # p95 only from at least this many answers per side
MIN_CI_PAIRS = 10  # a bootstrap interval only from at least this many paired answers
MIN_STAGE_MS = 1.0  # a stage ratio only where the before median reaches this (timer noise)


def ratio_ci(before: list[float], after: list[float], *, n: int = 4000, seed: int = 0,
             floor: float = 0.0) -> dict[str, Any]:
    """Ratio of medians after/before with a percentile bootstrap interval; the i-th values of
    both sides belong to the same question and are resampled together (the bootstrap draws
    question positions). No estimate where the before median is under ``floor``; no
    interval from fewer than ``MIN_CI_PAIRS`` pairs."""
    if len(before) != len(after):
        raise ValueError(f"paired values needed: {len(before)} before, {len(after)} after")
    b, a = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    none = {"estimate": None, "low": None, "high": None, "n": int(b.size)}
    if not b.size or np.median(b) <= max(floor, 0.0):
        return none
    if b.size < MIN_CI_PAIRS:
        return {**none, "estimate": float(np.median(a) / np.median(b))}

    def ratio(positions, axis=-1):  # one draw of positions (n,) or many (draws, n)
        i = np.asarray(positions).astype(int)
        mb, ma = np.median(b[i], axis=-1), np.median(a[i], axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(mb > 0, ma / np.where(mb > 0, mb, 1.0), np.nan)

    ci = bootstrap_ci(range(b.size), ratio, n=n, seed=seed)
    if np.isnan(ci["low"]) or np.isnan(ci["high"]):
        ci["low"] = ci["high"] = None  # some draws had a before median of 0
    return ci


def per_question_ratio(before: list[float], after: list[float], *, n: int = 4000,
                       seed: int = 0) -> dict[str, Any]:
    """Median over questions of after/before for the same question, with its bootstrap
    interval (from ``MIN_CI_PAIRS`` pairs): insensitive to how fast and slow questions mix,
    which moves a median of latencies when the workload has two kinds of answer."""
    ratios = [a / b for b, a in zip(before, after) if b > 0]
    if len(ratios) < MIN_CI_PAIRS:
        return {"estimate": _median(ratios), "low": None, "high": None, "n": len(ratios)}
    return bootstrap_ci(ratios, np.median, n=n, seed=seed)


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or a <= 0 else b / a


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    """Per side figures (``serve_load.summarise``), ratios with intervals, answer identity."""
    rows = result["rows"]
    for side in SIDES:
        rows[side].sort(key=lambda r: r["seq"])
    if [r["seq"] for r in rows["before"]] != [r["seq"] for r in rows["after"]]:
        raise RuntimeError("the two sides did not answer the same questions")
    sides = {s: L.summarise(rows[s], sum(r["latency_ms"] for r in rows[s]) / 1000)
             for s in SIDES}
    lat = {s: [r["latency_ms"] for r in rows[s]] for s in SIDES}
    total = ratio_ci(lat["before"], lat["after"])
    per_question = per_question_ratio(lat["before"], lat["after"])
    stage_names = list(dict.fromkeys(st for s in SIDES for r in rows[s]
                                     for st in (r.get("timings_ms") or {}) if st != "total"))
    stages = {}
    for st in stage_names:
        vals = {s: [(r.get("timings_ms") or {}).get(st) for r in rows[s]] for s in SIDES}
        both = [i for i in range(len(rows["before"]))
                if all(isinstance(vals[s][i], (int, float)) for s in SIDES)]
        b = [float(vals["before"][i]) for i in both]
        a = [float(vals["after"][i]) for i in both]
        stages[st] = {"in": [s for s in SIDES if any(v is not None for v in vals[s])],
                      "n_paired": len(both),
                      "p50": {s: (sides[s]["stage_ms"].get(st) or {}).get("p50") for s in SIDES},
                      "mean": {s: (sides[s]["stage_ms"].get(st) or {}).get("mean")
                               for s in SIDES},
                      "ratio_p50": ratio_ci(b, a, floor=MIN_STAGE_MS) if both else None}
        m = stages[st]["mean"]
        stages[st]["ratio_mean"] = (_ratio(m["before"], m["after"])
                                    if (m["before"] or 0) >= MIN_STAGE_MS else None)
    pairs = list(zip(rows["before"], rows["after"]))
    same = {"answer": sum(b["answer"] == a["answer"] and not b["error"] and not a["error"]
                          for b, a in pairs),
            "context": sum(b["context_ids"] == a["context_ids"] for b, a in pairs),
            "routing": sum(b["routing_docs"] == a["routing_docs"] for b, a in pairs),
            "n": len(pairs),
            "differing": [b["question_id"] for b, a in pairs if b["answer"] != a["answer"]]}
    return {"sides": sides, "total": total, "per_question": per_question, "stages": stages,
            "same": same,
            "tokens": {k: {s: sides[s][k] for s in SIDES} for k in
                       ("prompt_tokens", "completion_tokens", "llm_calls", "cpu_seconds")}}


def config_differences(ready: dict[str, dict]) -> list[str]:
    """The cascade, pipeline and model settings that differ between the sides."""
    out = []
    for part in ("cascade", "pipeline", "models"):
        b, a = ready["before"].get(part) or {}, ready["after"].get(part) or {}
        for key in sorted(set(b) | set(a)):
            if b.get(key) != a.get(key):
                out.append(f"{part}.{key}: {b.get(key, '(absent)')!r} → "
                           f"{a.get(key, '(absent)')!r}")
    return out


def plot(result: dict[str, Any], figures: dict[str, Any], out: Path, title: str) -> str:
    plt = R.pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    colours = {"before": "#7f8c8d", "after": "#2471a3"}
    for side in SIDES:
        xs = sorted(r["latency_ms"] / 1000 for r in result["rows"][side])
        ys = [0.0] + [(i + 1) / len(xs) for i in range(len(xs))]
        left.step([xs[0]] + xs, ys, where="post", color=colours[side],
                  label=f"{side} {result['revs'][side]['commit'][:8]} ({len(xs)} answers)")
    left.set_xlabel("latency per answer (s)")
    left.set_ylabel("fraction of answers")
    left.set_ylim(0, 1.02)
    left.grid(alpha=0.3)
    left.legend(fontsize=8, loc="lower right")
    left.set_title(f"latency CDF — {title}", fontsize=10)
    items = [("total", figures["total"])] + [
        (st, v["ratio_p50"]) for st, v in figures["stages"].items()
        if v["ratio_p50"] and v["ratio_p50"]["estimate"] is not None]
    y = list(range(len(items)))[::-1]
    for yi, (name, ci) in zip(y, items):
        est = ci["estimate"]
        if ci["low"] is not None:
            right.plot([ci["low"], ci["high"]], [yi, yi], color="#2471a3", lw=2)
        right.plot([est], [yi], "o", color="#c0392b" if name == "total" else "#2471a3")
    right.axvline(1.0, color="black", lw=0.8, ls="--")
    right.set_yticks(y, [n for n, _ in items])
    right.set_xlabel("after / before, ratio of medians (95% bootstrap interval)")
    right.grid(alpha=0.3, axis="x")
    right.set_title("< 1: after is faster", fontsize=10)
    return R.savefig(fig, out, "compare.png")


def _ms(v: float | None) -> str:
    return R.num(None if v is None else v / 1000, "{:.2f}")


def _ci(ci: dict | None) -> str:
    if not ci or ci.get("estimate") is None:
        return "–"
    if ci.get("low") is None:
        return f"{ci['estimate']:.3f}"
    return f"{ci['estimate']:.3f} [{ci['low']:.3f}, {ci['high']:.3f}]"


def report(result: dict[str, Any], figures: dict[str, Any], files: list[str]) -> str:
    m, revs, ready = result["meta"], result["revs"], result["ready"]
    sides, same = figures["sides"], figures["same"]
    n = same["n"]
    lines = R.header(f"Performance before/after — profile `{m['profile']}`, in-process, C=1",
                     m["command"], m["config_hash"])
    lines += [f"Machine: {m['machine']}; load average (1/5/15 min) "
              f"{'/'.join(f'{x:.2f}' for x in result['loadavg']['start'])} at the first block, "
              f"{'/'.join(f'{x:.2f}' for x in result['loadavg']['end'])} after the last "
              "(timed work: the figures mean something only if nothing else ran). Absolute "
              "times are for this machine; the ratios are the point.", "",
              "| side | commit | date | subject | torch threads | load + warmup s |",
              "|---|---|---|---|---:|---:|"]
    for side in SIDES:
        r = revs[side]
        lines.append(f"| {side} (`{r['rev']}`) | `{r['commit']}` | {r['date']} | "
                     f"{r['subject'][:80]} | {R.num(ready[side]['torch_threads'], '{}')} | "
                     f"{ready[side]['load_and_warmup_s']:.0f} |")
    harness = {ready[s]["harness"] for s in SIDES}
    blocks = " ".join("AB"[SIDES.index(side)] for *_, side in result["order"])
    lines += ["", f"Workload: system `{m['system']}`, generation {'on' if m['generate'] else 'off'}"
              f", {n} questions per side from `{m['questions_file']}` (the first {n}, same "
              f"order), index `{m['index']}`, concurrency 1, greedy decoding, {m['warmup']} "
              f"warm-up answer(s) per side first (not counted). Blocks of {m['block']} "
              f"questions, run in the order {blocks}"
              f" (A = before, B = after), {result['wall_s']:.0f} s in all. Each side ran in "
              "its own process from a worktree of its commit (imports checked to come from "
              "it); the timing harness (`benchmarks.perf.in_process`) was "
              + ("the same code in both." if len(harness) == 1 else
                 f"NOT the same code ({', '.join(ready[s]['harness'] for s in SIDES)})."), ""]
    diffs = config_differences(ready)
    if diffs:
        lines += ["Settings of the profile that differ (before → after; part of what is "
                  "measured):", ""] + [f"- {d}" for d in diffs] + [""]
    total = figures["total"]
    verdict = (f"too few paired answers for an interval (it needs {MIN_CI_PAIRS})"
               if total["low"] is None else
               "after is slower (the interval lies above 1)" if total["low"] > 1 else
               "after is faster (the interval lies below 1)" if total["high"] < 1 else
               "no difference this run can tell apart (the interval contains 1)")
    lines += ["## Headline", "",
              f"p50 latency per answer: before {_ms(sides['before']['latency_ms']['p50'])} s, "
              f"after {_ms(sides['after']['latency_ms']['p50'])} s; **after/before "
              f"{_ci(total)}** (ratio of medians over {n} paired questions"
              f"{', 95% bootstrap interval' if total['low'] is not None else ''}): {verdict}.",
              "", f"Median over questions of each question's after/before latency: "
              f"{_ci(figures['per_question'])} (not moved by the mix of fast and slow answers, "
              "e.g. the facts route's against a generated answer).",
              "", "## Latency per answer (s)", "",
              "| side | answers | p50 | p95 | mean | max |", "|---|---:|---:|---:|---:|---:|"]
    for side in SIDES:
        s = sides[side]["latency_ms"]
        p95 = s["p95"] if sides[side]["ok"] >= MIN_TAIL else None
        lines.append(f"| {side} | {sides[side]['ok']} | {_ms(s['p50'])} | {_ms(p95)} | "
                     f"{_ms(s['mean'])} | {_ms(s['max'])} |")
    b, a = sides["before"]["latency_ms"], sides["after"]["latency_ms"]
    lines.append(f"| after/before | | {_ci(total)} | "
                 f"{R.num(_ratio(b['p95'], a['p95']) if n >= MIN_TAIL else None, '{:.3f}')} | "
                 f"{R.num(_ratio(b['mean'], a['mean']), '{:.3f}')} | |")
    if n < MIN_TAIL:
        lines += ["", f"p95 is left out: {n} answers per side (it needs {MIN_TAIL})."]
    lines += ["", "## Stages (ms per answer)", "",
              "| stage | p50 before | p50 after | p50 after/before [95% CI] | mean before | "
              "mean after | mean after/before |", "|---|---:|---:|---:|---:|---:|---:|"]
    for st, v in figures["stages"].items():
        only = "" if len(v["in"]) == 2 else f" (only {v['in'][0] if v['in'] else 'neither'})"
        lines.append(f"| {st}{only} | {R.num(v['p50']['before'], '{:,.0f}')} | "
                     f"{R.num(v['p50']['after'], '{:,.0f}')} | {_ci(v['ratio_p50'])} | "
                     f"{R.num(v['mean']['before'], '{:,.0f}')} | "
                     f"{R.num(v['mean']['after'], '{:,.0f}')} | "
                     f"{R.num(v['ratio_mean'], '{:.3f}')} |")
    lines += ["", f"A stage's ratio is left out where its before median or mean is under "
              f"{MIN_STAGE_MS:g} ms (the timer's noise), its interval with fewer than "
              f"{MIN_CI_PAIRS} paired answers.", "", "## Cost per answer", "",
              "| | before | after | after/before |", "|---|---:|---:|---:|"]
    for key, label in (("prompt_tokens", "prompt tokens"),
                       ("completion_tokens", "completion tokens"),
                       ("llm_calls", "LLM calls"), ("cpu_seconds", "CPU seconds")):
        t = figures["tokens"][key]
        lines.append(f"| {label} | {R.num(t['before'], '{:,.2f}')} | "
                     f"{R.num(t['after'], '{:,.2f}')} | "
                     f"{R.num(_ratio(t['before'], t['after']), '{:.3f}')} |")
    lines += ["", "## Same answers?", "",
              f"- identical answer text: {same['answer']} of {n}",
              f"- identical context (the chunk ids given to the generator, in order): "
              f"{same['context']} of {n}",
              f"- identical routing (the filings chosen): {same['routing']} of {n}", ""]
    if same["differing"]:
        shown = ", ".join(str(q) for q in same["differing"][:15])
        more = len(same["differing"]) - 15
        lines += [f"Answers that differ: {shown}" + (f" and {more} more" if more > 0 else "")
                  + ". Routing or retrieval changes between the revisions change the context, "
                  "and so the answer; that is reported here, not a failure.", ""]
    lines += [*[f"![{f}]({f})" for f in files], ""]
    return "\n".join(lines)
