"""``finrag bench facts``: how well the structured facts route answers SEC questions.

The questions of ``benchmarks/data/sec_facts_questions.jsonl`` (metric lookups, derived fourth
quarters, fiscal calendars, time series, full statements, comparisons, EPS restated after stock
splits, narrative and hybrid questions, and questions the facts cannot answer) are answered once
by system ``hdrr`` of one pipeline loaded in this process, and each answer's route and facts
(``Answer.route``, ``Answer.facts``) are graded against gold values that ``benchmarks.facts_gold``
reads straight from SEC companyfacts JSON — no LLM judges anything. ``--repeat N`` answers the
set N times (the pipeline loaded once) for latency only; grading uses the first pass.

Scoring
    route       ``answer.route`` equals the question's route.
    value       every expected value has an ``answer.facts`` entry with the same company
                (ticker, or CIK), metric and period end (and start, for a duration) whose value
                is within 0.5% of the gold (per-share values: within 0.005 absolute); for a
                derived fourth quarter (gold = FY - 9M, the period from the day after Q3
                ends to the year's end) the entry must also say ``derived``.
    invented    on a question the facts cannot answer, every figure in the answer text that
                the question does not write (digits with optional separators and decimals,
                with or without currency, %, or a scale word); years, dates, quarter labels
                (Q2, FY24) and compounds such as 10-K or 53-week are not figures.
    correct     metric_lookup / timeseries / full_statement / hybrid: route and every value;
                narrative: route; cannot answer: no facts and no invented figure.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from finrag.benchmarks import facts_gold as G
from finrag.benchmarks import report as R
from finrag.benchmarks.facts_quality_report import MIN_P95, STRUCTURED, SYSTEM, _ci, plots, report

REL_TOL = 0.005  # 0.5% of the gold value
PER_SHARE_TOL = 0.005  # dollars per share

# --- figures in text -----------------------------------------------------------------------

_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|"
           "december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_DATES = re.compile(
    rf"\b(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b"  # January 28, 2024
    rf"|\b\d{{1,2}}\s+(?:{_MONTHS})\.?(?:,?\s+\d{{4}})?\b"  # 28 January 2024
    r"|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b", re.I)
_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "mm": 1e6, "m": 1e6,
           "billion": 1e9, "bn": 1e9, "b": 1e9, "trillion": 1e12, "tn": 1e12, "t": 1e12}
_FIGURE = re.compile(
    r"(?<![\w.,/$-])(?P<cur>US\$|\$|USD\s?)?(?P<sign>[-\u2212])?(?P<cur2>\$)?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![.,]?\d)(?!-[A-Za-z])"
    r"(?P<pct>\s?(?:%|percent\b))?"
    r"(?:\s?(?P<scale>thousand|million|billion|trillion|bn|mn|mm|tn)\b|(?P<short>[kmbt])\b)?",
    re.I)
_LIST_MARK = re.compile(r"^\s*\d{1,2}[.)]\s", re.M)


def figures(text: str) -> list[dict[str, Any]]:
    """The figures written in ``text``: ``{"text", "number", "value", "year"}`` each, where
    ``number`` is the digits as written, ``value`` has the scale applied and ``year`` marks a
    bare integer 1900-2100 (no currency, scale, %, separator or decimals)."""
    text = _LIST_MARK.sub(" ", _DATES.sub(" ", text or ""))
    out = []
    for m in _FIGURE.finditer(text):
        currency = bool(m.group("cur") or m.group("cur2"))
        if m.group("short") and not currency and m.group("num") in ("8", "10", "11", "20"):
            continue  # 10K, 8K: a form, not an amount
        tail = text[m.end():m.end() + 1]
        if tail.isalpha() and tail.lower() != "x":
            continue  # glued to letters: 2nd, 5G (1.5x is a figure)
        num = float(m.group("num").replace(",", ""))
        scale = (m.group("scale") or m.group("short") or "").lower()
        plain = not (currency or m.group("pct") or scale
                     or "," in m.group("num") or "." in m.group("num"))
        out.append({"text": m.group(0).strip(), "number": num,
                    "value": num * _SCALES.get(scale, 1.0) * (-1 if m.group("sign") else 1),
                    "year": plain and 1900 <= num <= 2100 and num.is_integer()})
    return out


def question_numbers(question: str) -> set[float]:
    """Every number the question writes (a year as FY24 or '24 also as 2024)."""
    nums = {float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", question or "")
            if n.replace(",", "").replace(".", "", 1).isdigit()}
    for short in re.findall(r"(?:\bFY|')(\d{2})\b", question or "", flags=re.I):
        nums.add(2000.0 + int(short))
    return nums


def invented_numbers(answer_text: str, question: str) -> list[str]:
    """Figures of the answer that the question does not write (years and dates left out)."""
    asked = question_numbers(question)
    return [f["text"] for f in figures(answer_text)
            if not f["year"] and f["number"] not in asked]


# --- matching ------------------------------------------------------------------------------

def value_close(gold: float, got: Any, per_share: bool = False) -> bool:
    if isinstance(got, bool) or not isinstance(got, (int, float)) or math.isnan(got):
        return False
    if per_share:
        return abs(got - gold) <= PER_SHARE_TOL + 1e-9
    if gold == 0:
        return abs(got) < 0.5
    return abs(got - gold) <= REL_TOL * abs(gold)


def _same_company(gold: G.GoldValue, fact: dict) -> bool:
    ticker = str(fact.get("ticker") or "").upper()
    if ticker and ticker == gold.ticker:
        return True
    cik = str(fact.get("cik") or "").strip()
    return cik.isdigit() and cik.zfill(10) == gold.cik


def fact_matches(gold: G.GoldValue, fact: dict) -> bool:
    """The answer's fact states the gold value: company, metric, period and value agree."""
    if not (_same_company(gold, fact) and fact.get("metric") == gold.metric):
        return False
    if fact.get("end") != gold.end:
        return False
    if gold.start is not None and fact.get("start") != gold.start:
        return False
    if gold.derive == "q4" and fact.get("derived") is not True:
        return False
    return value_close(gold.value, fact.get("value"), gold.per_share)


def _near(gold: G.GoldValue, facts: list[dict]) -> list[dict]:
    """The answer's facts of the same company and metric (what it said instead)."""
    return [f for f in facts if _same_company(gold, f) and f.get("metric") == gold.metric]


def score_question(question: dict, gold: list[G.GoldValue], answer: dict) -> dict[str, Any]:
    """Grade one answer (``Answer.to_dict()``) against the question's gold."""
    facts = [f for f in answer.get("facts") or [] if isinstance(f, dict)]
    route = answer.get("route")
    route_ok = route == question["route"]
    text = answer.get("answer") or ""
    out: dict[str, Any] = {"route_ok": route_ok, "route": route, "n_facts": len(facts),
                           "expected": [], "invented": [], "values_ok": None}
    if not question.get("answerable", True):
        out["invented"] = invented_numbers(text, question["question"])
        out["correct"] = not facts and not out["invented"]
        out["why"] = "; ".join(filter(None, [
            f"{len(facts)} facts returned" if facts else "",
            f"invented {', '.join(out['invented'])}" if out["invented"] else ""]))
        return out
    if question.get("check"):
        return _score_check(question, gold, answer, out)
    for g in gold:
        hit = next((f for f in facts if fact_matches(g, f)), None)
        out["expected"].append({
            "ticker": g.ticker, "metric": g.metric, "start": g.start, "end": g.end,
            "gold": g.value, "per_share": g.per_share, "derive": g.derive,
            "first_filed_value": g.first_filed_value, "restated": g.restated, "ok": hit is not None,
            "got": hit if hit is not None else None,
            "near": [] if hit is not None else [
                {k: f.get(k) for k in ("start", "end", "value", "derived", "period")}
                for f in _near(g, facts)][:6]})
    values_ok = all(e["ok"] for e in out["expected"]) if gold else None
    out["values_ok"] = values_ok
    out["correct"] = route_ok and values_ok is not False
    reasons = [] if route_ok else [f"route {route!r}, expected {question['route']!r}"]
    missed = [e for e in out["expected"] if not e["ok"]]
    if missed:
        reasons.append(f"{len(missed)} of {len(out['expected'])} values missing or wrong")
    if answer.get("error"):
        reasons.append(f"error: {answer['error']}")
    out["why"] = "; ".join(reasons)
    return out


def _score_check(question: dict, gold: list[G.GoldValue], answer: dict,
                 out: dict[str, Any]) -> dict[str, Any]:
    """A reasoning question: its ``expect`` values are the gold inputs (a, b, c, … in order) and
    its ``check`` says what the answer must state, computed here from them:

    - ``yes_if``: the answer opens with Yes when the expression holds, else No;
    - ``word_if`` [word when true, word when false] with ``test``: the answer's first line
      holds that word;
    - ``number`` with ``decimals`` (and ``percent``): the answer writes that value so rounded."""
    check, text = question["check"], (answer.get("answer") or "").strip()
    first = text.splitlines()[0] if text else ""
    values = [g.value for g in gold]
    if "yes_if" in check:
        want = "Yes" if G.check_value(check["yes_if"], values) else "No"
        ok = re.match(rf"^\W*{want}\b", first) is not None
    elif "word_if" in check:
        want = check["word_if"][0 if G.check_value(check["test"], values) else 1]
        ok = want in first
    else:
        value = G.check_value(check["number"], values)
        value = value * 100 if check.get("percent") else value
        want = f"{value:.{check.get('decimals', 2)}f}" + ("%" if check.get("percent") else "")
        ok = want in text
    out["check"] = {"rule": check, "want": want, "ok": ok, "first_line": first[:300],
                    "inputs": [{"ticker": g.ticker, "metric": g.metric, "end": g.end,
                                "gold": g.value} for g in gold]}
    out["values_ok"] = ok
    out["correct"] = out["route_ok"] and ok
    out["why"] = "; ".join(filter(None, [
        "" if out["route_ok"] else f"route {out['route']!r}, expected {question['route']!r}",
        "" if ok else f"expected {want!r} in the answer"]))
    return out


# --- statistics ----------------------------------------------------------------------------

def wilson(k: int, n: int, z: float = 1.96) -> dict[str, float | int | None]:
    """Wilson score interval of a proportion k/n (95% by default)."""
    if n <= 0:
        return {"estimate": None, "low": None, "high": None, "n": 0, "k": 0}
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return {"estimate": p, "low": max(0.0, centre - half), "high": min(1.0, centre + half),
            "n": n, "k": k}


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=float), q))


