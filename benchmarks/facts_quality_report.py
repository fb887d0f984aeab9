"""``finrag bench facts``' report: the markdown with its tables, the failures listed one by one,
and the PNG plots, drawn from the summary ``benchmarks/facts_quality.py`` computes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from finrag.benchmarks import facts_gold as G
from finrag.benchmarks import report as R

SYSTEM = "hdrr"  # the system the facts route belongs to
STRUCTURED = ("metric_lookup", "timeseries", "full_statement")
MIN_P95 = 30  # samples below which a 95th percentile is not reported


def money(v: float | None, per_share: bool = False, unit: str = "USD") -> str:
    if v is None:
        return "–"
    if per_share:
        return f"${v:,.2f}"
    if unit == "shares":
        return f"{v / 1e6:,.0f}M shares"
    return f"{'-' if v < 0 else ''}${abs(v) / 1e6:,.0f}M"


def _ci(c: dict) -> str:
    if c.get("estimate") is None:
        return "–"
    return (f"{100 * c['estimate']:.1f}% [{100 * c['low']:.1f}, {100 * c['high']:.1f}] "
            f"({c['k']}/{c['n']})")


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v:,.1f}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _period(e: dict) -> str:
    return f"{e['start']}..{e['end']}" if e.get("start") else f"at {e['end']}"


def failure_rows(records: list[dict]) -> list[str]:
    lines = ["| id | category | question | expected | got | why |",
             "|---|---|---|---|---|---|"]
    for r in records:
        s = r["score"]
        if s["correct"]:
            continue
        if s.get("check"):
            exp = [f"route {r['route_expected']}", f"says {s['check']['want']!r}"]
            got = [f"route {s['route']}", s["check"]["first_line"] or "(empty)"]
        elif r["answerable"]:
            exp = [f"route {r['route_expected']}"] + [
                f"{e['ticker']} {e['metric']} {_period(e)} = "
                f"{money(e['gold'], e['per_share'])}{' (derived)' if e['derive'] else ''}"
                for e in s["expected"] if not e["ok"]]
            got = [f"route {s['route']}"] + [
                f"{e['ticker']} {e['metric']}: " + (", ".join(
                    f"{_period(n)} = {money(n['value'], e['per_share'])}"
                    f"{' (derived)' if n.get('derived') else ''}" for n in e["near"])
                    or "no fact") for e in s["expected"] if not e["ok"]]
        else:
            exp = ["no value (cannot answer)"]
            got = [f"{s['n_facts']} facts", f"invented: {', '.join(s['invented']) or 'none'}"]
        lines.append(f"| {r['id']} | {r['category']} | {_cell(r['question'])} | "
                     f"{_cell('; '.join(exp))} | {_cell('; '.join(got))} | {_cell(s['why'])} |")
    return lines


def report(summary: dict[str, Any], meta: dict[str, Any], records: list[dict],
           files: list[str]) -> str:
    S = summary
    lines = R.header(f"SEC facts route — profile `{meta['profile']}`", meta["command"],
                     meta["config_hash"])
    lines += [
        f"{S['questions']} questions from `{meta['questions_file']}` over Apple, NVIDIA, "
        f"Snowflake, Alphabet and Marvell, answered by system `{SYSTEM}` of one pipeline loaded "
        f"in this process (index `{meta['index']}`, {meta['facts_in_index']:,} XBRL facts); gold "
        f"values computed from `{meta['companyfacts']}` by `benchmarks/facts_gold.py` (not "
        "finrag's facts code); no LLM judge.",
        "",
        "**Scoring.** *Route*: `answer.route` equals the question's route. *Value*: every "
        "expected value has an `answer.facts` entry with the same company, metric and period "
        "end (and start, for a duration), value within 0.5% (per-share: within $0.005), and "
        "`derived: true` for a fourth quarter computed as FY − 9 months (its period runs from "
        "the day after the third quarter ends to the fiscal year's end). A question is "
        "**correct** when route and every value are right (narrative: route only); a question "
        "the facts cannot answer is correct when the answer has no facts and writes no figure "
        "the question does not (years, dates and labels such as Q2 or 10-K are not figures). "
        "Intervals are Wilson 95%.",
        ""]
    if S["errors"]:
        lines += [f"**{len(S['errors'])} questions raised an error** (counted wrong): "
                  + ", ".join(S["errors"]), ""]
    lines += ["## Accuracy", "",
              f"Overall: **{_ci(S['accuracy'])}** of {S['questions']} questions. Route chosen "
              f"right: {_ci(S['route_accuracy'])}.", "",
              "By category (denominator = the category's questions):", "",
              "| category | questions | correct | accuracy [95% CI] | route right |",
              "|---|---:|---:|---:|---:|"]
    for name, v in S["by_category"].items():
        lines.append(f"| {name} | {v['n']} | {v['k']} | {_ci(v)} | {v['route_ok']}/{v['n']} |")
    lines += ["", "By expected route, answerable questions only (cannot-answer questions are "
              "in their own row above; *values right* counts the questions that expect values):",
              "", "| route | questions | correct | accuracy [95% CI] | route right | "
              "values right |",
              "|---|---:|---:|---:|---:|---:|"]
    for name, v in S["by_route"].items():
        vals = f"{v['values_ok']}/{v['with_values']}" if v["with_values"] else "–"
        lines.append(f"| {name} | {v['n']} | {v['k']} | {_ci(v)} | {v['route_ok']}/{v['n']} | "
                     f"{vals} |")
    routes = sorted({g for per in S["route_confusion"].values() for g in per})
    lines += ["", "Routes chosen (rows: expected, columns: answered; all questions, a "
              "cannot-answer one under the route its wording implies):", "",
              "| expected \\ answered | " + " | ".join(routes) + " |",
              "|---|" + "---:|" * len(routes)]
    for exp, per in S["route_confusion"].items():
        lines.append(f"| {exp} | " + " | ".join(str(per.get(g, 0)) for g in routes) + " |")
    ca = S["cannot_answer"]
    lines += ["", "## Questions the facts cannot answer", "",
              f"{ca['n']} questions (a year before the first filing or in the future, a metric "
              f"the company does not report, a company outside the five): **{ca['invented_total']}"
              f" invented figures** in {ca['with_invented']} answers; {ca['with_facts']} answers "
              "returned facts.", "",
              "| id | question | facts | invented figures |", "|---|---|---:|---|"]
    for r in records:
        if not r["answerable"]:
            s = r["score"]
            lines.append(f"| {r['id']} | {_cell(r['question'])} | {s['n_facts']} | "
                         f"{_cell(', '.join(s['invented']) or 'none')} |")
    splits = [r for r in records if r["category"] == "eps_split"]
    if splits:
        lines += ["", "## EPS restated after stock splits", "",
                  "Gold is the latest filed value for the period; the first filed value is the "
                  "one reported before the split.", "",
                  "| id | company | period | gold (latest filed) | first filed | answer | "
                  "answer's first filed | right |", "|---|---|---|---:|---:|---:|---:|---|"]
        for r in splits:
            for e in r["score"]["expected"]:
                got = e["got"] or (e["near"][0] if e["near"] else None)
                first = ((got or {}).get("first_filed") or {}).get("value") \
                    if isinstance((got or {}).get("first_filed"), dict) else None
                lines.append(
                    f"| {r['id']} | {e['ticker']} | {_period(e)} | {money(e['gold'], True)} | "
                    f"{money(e['first_filed_value'], True)} | "
                    f"{money((got or {}).get('value'), True) if got else '–'} | "
                    f"{money(first, True) if first is not None else '–'} | "
                    f"{'yes' if e['ok'] else 'no'} |")
    lines += ["", "## LLM calls", "",
              "Per question (first pass), grouped by the route the question expects (cannot-answer "
              "questions apart) and by the route the answer took. *Deterministic* = 0 LLM calls.",
              "",
              "| grouped by | route | questions | LLM calls | mean | max | deterministic |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for by, per in S["llm_calls"].items():
        for route, v in per.items():
            lines.append(f"| {by} | {route} | {v['n']} | {v['total']} | {v['mean']:.2f} | "
                         f"{v['max']} | {v['zero']}/{v['n']} |")
    det = S["deterministic"]
    ml = [r["id"] for r in records if r["route_expected"] == "metric_lookup" and r["answerable"]]
    others = [i for i in ml if i not in det["metric_lookup"]]
    lines += ["", f"Deterministic (0 LLM calls) answerable metric_lookup questions: "
              f"**{len(det['metric_lookup'])} of {det['metric_lookup_n']}**"
              + (f"; the ones that called an LLM: {', '.join(others)}" if others else "")
              + f". Deterministic questions of the whole set: {len(det['all'])} of "
              f"{S['questions']} (ids in `results.json`)."]
    lines += ["", "## Latency", "",
              f"End to end in this process (`Pipeline.answer`), {meta['repeat']} pass(es) over "
              "the set (the pipeline loaded once; passes after the first are timed, not graded). "
              "*Pipeline total* is the Answer's own `timings_ms.total`; *wall* is measured "
              f"around the call. p95 only with ≥ {MIN_P95} samples.", "",
              "| expected route | samples | questions | pipeline total p50 (ms) | p95 | "
              "wall p50 (ms) | p95 |", "|---|---:|---:|---:|---:|---:|---:|"]
    for route, v in S["latency"].items():
        p95t = _ms(v["total_p95"]) if v["with_total"] >= MIN_P95 else f"– (n={v['with_total']})"
        p95w = _ms(v["wall_p95"]) if v["n"] >= MIN_P95 else f"– (n={v['n']})"
        lines.append(f"| {route} | {v['n']} | {v['questions']} | {_ms(v['total_p50'])} | "
                     f"{p95t} | {_ms(v['wall_p50'])} | {p95w} |")
    rl = S.get("reasoning_facts_ms") or {}
    if rl.get("n"):
        lines += ["", f"Reasoning questions (trends, the question's own ratios, judgements): "
                  f"the facts stage (`timings_ms.facts`: classify, compute, judge) took p50 "
                  f"**{_ms(rl['p50'])} ms**"
                  + (f", p95 {_ms(rl['p95'])} ms" if rl.get("p95") is not None else
                     f" (p95 needs ≥ {MIN_P95} samples)")
                  + f" over {rl['n']} answers; a hybrid answer's generated sentence comes after "
                  "it and is not in this figure."]
    c = S["confidence"]
    if c["correct"]["n"] or c["wrong"]["n"]:
        lines += ["", "Mean `answer.confidence` (answerable questions): correct "
                  f"{R.num(c['correct']['mean'])} (n={c['correct']['n']}), wrong "
                  f"{R.num(c['wrong']['mean'])} (n={c['wrong']['n']})."]
    failed = failure_rows(records)
    lines += ["", f"## Failed questions ({len(failed) - 2})", ""]
    lines += failed if len(failed) > 2 else ["None."]
    lines += ["", "## Plots", ""] + [f"![{f}]({f})" for f in files]
    lines += ["", "Raw: `results.json` (summary), `per_question.jsonl` (each answer, its facts "
              "and grading), `latency.jsonl` (every timed call)."]
    return "\n".join(lines) + "\n"


def plots(summary: dict[str, Any], latencies: list[dict], out: Path, title: str) -> list[str]:
    import numpy as np

    plt = R.pyplot()
    files = []
    cats = [c for c in G.CATEGORIES if c in summary["by_category"]]
    if cats:
        v = [summary["by_category"][c] for c in cats]
        acc = np.array([x["estimate"] for x in v])
        err = np.clip(np.array([[x["estimate"] - x["low"] for x in v],
                                [x["high"] - x["estimate"] for x in v]]), 0, None)  # float noise
        fig, ax = plt.subplots(figsize=(9, 4.2))
        ax.bar(range(len(cats)), acc * 100, yerr=err * 100, capsize=3, color="#4C78A8")
        for i, x in enumerate(v):
            ax.text(i, 2, f"{x['k']}/{x['n']}", ha="center", va="bottom", color="white",
                    fontsize=8)
        overall = summary["accuracy"]["estimate"]
        if overall is not None:
            ax.axhline(overall * 100, color="grey", ls="--", lw=1,
                       label=f"overall {overall * 100:.0f}%")
            ax.legend(fontsize=8, loc="upper left")
        ax.set_xticks(range(len(cats)), cats, rotation=30, ha="right")
        ax.set_ylim(0, 105)
        ax.set_ylabel("correct (%) — Wilson 95% bars")
        ax.set_title(f"accuracy by category — {title}")
        files.append(R.savefig(fig, out, "accuracy_by_category.png"))
    data, names = [], []
    for route in STRUCTURED:
        vals = [x["total_ms"] if x["total_ms"] is not None else x["wall_ms"] for x in latencies
                if x["route_expected"] == route and x["answerable"]]
        if vals:
            data.append(vals)
            names.append(f"{route}\n(n={len(vals)})")
    if data:
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        ax.boxplot(data, showfliers=True)
        for i, vals in enumerate(data, 1):
            jitter = np.random.default_rng(i).uniform(-0.12, 0.12, len(vals))
            ax.scatter(np.full(len(vals), i) + jitter, vals, s=8, alpha=0.4, color="#F58518")
        ax.set_xticks(range(1, len(names) + 1), names)
        if max(max(d) for d in data) > 20 * max(min(min(d) for d in data), 1e-3):
            ax.set_yscale("log")
        ax.set_ylabel("ms per answer (pipeline total)")
        ax.set_title(f"latency of the structured routes — {title}")
        files.append(R.savefig(fig, out, "latency_structured.png"))
    return files
