"""``finrag bench quality``'s report: the markdown with its tables and the PNG plots, drawn from
the summary that ``benchmarks/quality.py`` computes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from finrag.benchmarks import report as R
from finrag.benchmarks import stats

# Scores in bands that line up with the rubric's rates: failure P(s=1), correctness P(s>=8),
# perfect P(s=10).
BANDS = ((1, 1, "1 (failure)"), (2, 4, "2–4"), (5, 7, "5–7"), (8, 9, "8–9"), (10, 10, "10 (perfect)"))
LABELS = ("correct", "incorrect", "refusal")

# For orientation only: the HDRR paper's abstract (Cheng, Lai, Liu 2026, arXiv 2603.26815),
# FinDER benchmark, 1,500 queries, other models and corpus. None: not given in the abstract.
PAPER = {
    "source": "HDRR paper (arXiv 2603.26815) abstract: FinDER, 1,500 queries, other models "
              "and corpus",
    "systems": {
        "cbr": {"average": 6.02, "failure_rate": 0.225, "correctness": 0.490,
                "perfect_rate": 0.138, "context_tokens": "~5K–15K"},
        "sfr": {"average": 6.45, "failure_rate": 0.103, "correctness": None,
                "perfect_rate": 0.085, "context_tokens": "~50K–200K"},
        "hdrr": {"average": 7.54, "failure_rate": 0.064, "correctness": 0.677,
                 "perfect_rate": 0.201, "context_tokens": "~5K–15K"},
    },
}


def _ci(ci: dict, fmt: str = "{:.2f}", scale: float = 1.0) -> str:
    if ci.get("estimate") is None:
        return "–"
    return (f"{fmt.format(scale * ci['estimate'])} "
            f"[{fmt.format(scale * ci['low'])}, {fmt.format(scale * ci['high'])}]")


def _diff(d: dict, fmt: str, scale: float = 1.0) -> str:
    if d.get("mean_diff") is None:
        return "–"
    return (f"{fmt.format(scale * d['mean_diff'])} [{fmt.format(scale * d['low'])}, "
            f"{fmt.format(scale * d['high'])}] (n={d['n']})")


def plots(summary: dict[str, Any], out: Path, title: str, reference: str) -> list[str]:
    import numpy as np

    plt = R.pyplot()
    systems = list(summary["systems"])
    S = summary["systems"]
    files = []

    fig, axes = plt.subplots(1, 2, figsize=(12, 0.6 * len(systems) + 2.2))
    colors = plt.cm.RdYlGn(np.linspace(0.05, 0.95, len(BANDS)))
    y = np.arange(len(systems))[::-1]
    left = np.zeros(len(systems))
    for (lo, hi, name), color in zip(BANDS, colors):
        share = np.array([S[s]["bands"][name] / S[s]["judged"] if S[s]["judged"] else 0
                          for s in systems])
        axes[0].barh(y, share, left=left, color=color, label=name)
        left += share
    axes[0].set_yticks(y, [f"{s} (n={S[s]['judged']})" for s in systems])
    axes[0].set_xlim(0, 1)
    axes[0].set_xlabel("share of judged answers")
    axes[0].set_title("judge scores in bands")
    axes[0].legend(fontsize=7, ncol=len(BANDS), loc="lower center", bbox_to_anchor=(0.5, -0.45))
    left = np.zeros(len(systems))
    for label, color in zip(LABELS, ("#4caf50", "#e53935", "#9e9e9e")):
        share = np.array([S[s]["labels"][label] or 0 for s in systems])
        axes[1].barh(y, share, left=left, color=color, label=label)
        left += share
    axes[1].set_yticks(y, systems)
    axes[1].set_xlim(0, 1)
    axes[1].set_title("FinanceBench labels (by the judge)")
    axes[1].legend(fontsize=7, ncol=3, loc="lower center", bbox_to_anchor=(0.5, -0.45))
    fig.suptitle(title)
    files.append(R.savefig(fig, out, "score_distribution.png"))

    if summary["paired"]:
        others = list(summary["paired"])
        fig, axes = plt.subplots(1, 2, figsize=(11, 0.5 * len(others) + 2))
        for ax, key, scale, xlabel in ((axes[0], "score", 1, "mean score difference"),
                                       (axes[1], "correct", 100, "difference in correct, pp")):
            yy = np.arange(len(others))[::-1]
            for yi, s in zip(yy, others):
                d = summary["paired"][s][key]
                if d["mean_diff"] is None:
                    continue
                ax.errorbar(scale * d["mean_diff"], yi,
                            xerr=[[scale * (d["mean_diff"] - d["low"])],
                                  [scale * (d["high"] - d["mean_diff"])]], fmt="o", capsize=4)
            ax.axvline(0, color="grey", lw=0.8)
            ax.set_yticks(yy, [f"{reference} − {s}" for s in others])
            ax.set_xlabel(xlabel + " (95% bootstrap CI)")
        fig.suptitle(f"paired per-question differences: {reference} minus each system")
        files.append(R.savefig(fig, out, "paired_differences.png"))

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    points = [{"system": s, "quality": S[s]["labels"]["correct"], "cost": S[s]["tokens_per_query"],
               "latency": S[s]["latency_s"]["p50"]} for s in systems]
    for ax, key, xlabel in ((axes[0], "cost", "LLM tokens per query (log)"),
                            (axes[1], "latency", "p50 latency per query, s (log)")):
        usable = [p for p in points if p["quality"] is not None and p[key]]
        front = stats.pareto_front(usable, maximize=("quality",), minimize=(key,))
        for p in usable:
            ax.scatter(p[key], p["quality"], s=60, color="C3" if p in front else "C0", zorder=3)
            ax.annotate(p["system"], (p[key], p["quality"]), textcoords="offset points",
                        xytext=(6, 4), fontsize=8)
        front = sorted(front, key=lambda p: p[key])
        ax.step([p[key] for p in front], [p["quality"] for p in front], where="post",
                color="C3", lw=1, label="non-dominated")
        ax.set_xscale("log")
        R.plain_log_ticks(ax)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("accuracy (share labelled correct)")
        ax.legend(fontsize=8)
    fig.suptitle("quality against cost and latency (red: non-dominated)")
    files.append(R.savefig(fig, out, "quality_vs_cost.png"))

    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for s in systems:
        lat = sorted(S[s]["latencies_s"])
        if lat:
            ax.step(lat, np.arange(1, len(lat) + 1) / len(lat), where="post", label=s)
    ax.set_xscale("log")
    R.plain_log_ticks(ax)
    ax.set_xlabel("end-to-end latency per answer, s (log; one process, this machine)")
    ax.set_ylabel("share of answers")
    ax.set_title("latency CDF per system")
    ax.legend(fontsize=8)
    files.append(R.savefig(fig, out, "latency_cdf.png"))
    return files


def report(summary: dict[str, Any], meta: dict[str, Any], files: list[str]) -> str:
    S, ref = summary["systems"], meta["reference"]
    lines = R.header(f"Answer quality — profile `{meta['profile']}`", meta["command"],
                     meta["config_hash"])
    lines += [
        f"{meta['questions']} questions from `{meta['questions_file']}`, index `{meta['index']}`; "
        + (f"answers and verdicts cached in `{meta['cache']}`; " if meta.get("cache") else "")
        + f"systems {', '.join(S)}"
        + (f" (per-system samples: {meta['limits']})" if meta["limits"] else "")
        + (f"; split `{meta['split']}` of `benchmarks/splits.py`"
           + (" (**seen**: the test half was read while writing rules; its figures are not "
              "held-out figures)" if meta["split"] == "test" else "") if meta.get("split") else "")
        + ". **Accuracy** is the share of answers labelled correct (FinanceBench's labels: "
        "correct / incorrect / refusal). The deterministic scorer (`benchmarks/scorer.py`: "
        "reference figures with units and rounding, yes/no, refusals) labels what it can; "
        + (f"the LLM judge `{meta['judge']['model_id']}` (profile `{meta['judge_profile']}`, "
           "greedy, HDRR rubric) labels the rest — " if meta["judge"]["model_id"] else
           "**no LLM judge ran (`--scorer-only`)**: the answers it cannot decide stay "
           "unlabelled, and accuracy is over the labelled ones only — ")
        + f"{meta.get('by_rule', 0)} of the verdicts came from the scorer. Each answer's cost is "
        f"from its own Answer record; energy source: {meta['energy_source']}. Latency is wall "
        "time on this machine in one process — compare systems within this run only.", ""]
    short = {s: (v["answered"] + v["errors"], meta["planned"][s]) for s, v in S.items()
             if v["answered"] + v["errors"] < meta["planned"][s]}
    if short:
        lines += ["**Partial run**: answered so far " + ", ".join(
            f"{s} {n} of {m}" for s, (n, m) in short.items()) + " questions. The same command "
            "without `--cached-only` resumes it from the cache; paired differences use the "
            "questions both systems answered.", ""]
    if any(summary.get("stale", {}).values()):
        lines += ["**Stale answers left out**: " + ", ".join(
            f"{s} {n}" for s, n in summary["stale"].items() if n) + " cached answers were made "
            "by other code, prompts or settings (their config hash differs); they are listed in "
            "`per_question.jsonl` with `stale: true` and enter no figure.", ""]
    if meta.get("calibration"):
        c = meta["calibration"]
        lines += [f"**How far to trust the labels**: on {c['n']} human-labelled FinanceBench "
                  f"answers of the `{c.get('split', 'test')}` half (seen: it was read while "
                  f"writing rules, no longer held out), {c['who']} "
                  f"agreed with people {R.pct(c['accuracy'])} of the time, Cohen's kappa "
                  f"{c['kappa']:.2f} ({c['band']})"
                  + (f"; the judge alone, on the {c['llm']['n']} of them the scorer leaves, "
                     f"{R.pct(c['llm']['accuracy'])}, kappa "
                     f"{R.num(c['llm']['kappa'], '{:.2f}')} ({c['llm']['band']}): read the "
                     f"judge's labels as rough" if c.get("llm") else "")
                  + f"; see `{c['report']}`.", ""]
    else:
        lines += ["**Judge not calibrated** for this judge yet: run `finrag bench "
                  "judge-calibration` before trusting the label rates.", ""]
    lines += ["## Accuracy", "",
              "| system | judged | accuracy [95% CI] | incorrect | refusal | labelled by scorer "
              "/ LLM | errors |", "|---|---:|---:|---:|---:|---:|---:|"]
    for s, v in S.items():
        d = v.get("deciders") or {}
        lines.append(
            f"| {s} | {v['judged']} | {_ci(v['label_correct_ci'], '{:.1f}%', 100)} | "
            f"{R.pct(v['labels']['incorrect'])} | {R.pct(v['labels']['refusal'])} | "
            f"{d.get('scorer', 0)} / {d.get('llm', 0)} | {v['errors']} |")
    lines += ["", "Accuracy over the answers the deterministic scorer decided alone (no LLM "
              "judge in the figure; n in brackets):", "",
              "| system | scorer-decided accuracy [95% CI] (n) |", "|---|---:|"]
    for s, v in S.items():
        sc = v.get("scorer_correct_ci") or {}
        lines.append(f"| {s} | {_ci(sc, '{:.1f}%', 100) if sc.get('n') else '–'} "
                     f"({sc.get('n', 0)}) |")
    if any((v.get("yes_no") or {}).get("yes", {}).get("n") for v in S.values()):
        lines += ["", "Yes/no questions by the reference's answer: how often each system opens "
                  "with yes, with no or with neither, and its accuracy on them (a constant answer "
                  "shows as one column).", "",
                  "| system | gold yes: n | says yes / no / neither | accuracy | gold no: n | "
                  "says yes / no / neither | accuracy |", "|---|---:|---:|---:|---:|---:|---:|"]
        for s, v in S.items():
            y, n = v["yes_no"]["yes"], v["yes_no"]["no"]
            lines.append(f"| {s} | {y['n']} | {y['says_yes']} / {y['says_no']} / "
                         f"{y['says_neither']} | {R.pct(y['accuracy'])} | {n['n']} | "
                         f"{n['says_yes']} / {n['says_no']} / {n['says_neither']} | "
                         f"{R.pct(n['accuracy'])} |")
    if summary.get("by_half"):
        lines += ["", "By half of the dev split (`benchmarks/splits.py`): choices are made on "
                  "`tune`; `test` is **seen** (it was read while writing rules).", "",
                  "| system | half | judged | accuracy | scorer-decided accuracy (n) | right on "
                  "gold yes (n) | right on gold no (n) |", "|---|---|---:|---:|---:|---:|---:|"]
        for s in S:
            for half in ("tune", "test"):
                v = summary["by_half"][half].get(s) or {}
                sc = v.get("scorer_correct_ci") or {}
                yn = v.get("yes_no") or {}
                y, n = yn.get("yes") or {}, yn.get("no") or {}
                lines.append(
                    f"| {s} | {half if half == 'tune' else 'test (seen)'} | {v.get('judged', 0)} | "
                    f"{R.pct((v.get('label_correct_ci') or {}).get('estimate'))} | "
                    f"{R.pct(sc.get('estimate')) if sc.get('n') else '–'} ({sc.get('n', 0)}) | "
                    f"{R.pct(y.get('accuracy'))} ({y.get('n', 0)}) | "
                    f"{R.pct(n.get('accuracy'))} ({n.get('n', 0)}) |")
    types = sorted({t for per in summary.get("by_type", {}).values() for t in per})
    if types:
        lines += ["", "Accuracy by FinanceBench question type (n judged in brackets):", "",
                  "| system | " + " | ".join(types) + " |", "|---|" + "---:|" * len(types)]
        for s in S:
            per = summary["by_type"].get(s, {})
            lines.append(f"| {s} | " + " | ".join(
                f"{R.pct(per.get(t, {}).get('accuracy'))} ({per.get(t, {}).get('n', 0)})"
                for t in types) + " |")
    if any(v.get("judge_correct") for v in S.values()):
        lines += ["", "How much rests on the judge: of the answers the LLM judge labelled "
                  "correct, those that state figures of which none matches a reference figure "
                  "(the scorer's matching rule), and accuracy with those counted incorrect.", "",
                  f"| system | labelled correct by the judge | of them, with none of the "
                  f"reference's figures | accuracy, those counted incorrect [95% CI] | {ref} − "
                  "system, pp |", "|---|---:|---:|---:|---:|"]
        for s, v in S.items():
            d = summary["paired"].get(s, {}).get("strict_correct")
            lines.append(f"| {s} | {v['judge_correct']} | {v['other_figures']} | "
                         f"{_ci(v['strict_correct_ci'], '{:.1f}%', 100)} | "
                         + (_diff(d, "{:+.1f}", 100) if d else "–") + " |")
    lines += ["", "## The paper's 1–10 metrics", "",
              "How they are defined here: the scorer gives 10 to an answer it labels correct "
              "(every reference figure, or the reference's yes/no), 2 to one it labels incorrect "
              "and 1 to a refusal; the LLM judge scores the others on the paper's rubric (10 "
              "fully correct, 8–9 correct in substance, 4–7 partly, 2–3 mostly wrong, 1 wrong or "
              "no answer). Average, P(s=1) (failure), P(s≥8) (correctness) and P(s=10) "
              "(perfect) are over all judged answers.", "",
              "| system | average [95% CI] | P(s=1) | P(s≥8) [95% CI] | P(s=10) |",
              "|---|---:|---:|---:|---:|"]
    for s, v in S.items():
        lines.append(
            f"| {s} | {_ci(v['average_ci'])} | {R.pct(v['failure_rate'])} | "
            f"{_ci(v['correctness_ci'], '{:.1f}%', 100)} | {R.pct(v['perfect_rate'])} |")
    for s, part in summary.get("samples", {}).items():
        lines += ["", f"## Every system on the {s} sample ({len(part['ids'])} questions)", "",
                  f"{s} ran on a fixed seeded sample of the questions whose filing is indexed "
                  "(`--system-limit`); here every system is scored on exactly those questions.",
                  "", f"| system | judged | accuracy [95% CI] | tokens/query | {ref} − system, "
                  "accuracy pp |", "|---|---:|---:|---:|---:|"]
        for k, v in part["systems"].items():
            d = part["paired"].get(k, {}).get("correct", {})
            lines.append(f"| {k} | {v['judged']} | {_ci(v['accuracy_ci'], '{:.1f}%', 100)} | "
                         f"{R.num(v['tokens_per_query'], '{:,.0f}')} | "
                         f"{_diff(d, '{:+.1f}', 100) if d else '–'} |")
    lines += ["", "## Retrieval and cost per query", "",
              "Routed exactly: to exactly the question's filing, over all questions and over "
              "those whose filing is indexed. hit@k: an evidence page in the final ranking's top "
              "k; in context: in what the generator read. These are over the questions whose "
              "filing is indexed.", "",
              "| system | routed exactly (all / indexed) | hit@5 | hit@10 | evidence in context "
              "| wrong-filing share | context tokens | LLM calls | tokens (prompt+completion) | "
              "p50 s | p95 s | joules |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s, v in S.items():
        rt = v["retrieval"]
        routed = ("–" if rt.get("routed_exact") is None else
                  f"{rt['routed_exact']}/{rt['questions']} ({R.pct(rt['routing_accuracy_all'])})"
                  f" / {rt['routed_exact']}/{rt['on_disk']} ({R.pct(rt['routing_accuracy'])})")
        lines.append(
            f"| {s} | {routed} | {R.pct(rt['hit5'])} | "
            f"{R.pct(rt['hit10'])} | {R.pct(rt.get('context_hit'))} | "
            f"{R.pct(rt['wrong_doc_share'])} | "
            f"{R.num(rt['context_tokens'], '{:,.0f}')} | {R.num(rt['llm_calls'], '{:.2f}')} | "
            f"{R.num(v['tokens_per_query'], '{:,.0f}')} | {R.num(v['latency_s']['p50'])} | "
            f"{R.num(v['latency_s']['p95'])} | "
            f"{R.num(v['joules_per_query']) if v['joules_per_query'] is not None else 'n/a'} |")
    if summary["paired"]:
        lines += ["", f"## Paired differences: {ref} minus each system", "",
                  "Mean over the questions both answered (and the judge scored), with a 95% "
                  "bootstrap interval resampling questions; an interval that excludes 0 is a "
                  "difference this sample supports.", "",
                  f"| {ref} − system | accuracy difference, pp | score difference |",
                  "|---|---:|---:|"]
        for s, d in summary["paired"].items():
            lines.append(f"| {ref} − {s} | {_diff(d['correct'], '{:+.1f}', 100)} | "
                         f"{_diff(d['score'], '{:+.2f}')} |")
    lines += ["", "## The paper's figures, for orientation", "",
              f"{PAPER['source']} — not comparable one to one: different questions, corpus, "
              "generator and judge (the paper's judge is a large hosted model).", "",
              "| system | paper average | ours | paper P(s=1) | ours | paper P(s≥8) | ours | "
              "paper P(s=10) | ours | paper context tokens | ours |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s, p in PAPER["systems"].items():
        v = S.get(s)
        if v is None:
            continue
        lines.append(
            f"| {s} | {p['average']:.2f} | {R.num(v['average'], '{:.2f}')} | "
            f"{R.pct(p['failure_rate'])} | {R.pct(v['failure_rate'])} | "
            f"{R.pct(p['correctness'])} | {R.pct(v['correctness'])} | "
            f"{R.pct(p['perfect_rate'])} | {R.pct(v['perfect_rate'])} | {p['context_tokens']} | "
            f"{R.num(v['retrieval']['context_tokens'], '{:,.0f}')} |")
    lines += ["", *[f"![{f}]({f})" for f in files], "",
              "Raw data: `results.json` (this summary), `per_question.jsonl` (one line per "
              "question and system: answer, verdict, retrieval figures), `cache/` (the answer "
              "and verdict caches a re-run resumes from).", ""]
    return "\n".join(lines)
