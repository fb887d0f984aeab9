"""``finrag bench quality``: every system on the same questions — retrieval, cost and answer
quality judged by the profile's local LLM judge — with paired differences between systems.

Per (question, system) the pipeline's Answer record gives routing, evidence hit@k, the
wrong-filing share, context tokens, LLM calls, tokens, latency per stage and energy; the judge
(``benchmarks.judge``) scores the answer against the gold answer on the HDRR paper's 1..10
rubric and labels it correct / incorrect / refusal as FinanceBench does.

Questions run one after another, every system on a question before the next question, and the
question's answers are judged as soon as they exist, so a run stopped at any point has paired
results for the questions it finished. They run in a seeded random order (``RUN_SEED``), not file
order (which groups companies alphabetically), so the questions a stopped run finished are a
random subset of those asked. Answers are cached per (question, system, config hash)
and verdicts per (answer, judge config hash) in ``<results>/cache/``: a killed run resumes, and
a finished one only redraws the report. The config hash covers the profile's pipeline settings,
model ids, the index's contents and the system; change any and the answers are made again.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks import report as R
from benchmarks import stats
from benchmarks.splits import seeded_rank

# Scores in bands that line up with the rubric's rates: failure P(s=1), correctness P(s>=8),
# perfect P(s=10).
BANDS = ((1, 1, "1 (failure)"), (2, 4, "2–4"), (5, 7, "5–7"), (8, 9, "8–9"), (10, 10, "10 (perfect)"))
LABELS = ("correct", "incorrect", "refusal")
VARIANT_OF = {"cbr_meta": "meta", "cbr_llmctx": "llmctx"}
DEFAULT_SYSTEMS = ("cbr", "cbr_meta", "cbr_llmctx", "sfr", "hdrr", "hdrr_text", "agentic")

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


# --- configuration ---------------------------------------------------------------------------

def index_fingerprint(index) -> dict[str, Any]:
    """What an index holds, as a hash: its settings and every document's content hash."""
    from dataclasses import asdict

    docs = [(d.doc_id, d.sha256, d.chunk_count) for d in index.documents()]
    return {"settings": asdict(index.settings), "documents": len(docs),
            "contents": R.config_hash(docs, 16)}


def system_config(pipe, system: str) -> dict[str, Any]:
    """Everything that decides a system's answers on this pipeline."""
    index = pipe.index
    if system in VARIANT_OF:
        index = pipe.variants.get(VARIANT_OF[system])
        if index is None:
            raise ValueError(f"system {system} needs the {VARIANT_OF[system]} index variant "
                             f"(finrag ingest --variant {VARIANT_OF[system]} …; see "
                             f"--{VARIANT_OF[system]}-index)")
    return {"system": system, "profile": pipe.profile.name,
            "pipeline": pipe.settings.model_dump(), "cascade": pipe.profile.cascade.model_dump(),
            "models": pipe.model_ids(), "index": index_fingerprint(index),
            "use_llm_router": pipe.use_llm_router, "generate": True,
            "code": code_version()}


def code_version() -> str:
    """The code that makes answers: retrieval/ and models/ (the demo corpus generator aside)."""
    return R.code_version("retrieval", "models", exclude=("retrieval/demo",))


def available_systems(pipe, wanted: list[str] | None) -> list[str]:
    """``wanted`` (checked), or every default system whose index is there."""
    from retrieval.systems.pipelines import SYSTEMS

    if wanted:
        unknown = [s for s in wanted if s not in SYSTEMS]
        if unknown:
            raise ValueError(f"unknown system(s) {', '.join(unknown)}; choose from "
                             f"{', '.join(SYSTEMS)}")
        return wanted
    return [s for s in DEFAULT_SYSTEMS if s not in VARIANT_OF or VARIANT_OF[s] in pipe.variants]


def _trim(answer: dict[str, Any]) -> dict[str, Any]:
    """The Answer record without the per-stage candidate lists the metrics do not read (SFR's
    part answers that stated something are kept: they show what its reduce call read)."""
    keep = {k: v for k, v in answer["retrieved"].items()
            if k in ("ranked", "context", "sfr_findings")}
    return {**answer, "retrieved": keep}