def _group(records: list[dict], key) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        groups[key(r)].append(r)
    return {name: {**wilson(sum(r["score"]["correct"] for r in rs), len(rs)),
                   "route_ok": sum(r["score"]["route_ok"] for r in rs)}
            for name, rs in sorted(groups.items())}


def summarize(records: list[dict], latencies: list[dict]) -> dict[str, Any]:
    n = len(records)
    correct = sum(r["score"]["correct"] for r in records)
    answerable = [r for r in records if r["answerable"]]
    unanswerable = [r for r in records if not r["answerable"]]
    by_category = _group(records, lambda r: r["category"])
    by_route = _group(answerable, lambda r: r["route_expected"])
    for name, v in by_route.items():
        rs = [r for r in answerable if r["route_expected"] == name]
        valued = [r for r in rs if r["score"]["values_ok"] is not None]
        v["values_ok"] = sum(bool(r["score"]["values_ok"]) for r in valued)
        v["with_values"] = len(valued)
    confusion: dict[str, Counter] = defaultdict(Counter)
    for r in records:
        confusion[r["route_expected"]][str(r["score"]["route"])] += 1
    calls: dict[str, dict[str, Any]] = {}
    for name, key in (("expected", lambda r: r["route_expected"] if r["answerable"]
                       else "cannot_answer"), ("answered", lambda r: str(r["route_got"]))):
        per: dict[str, list[int]] = defaultdict(list)
        for r in records:
            per[key(r)].append(r["llm_calls"])
        calls[name] = {k: {"n": len(v), "total": sum(v), "mean": sum(v) / len(v),
                           "max": max(v), "zero": sum(c == 0 for c in v)}
                       for k, v in sorted(per.items())}
    lat: dict[str, dict[str, Any]] = {}
    for route in STRUCTURED:
        rows = [x for x in latencies if x["route_expected"] == route and x["answerable"]]
        if not rows:
            continue
        total = [x["total_ms"] for x in rows if x["total_ms"] is not None]
        wall = [x["wall_ms"] for x in rows]
        lat[route] = {"n": len(rows), "questions": len({x["id"] for x in rows}),
                      "total_p50": percentile(total, 50),
                      "total_p95": percentile(total, 95) if len(total) >= MIN_P95 else None,
                      "wall_p50": percentile(wall, 50),
                      "wall_p95": percentile(wall, 95) if len(wall) >= MIN_P95 else None,
                      "with_total": len(total)}
    # a trend, ratio or judgement reasoned from the facts: the facts stage alone (a hybrid
    # answer then generates its sentence, which is the generator's time, not the reasoning's)
    facts_ms = [x["facts_ms"] for x in latencies if x.get("category") == "reasoning"
                and x.get("facts_ms") is not None]
    reasoning_latency = {"n": len(facts_ms), "p50": percentile(facts_ms, 50),
                         "p95": percentile(facts_ms, 95) if len(facts_ms) >= MIN_P95 else None}
    ml = [r for r in records if r["route_expected"] == "metric_lookup" and r["answerable"]]
    conf = {label: [r["confidence"] for r in records if r["score"]["correct"] == ok
                    and r["answerable"] and r["confidence"] is not None]
            for label, ok in (("correct", True), ("wrong", False))}
    return {
        "questions": n, "correct": correct, "accuracy": wilson(correct, n),
        "by_category": by_category, "by_route": by_route,
        "route_accuracy": wilson(sum(r["score"]["route_ok"] for r in records), n),
        "route_confusion": {k: dict(v) for k, v in sorted(confusion.items())},
        "cannot_answer": {
            "n": len(unanswerable),
            "invented_total": sum(len(r["score"]["invented"]) for r in unanswerable),
            "with_invented": sum(bool(r["score"]["invented"]) for r in unanswerable),
            "with_facts": sum(r["score"]["n_facts"] > 0 for r in unanswerable)},
        "llm_calls": calls,
        "latency": lat,
        "reasoning_facts_ms": reasoning_latency,
        "deterministic": {"metric_lookup": [r["id"] for r in ml if r["llm_calls"] == 0],
                          "metric_lookup_n": len(ml),
                          "all": [r["id"] for r in records if r["llm_calls"] == 0]},
        "confidence": {k: {"n": len(v), "mean": sum(v) / len(v) if v else None}
                       for k, v in conf.items()},
        "errors": [r["id"] for r in records if r.get("error")],
    }


