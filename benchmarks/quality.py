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

from finrag.benchmarks import report as R
from finrag.benchmarks import stats
from finrag.benchmarks.quality_report import BANDS, LABELS, PAPER, plots, report
from finrag.benchmarks.splits import seeded_rank

DEFAULT_SYSTEMS = ("cbr", "cbr_meta", "cbr_llmctx", "sfr", "hdrr", "hdrr_text", "agentic")


# --- configuration ---------------------------------------------------------------------------

def index_fingerprint(index) -> dict[str, Any]:
    """What an index holds, as a hash: its settings and every document's content hash."""
    from dataclasses import asdict

    docs = [(d.doc_id, d.sha256, d.chunk_count) for d in index.documents()]
    return {"settings": asdict(index.settings), "documents": len(docs),
            "contents": R.config_hash(docs, 16)}


def system_config(pipe, system: str) -> dict[str, Any]:
    """Everything that decides a system's answers on this pipeline."""
    from finrag.retrieval.systems.recipes import VARIANT_OF

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
    """The code that makes answers: retrieval/ and models/."""
    return R.code_version("retrieval", "models")


def available_systems(pipe, wanted: list[str] | None) -> list[str]:
    """``wanted`` (checked), or every default system whose index is there."""
    from finrag.retrieval.systems.recipes import SYSTEMS, VARIANT_OF

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
    from finrag.benchmarks import judge as J
    from finrag.retrieval.systems.evaluation import score_row

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
    from finrag.benchmarks.scorer import figures, found

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

    from finrag.benchmarks.scorer import kind

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
    from finrag.benchmarks.serve_load_report import percentile
    from finrag.retrieval.systems.evaluation import summarize as retrieval_summary

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


def _calibration(profile: str, judge_model: str | None, engine: str | None = None) -> dict | None:
    """The held-out agreement of this judge with people, from a ``finrag bench
    judge-calibration`` report (``judge_calibration_<profile>`` first, then any other) that
    calibrated the same judge model on the same engine with the same scorer version."""
    import json

    from finrag.benchmarks.calibration import kappa_band
    from finrag.benchmarks.scorer import VERSION

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
    from finrag.serving.options import add_pipeline_options

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

    from finrag.benchmarks import judge as J
    from finrag.retrieval.systems.evaluation import load_questions
    from finrag.serving.options import load_pipeline

    limits = _limits(args.system_limit)
    from finrag.benchmarks.splits import select, split_of

    records = [json.loads(line) for line in args.questions.read_text(encoding="utf-8")
               .splitlines() if line.strip()]
    halves = split_of(records)  # tune, or test (seen: read while writing rules)
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
        from finrag.benchmarks.scorer import VERSION

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
    summary["by_half"] = {half: summarize([r for r in records if halves.get(r["id"]) == half],
                                          systems, args.reference)["systems"]
                          for half in ("tune", "test")}
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