# --- running ---------------------------------------------------------------------------------

SAMPLE_SEED = "finrag-system-sample-1"
RUN_SEED = "finrag-run-order-1"


def sample_ids(questions, n: int) -> set[str]:
    """A fixed sample of ``n`` of the questions whose filing is indexed (a slow system such as
    SFR runs on these only; every other system is reported on the same sample too). Seeded hash
    order, so the sample does not depend on file order and grows by adding, not replacing."""
    routed = [q for q in questions if q.pdf_present and q.doc_name]
    ranked = sorted(routed, key=lambda q: seeded_rank(SAMPLE_SEED, q.id))
    return {q.id for q in ranked[:n]}


def run_order(questions) -> list[int]:
    """The positions of ``questions`` in the order a run answers them: seeded by question id,
    so every prefix (what a stopped run finished) is a random subset, whatever the file order."""
    return sorted(range(len(questions)), key=lambda i: seeded_rank(RUN_SEED, questions[i].id))


def run_quality(pipe, questions, systems: list[str], cache_dir: Path, *, judge_engine,
                limits: dict[str, int] | None = None, progress: bool = True,
                cached_only: bool = False) -> list[dict]:
    """Answer and judge; returns one record per (question, system) run, in question order:
    ``{id, system, config_hash, answer, row, verdict}`` (``verdict`` None when the question
    has no gold answer or the system failed). ``cached_only``: answer and judge nothing, take
    what the caches hold (a report of a run still going, or stopped)."""
    from benchmarks import judge as J
    from retrieval.systems.evaluation import score_row

    samples = {s: sample_ids(questions, n) for s, n in (limits or {}).items()}
    answers = R.JsonlCache(cache_dir / "answers.jsonl")
    verdicts = R.JsonlCache(cache_dir / "verdicts.jsonl")
    hashes = {s: R.config_hash(system_config(pipe, s)) for s in systems}
    jhash = R.config_hash(J.judge_config(judge_engine)) if judge_engine is not None else None
    plan = [(i, q, s) for i, q in enumerate(questions) for s in systems
            if s not in samples or q.id in samples[s]]
    keys = {(q.id, s): f"{q.id}|{s}|{hashes[s]}" for _, q, s in plan}
    stale: dict[tuple[str, str], dict] = {}  # answers made by other code or settings
    for key, rec in answers.records.items():
        qid, system, chash = (key.split("|") + ["", ""])[:3]
        if system in hashes and chash != hashes[system]:
            stale[(qid, system)] = rec
    bar = None
    if progress and not cached_only:
        from tqdm import tqdm

        todo = sum(keys[(q.id, s)] not in answers for _, q, s in plan)
        bar = tqdm(total=todo, desc="answer", unit="answer", file=sys.stderr, dynamic_ncols=True)
    records = []
    for i in run_order(questions):
        q = questions[i]
        mine = []
        for _, _, s in (p for p in plan if p[0] == i):
            key = keys[(q.id, s)]
            rec = answers.get(key)
            if rec is None and cached_only:
                if (q.id, s) in stale:  # shown, marked, and left out of every figure
                    mine.append({**stale[(q.id, s)], "stale": True})
                continue
            if rec is None:
                if bar is not None:
                    bar.set_postfix_str(f"{s} {q.id}"[:40])
                try:
                    answer = pipe.answer(q.question, s, generate=True).to_dict()
                    rec = {"answer": _trim(answer), "row": score_row(q, answer)}
                except Exception as e:  # one failing question must not lose the run
                    rec = {"answer": None, "row": {"id": q.id, "system": s, "timings_ms": {},
                                                   "pdf_present": q.pdf_present,
                                                   "error": f"{type(e).__name__}: {e}"}}
                rec = answers.add(key, {"id": q.id, "system": s, "config_hash": hashes[s], **rec})
                if bar is not None:
                    bar.update(1)
            mine.append(rec)
        judged = [r for r in mine if r["answer"] is not None and q.gold_answer]
        rows = [{"question": q.question, "gold_answer": q.gold_answer,
                 "model_answer": r["answer"]["answer"]} for r in judged]
        if judge_engine is None:  # the scorer alone: what it cannot decide stays unlabelled
            decided = J.rule_results(rows)
            results = [decided.get(i) for i in range(len(rows))]
        else:
            results = J.judge_cached(judge_engine, rows, [f"{jhash}|{r['key']}" for r in judged],
                                     verdicts, chunk=max(1, len(judged)), progress=False,
                                     cached_only=cached_only).results
        verdict_of = {r["key"]: res for r, res in zip(judged, results)}
        for r in mine:
            res = verdict_of.get(r["key"])
            records.append({"id": q.id, "system": r["system"], "config_hash": r["config_hash"],
                            "answer": r["answer"], "row": r["row"],
                            "question_type": q.question_type, "gold": q.gold_answer,
                            "stale": r.get("stale", False),
                            "verdict": None if res is None else J.result_record(res),
                            "_order": i})
    if bar is not None:
        bar.close()
    records.sort(key=lambda r: r.pop("_order"))  # stable: systems stay in their order
    return records