# --- running -------------------------------------------------------------------------------

def index_facts(index: Path) -> dict[str, int]:
    """``{cik: facts}`` of an index's facts table; RuntimeError when it holds none."""
    from finrag.retrieval.store.index import CATALOG_FILE

    path = Path(index) / CATALOG_FILE
    if not path.is_file():
        raise RuntimeError(f"no index at {R.shown_path(index)} (expected {CATALOG_FILE}); "
                           "build one with `finrag ingest`")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        has = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='facts'"
                         ).fetchone()
        counts = dict(db.execute("SELECT cik, count(*) FROM facts GROUP BY cik")) if has else {}
    finally:
        db.close()
    if not counts:
        raise RuntimeError(
            f"index {R.shown_path(index)} holds no XBRL facts, so its facts route has nothing "
            "to answer from and this benchmark would only measure refusals: ingest the SEC "
            "companyfacts files (../shared/data/sec/companyfacts/CIK*.json) into it first")
    return counts


def check_companies(counts: dict[str, int]) -> None:
    missing = [f"{name} ({ticker}, CIK {cik})" for ticker, (cik, name) in G.COMPANIES.items()
               if not counts.get(cik)]
    if missing:
        raise RuntimeError("the index's facts lack " + ", ".join(missing) + ": the question "
                           "set is about all five companies; ingest their companyfacts files")