# --- summarising -----------------------------------------------------------------------------

def _score(rec: dict) -> int | None:
    v = rec.get("verdict") or {}
    return (v.get("judgement") or {}).get("score")


def _label(rec: dict) -> str | None:
    v = rec.get("verdict") or {}
    return (v.get("judgement") or {}).get("label")


def other_figures(rec: dict) -> bool:
    """The LLM judge labelled the answer correct although it states figures and none of them
    matches a reference figure by the scorer's rule: how much of an accuracy rests on the
    judge's leniency with figures (the scorer leaves such answers to it when the reference is
    an explanation, not a bare figure)."""
    from benchmarks.scorer import figures, found

    if (rec.get("verdict") or {}).get("source") != "llm" or _label(rec) != "correct":
        return False
    refs = figures(rec.get("gold") or "")
    cands = figures((rec["answer"] or {}).get("answer") or "")
    return bool(refs and cands and not found(refs, cands))


def _correct(rec: dict) -> float | None:
    return None if _label(rec) is None else float(_label(rec) == "correct")


def _strict(rec: dict) -> float | None:
    """Correct, counting the judge's passes against the figures (``other_figures``) as wrong."""
    correct = _correct(rec)
    return correct if not correct else float(not other_figures(rec))


def yes_no_by_class(records: list[dict]) -> dict[str, Any]:
    """One system's answers to the questions whose reference is a yes or a no, by that gold
    class: how many, how often the answer opens with yes, with no or with neither, and the
    share labelled correct. A system that always says one word shows at once."""
    import re

    from benchmarks.scorer import kind

    out: dict[str, Any] = {}
    for gold_word in ("yes", "no"):
        mine = [r for r in records if r["answer"] is not None
                and kind(r.get("gold") or "") == "yes_no"
                and (r.get("gold") or "").strip().lower().lstrip("\"'*").startswith(gold_word)]
        said = [re.match(r"^\W*(yes|no)\b", (r["answer"].get("answer") or ""), re.I) for r in mine]
        words = [m.group(1).lower() if m else None for m in said]
        labels = [_label(r) for r in mine if _label(r) is not None]
        out[gold_word] = {"n": len(mine), "says_yes": words.count("yes"),
                          "says_no": words.count("no"), "says_neither": words.count(None),
                          "accuracy": labels.count("correct") / len(labels) if labels else None}
    return out


def summarize(records: list[dict], systems: list[str], reference: str) -> dict[str, Any]:
    from benchmarks.serve_load import percentile
    from retrieval.systems.evaluation import summarize as retrieval_summary

    stale = [r for r in records if r.get("stale")]
    records = [r for r in records if not r.get("stale")]
    retrieval = retrieval_summary([r["row"] for r in records], systems)
    out: dict[str, Any] = {"systems": {}, "paired": {}, "by_type": {},
                           "stale": {s: sum(r["system"] == s for r in stale) for s in systems}}
    types = sorted({r.get("question_type") or "unknown" for r in records})
    for s in systems:
        mine = [r for r in records if r["system"] == s]
        out["by_type"][s] = {}
        for t in types:
            labels_t = [_label(r) for r in mine if (r.get("question_type") or "unknown") == t
                        and _label(r) is not None]
            out["by_type"][s][t] = {"n": len(labels_t), "accuracy": (
                labels_t.count("correct") / len(labels_t) if labels_t else None)}
        ok = [r for r in mine if r["answer"] is not None]
        scores = [_score(r) for r in ok if _score(r) is not None]
        labels = [_label(r) for r in ok if _label(r) is not None]
        totals = [r["answer"]["timings_ms"].get("total") for r in ok]
        totals = [t / 1000 for t in totals if t is not None]
        tokens = [r["answer"]["usage"]["prompt_tokens"] + r["answer"]["usage"]["completion_tokens"]
                  for r in ok]
        energy = [r["answer"].get("energy") or {} for r in ok]
        joules = [e["joules"] for e in energy if e.get("joules") is not None]
        cpu = [e["cpu_seconds"] for e in energy if e.get("cpu_seconds") is not None]
        out["systems"][s] = {
            "questions": len(mine), "answered": len(ok), "judged": len(scores),
            "errors": len(mine) - len(ok),
            "judge_failures": sum(1 for r in ok if r["verdict"] is not None and _score(r) is None),
            **stats.score_rates(scores),
            "average_ci": stats.bootstrap_ci(scores),
            "correctness_ci": stats.bootstrap_ci([1.0 if x >= 8 else 0.0 for x in scores]),
            "labels": {k: (labels.count(k) / len(labels) if labels else None) for k in LABELS},
            "deciders": {src: sum(1 for r in ok if (r.get("verdict") or {}).get("source") == src
                                  and _label(r) is not None) for src in ("scorer", "llm")},
            "label_correct_ci": stats.bootstrap_ci([1.0 if x == "correct" else 0.0
                                                    for x in labels]),
            # the scorer's verdicts alone: no LLM judge in the figure
            "scorer_correct_ci": stats.bootstrap_ci([
                1.0 if _label(r) == "correct" else 0.0 for r in ok
                if (r.get("verdict") or {}).get("source") == "scorer" and _label(r) is not None]),
            "yes_no": yes_no_by_class(mine),
            "judge_correct": sum(1 for r in ok if _label(r) == "correct"
                                 and (r.get("verdict") or {}).get("source") == "llm"),
            "other_figures": sum(1 for r in ok if other_figures(r)),
            "strict_correct_ci": stats.bootstrap_ci([x for x in map(_strict, ok)
                                                     if x is not None]),
            "bands": {name: sum(lo <= x <= hi for x in scores) for lo, hi, name in BANDS},
            "tokens_per_query": statistics.fmean(tokens) if tokens else None,
            "latency_s": {"p50": percentile(totals, 0.5), "p95": percentile(totals, 0.95),
                          "mean": statistics.fmean(totals) if totals else None},
            "latencies_s": totals,
            "joules_per_query": statistics.fmean(joules) if len(joules) == len(ok) and ok else None,
            "energy_source": sorted({e.get("source", "unavailable") for e in energy}) or None,
            "cpu_seconds_per_query": statistics.fmean(cpu) if cpu else None,
            "retrieval": retrieval[s],
        }
    if reference in systems:
        def by_id(s, f):
            return {r["id"]: f(r) for r in records if r["system"] == s and r["answer"] is not None}

        ref_score = by_id(reference, _score)
        ref_correct, ref_strict = by_id(reference, _correct), by_id(reference, _strict)
        for s in systems:
            if s == reference:
                continue
            out["paired"][s] = {
                "score": stats.paired_difference(ref_score, by_id(s, _score)),
                "correct": stats.paired_difference(ref_correct, by_id(s, _correct)),
                "strict_correct": stats.paired_difference(ref_strict, by_id(s, _strict)),
            }
    return out


# --- the report ------------------------------------------------------------------------------

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