def _answer_dict(answer) -> dict[str, Any]:
    d = answer.to_dict()
    return {k: d.get(k) for k in ("answer", "route", "facts", "confidence", "usage",
                                  "timings_ms", "error", "contradictions")}


def run(pipe, questions: list[dict], gold: dict[str, list[G.GoldValue]], repeat: int = 1,
        progress: bool = True) -> tuple[list[dict], list[dict]]:
    """(graded records of the first pass, latency rows of every pass)."""
    records, latencies = [], []
    for rep in range(repeat):
        for i, q in enumerate(questions, 1):
            t0 = time.perf_counter()
            try:
                answer = _answer_dict(pipe.answer(q["question"], SYSTEM))
            except Exception as err:  # one failing question must not lose the others
                answer = {"answer": "", "route": None, "facts": [], "confidence": None,
                          "usage": {"llm_calls": 0}, "timings_ms": {},
                          "error": f"{type(err).__name__}: {err}"}
            wall = (time.perf_counter() - t0) * 1000
            total = (answer.get("timings_ms") or {}).get("total")
            llm_calls = int((answer.get("usage") or {}).get("llm_calls") or 0)
            latencies.append({"id": q["id"], "pass": rep, "route_expected": q["route"],
                              "category": q["category"],
                              "facts_ms": (answer.get("timings_ms") or {}).get("facts"),
                              "answerable": q.get("answerable", True),
                              "route_got": answer.get("route"), "total_ms": total,
                              "wall_ms": wall, "llm_calls": llm_calls})
            if rep:
                continue
            score = score_question(q, gold[q["id"]], answer)
            records.append({"id": q["id"], "question": q["question"], "category": q["category"],
                            "route_expected": q["route"], "route_got": answer.get("route"),
                            "answerable": q.get("answerable", True), "score": score,
                            "llm_calls": llm_calls, "confidence": answer.get("confidence"),
                            "total_ms": total, "wall_ms": wall, "error": answer.get("error"),
                            "answer": answer.get("answer"), "facts": answer.get("facts") or []})
            if progress:
                mark = "ok " if score["correct"] else "BAD"
                print(f"[{i:>3}/{len(questions)}] {mark} {q['id']} {q['category']:<14} "
                      f"route={answer.get('route')} {wall:,.0f} ms", flush=True)
        if progress and repeat > 1:
            print(f"pass {rep + 1}/{repeat} done", flush=True)
    return records, latencies