def _calibration(profile: str, judge_model: str | None, engine: str | None = None) -> dict | None:
    """The held-out agreement of this judge with people, from a ``finrag bench
    judge-calibration`` report (``judge_calibration_<profile>`` first, then any other) that
    calibrated the same judge model on the same engine with the same scorer version."""
    import json

    from benchmarks.calibration import kappa_band
    from benchmarks.scorer import VERSION

    own = R.RESULTS / f"judge_calibration_{profile}" / "results.json"
    others = sorted(p for p in R.RESULTS.glob("judge_calibration_*/results.json") if p != own)
    for path in [own, *others]:
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        if judge_model is None:  # --scorer-only: the scorer's own agreement on what it decides
            res = data.get("scorer") or {}
            if not res or data.get("scorer_version") != VERSION:
                continue
            who = "the scorer, on the answers it decides,"
        else:
            res = (data.get("results") or {}).get(profile)
            judge = (data.get("judges") or {}).get(profile) or {}
            if (not res or judge.get("model_id") != judge_model or judge.get("scorer") != VERSION
                    or judge.get("engine") != engine):
                continue  # calibrated another judge, engine or scorer
            who = "scorer + judge"
        part = res.get("llm_part") or {}
        llm = ({"n": part["n"], "accuracy": part["accuracy"], "kappa": part["kappa"],
                "band": kappa_band(part["kappa"])} if judge_model is not None and part.get("n")
               else None)
        return {"n": res["n"], "accuracy": res["accuracy"], "kappa": res["kappa"] or 0.0,
                "band": kappa_band(res["kappa"]), "split": data.get("split"), "who": who,
                "llm": llm, "report": str(path.parent.relative_to(R.REPO) / "report.md")}
    return None


def _limits(text: str) -> dict[str, int]:
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        system, _, n = part.partition("=")
        if not n.isdigit():
            raise ValueError(f"--system-limit wants SYSTEM=N[,SYSTEM=N], got {part!r}")
        out[system] = int(n)
    return out


def add_parser(sub) -> None:
    from retrieval.systems.options import add_pipeline_options

    p = sub.add_parser("quality", help="answer quality (local judge), retrieval and cost of "
                       "every system on the same questions", description=__doc__.split("\n\n")[0])
    add_pipeline_options(p)
    p.add_argument("--questions", type=Path, default=R.SHARED / "questions.dev.jsonl",
                   help="JSONL with question, answer, doc_name, evidence (default: the shared "
                   "FinanceBench dev questions)")
    p.add_argument("--systems", default="", help="comma-separated systems (default: "
                   f"{', '.join(DEFAULT_SYSTEMS)}; cbr_meta/cbr_llmctx only when built)")
    p.add_argument("--split", choices=("all", "tune", "test"), default="all",
                   help="the questions of one half of benchmarks/splits.py: tune (every "
                   "choice is made on it) or test (\"seen\": read while writing rules, so no "
                   "longer held out); default all")
    p.add_argument("--limit", type=int, default=None, help="the first N questions only")
    p.add_argument("--system-limit", default="", metavar="SYSTEM=N,…",
                   help="run a slow system on a fixed sample of N questions whose filing is "
                   "indexed, e.g. sfr=20; every system is also reported on that sample")
    p.add_argument("--reference", default="hdrr", help="the system the others are compared "
                   "with, question by question (default hdrr)")
    p.add_argument("--cached-only", action="store_true", help="answer and judge nothing: "
                   "draw the report from what the caches hold")
    p.add_argument("--judge-profile", default=None, help="profile whose judge scores the "
                   "answers (default: --profile)")
    p.add_argument("--scorer-only", action="store_true", help="no LLM judge: the deterministic "
                   "scorer labels what it can, the rest stay unlabelled (accuracy is then over "
                   "the labelled answers only)")
    p.add_argument("--cache", type=Path, default=None, help="answer and verdict cache folder "
                   "(default <results>/cache); reports on other splits of the same questions "
                   "can share one, since its keys hold everything that decides a row")
    p.add_argument("--name", default=None, help="results folder name (default quality_<profile>)")
    p.add_argument("--out", type=Path, default=None, help="results folder (overrides --name)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=main)


def main(args) -> int:
    import json

    from benchmarks import judge as J
    from retrieval.systems.evaluation import load_questions
    from retrieval.systems.options import load_pipeline

    limits = _limits(args.system_limit)
    from benchmarks.splits import select

    records = [json.loads(line) for line in args.questions.read_text(encoding="utf-8")
               .splitlines() if line.strip()]
    questions = select(load_questions(args.questions), args.split, records)[:args.limit]
    if not questions:
        raise ValueError(f"no questions in {args.questions}")
    pipe = load_pipeline(args)
    try:
        systems = available_systems(pipe, [s for s in args.systems.split(",") if s] or None)
        judge_profile = args.judge_profile or pipe.profile.name
        if args.scorer_only:
            judge_engine = None
        elif judge_profile == pipe.profile.name:
            judge_engine = pipe.engine(J.judge_role(pipe.profile))
        else:
            judge_engine = J.load_judge(judge_profile)
        out = R.results_dir(args.name or f"quality_{pipe.profile.name}", args.out)
        cache = args.cache or out / "cache"
        records = run_quality(pipe, questions, systems, cache, judge_engine=judge_engine,
                              limits=limits, progress=not args.quiet,
                              cached_only=args.cached_only)
        from benchmarks.scorer import VERSION

        jconf = {**(J.judge_config(judge_engine) if judge_engine is not None
                    else {"model_id": None}), "scorer": VERSION}
        meta = {"command": R.command_line(args), "profile": pipe.profile.name,
                "index": R.shown_path(pipe.index.folder),
                "questions_file": R.shown_path(args.questions), "questions": len(questions),
                "cache": R.shown_path(cache),
                "split": None if args.split == "all" else args.split,
                "limits": limits, "reference": args.reference, "judge": jconf,
                "planned": {s: len(sample_ids(questions, limits[s])) if s in limits
                            else len(questions) for s in systems},
                "judge_profile": judge_profile, "energy_source": pipe.meter.source,
                "calibration": _calibration(judge_profile, jconf["model_id"],
                                            jconf.get("engine"))}
        meta["config_hash"] = R.config_hash({"systems": {s: system_config(pipe, s)
                                                         for s in systems},
                                             "judge": jconf, "questions": [q.id for q in questions],
                                             "limits": limits})
    finally:
        pipe.close()
    summary = summarize(records, systems, args.reference)
    summary["samples"] = {}
    for s, n in limits.items():
        ids = sample_ids(questions, n)
        part = summarize([r for r in records if r["id"] in ids], systems, args.reference)
        summary["samples"][s] = {"ids": sorted(ids), "systems": {
            k: {"accuracy_ci": v["label_correct_ci"], "judged": v["judged"],
                "tokens_per_query": v["tokens_per_query"]} for k, v in part["systems"].items()},
            "paired": part["paired"]}
    meta["by_rule"] = sum(1 for r in records if (r["verdict"] or {}).get("source") == "scorer"
                          and not r.get("stale"))
    R.write_json(out / "results.json", {**meta, **summary, "paper": PAPER})
    with (out / "per_question.jsonl").open("w", encoding="utf-8") as fh:
        for r in records:
            a = r["answer"] or {}
            v = (r["verdict"] or {}).get("judgement") or {}
            fh.write(json.dumps({"id": r["id"], "system": r["system"],
                                 "question_type": r.get("question_type"),
                                 "stale": r.get("stale", False),
                                 "answer": a.get("answer"), "score": v.get("score"),
                                 "label": v.get("label"), "reason": v.get("reason"),
                                 "decided_by": (r["verdict"] or {}).get("source"),
                                 **{k: r["row"].get(k) for k in
                                    ("routing_status", "routed_exact", "hit5", "hit10",
                                     "wrong_doc_share", "context_tokens", "llm_calls",
                                     "prompt_tokens", "completion_tokens", "error")}}) + "\n")
    files = plots(summary, out, f"{len(questions)} questions, profile {meta['profile']}",
                  args.reference)
    (out / "report.md").write_text(report(summary, meta, files), encoding="utf-8")
    for s, v in summary["systems"].items():
        print(f"{s:11} judged {v['judged']:>3}  accuracy {R.pct(v['labels']['correct'])}  "
              f"average {R.num(v['average'], '{:.2f}')}  "
              f"tokens/query {R.num(v['tokens_per_query'], '{:,.0f}')}")
    print(f"report: {out / 'report.md'}")
    return 0