# --- report --------------------------------------------------------------------------------


# --- command -------------------------------------------------------------------------------

def add_parser(sub) -> None:
    from finrag.serving.options import add_pipeline_options

    p = sub.add_parser("facts", help="the facts route on SEC questions: route, values, "
                       "refusals, LLM calls and latency", description=__doc__.split("\n\n")[0])
    add_pipeline_options(p)
    p.add_argument("--questions", type=Path, default=G.QUESTIONS,
                   help="JSONL of questions with expectations (default: "
                   "benchmarks/data/sec_facts_questions.jsonl)")
    p.add_argument("--companyfacts", type=Path, default=G.COMPANYFACTS, metavar="DIR",
                   help="the SEC companyfacts JSON the gold is read from (default: "
                   "../shared/data/sec/companyfacts)")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="answer the set N times for latency (graded once); default 1")
    p.add_argument("--limit", type=int, default=None, help="the first N questions only")
    p.add_argument("--name", default=None, help="results folder name (default facts_<profile>)")
    p.add_argument("--out", type=Path, default=None, help="results folder (overrides --name)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=main)


def main(args) -> int:
    from finrag.serving.options import index_dir, load_pipeline

    if args.repeat < 1:
        raise ValueError("--repeat must be at least 1")
    questions = G.load_questions(args.questions)[:args.limit]
    if not questions:
        raise ValueError(f"no questions in {R.shown_path(args.questions)}")
    gold = G.all_gold(questions, args.companyfacts)  # a bad question fails before any loading
    counts = index_facts(index_dir(args))
    check_companies(counts)
    pipe = load_pipeline(args)
    try:
        profile = pipe.profile.name
        out = R.results_dir(args.name or f"facts_{profile}", args.out)
        records, latencies = run(pipe, questions, gold, args.repeat, progress=not args.quiet)
        meta = {"command": R.command_line(args), "profile": profile, "system": SYSTEM,
                "index": R.shown_path(pipe.index.folder),
                "questions_file": R.shown_path(args.questions),
                "companyfacts": R.shown_path(args.companyfacts), "repeat": args.repeat,
                "facts_in_index": sum(counts.values()), "model_ids": pipe.model_ids()}
    finally:
        pipe.close()
    meta["config_hash"] = R.config_hash({
        "system": SYSTEM, "profile": profile, "model_ids": meta["model_ids"],
        "questions": [[q["id"], q["question"], q.get("expect")] for q in questions],
        "code": R.code_version("retrieval", "models")})
    summary = summarize(records, latencies)
    R.write_json(out / "results.json", {**meta, **summary,
                                        "gold": {k: [g.to_dict() for g in v]
                                                 for k, v in gold.items()}})
    with (out / "per_question.jsonl").open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, default=str) + "\n")
    with (out / "latency.jsonl").open("w", encoding="utf-8") as fh:
        for x in latencies:
            fh.write(json.dumps(x) + "\n")
    files = plots(summary, latencies, out, f"{len(questions)} questions, profile {profile}")
    (out / "report.md").write_text(report(summary, meta, records, files), encoding="utf-8")
    print(f"accuracy {_ci(summary['accuracy'])}; invented figures on cannot-answer questions: "
          f"{summary['cannot_answer']['invented_total']}")
    print(f"report: {R.shown_path(out / 'report.md')}")
    return 0
