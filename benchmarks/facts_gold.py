"""Gold values of the SEC facts questions (``benchmarks/data/sec_facts_questions.jsonl``),
read straight from SEC companyfacts JSON (``../shared/data/sec/companyfacts/CIK##########.json``)
with this module's own few rules, so the gold does not share a line of code with finrag's facts
route (``retrieval.facts``) that it grades.

A question's ``expect`` list names each value it needs by company, metric, concepts and the
period's exact dates as the JSON writes them (never by finrag's fiscal-year numbers):

    {"ticker": "NVDA", "metric": "revenue", "concepts": ["us-gaap:Revenues", ...],
     "period": "FY" | "Q" | "instant", "start": "2023-01-30" | null, "end": "2024-01-28",
     "derive": null | "q4", "unit": optional ("USD", "USD/shares", "shares")}

Rules
    point value   For the concepts in order, the first concept with a fact at exactly
                  (start, end) — or, for an instant, a fact at ``end`` without a start — in the
                  expected unit answers. companyfacts holds consolidated facts only (no
                  dimensions). Of that concept's filings of the period, the LATEST filed (max
                  ``filed``, then accession) gives the value; the earliest filed is kept as
                  ``first_filed_value`` (they differ when a later filing restated the period, e.g.
                  EPS after a stock split).
    q4            ``derive: "q4"``, ``period: "Q"``, ``start`` = the day after Q3 ends, ``end`` =
                  the fiscal year's end: the full year (the one fact of 340-380 days ending at
                  ``end``) minus the nine months to date (fiscal-year start .. start - 1 day) of
                  the same concept; where no nine-month fact exists, minus the three quarters
                  (a chain of 80-100-day facts from the year's start to start - 1 day).
    formula       ``"formula": "a - b"`` (or ``+``) with ``"parts": {"a": [concepts], "b":
                  [concepts]}``: each part a point value of the same period, then combined.
    last N years  A question with ``"last_n_years": N`` must list, per company and metric, the
                  N latest fiscal years (340-380-day periods) that a 10-K reported: checked
                  here, so a stale list fails instead of grading against old years.
    absent        A cannot-answer question may list ``"absent": [{"ticker", "concepts",
                  "end_from", "end_to"}]``: checked to have no fact (of those concepts, ending
                  in that window when given); a ticker outside the five is checked to be
                  outside them.

Any expectation without a fact raises ``GoldError`` naming the question: the question file is
then wrong, not the system under test.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
COMPANYFACTS = REPO.parent / "shared" / "data" / "sec" / "companyfacts"
QUESTIONS = REPO / "benchmarks" / "data" / "sec_facts_questions.jsonl"

# the five companies of the question set: ticker -> (CIK, name)
COMPANIES = {
    "AAPL": ("0000320193", "Apple"),
    "NVDA": ("0001045810", "NVIDIA"),
    "SNOW": ("0001640147", "Snowflake"),
    "GOOGL": ("0001652044", "Alphabet"),
    "MRVL": ("0001835632", "Marvell Technology"),
}
ROUTES = ("metric_lookup", "timeseries", "full_statement", "narrative", "hybrid")
CATEGORIES = ("metric_lookup", "q4", "calendar", "timeseries", "full_statement", "compare",
              "eps_split", "narrative", "hybrid", "cannot_answer", "reasoning")
PER_SHARE = {"eps_basic", "eps_diluted", "dividends_per_share"}
SHARE_COUNTS = {"shares_outstanding", "weighted_shares_basic", "weighted_shares_diluted"}
FY_DAYS, Q_DAYS, YTD9_DAYS = (340, 380), (80, 100), (260, 285)


class GoldError(ValueError):
    """A question whose gold cannot be computed from the JSON: the question file is wrong."""


@dataclass
class GoldValue:
    """One expected value, as the JSON gives it."""

    ticker: str
    metric: str
    period: str  # FY | Q | instant
    start: str | None
    end: str
    value: float
    unit: str
    concept: str
    filed: str
    accession: str | None
    form: str | None
    first_filed_value: float
    first_filed: str
    first_accession: str | None
    derived: bool = False  # q4 = FY - 9M (or - Q1 - Q2 - Q3), or a formula
    derive: str | None = None  # "q4" where the question asks for a derived fourth quarter
    formula: str | None = None
    parts: list[dict[str, Any]] = field(default_factory=list)  # the facts a derived value used

    @property
    def cik(self) -> str:
        return COMPANIES[self.ticker][0]

    @property
    def per_share(self) -> bool:
        return self.unit == "USD/shares" or self.metric in PER_SHARE

    @property
    def restated(self) -> bool:
        return self.first_filed != self.filed and self.first_filed_value != self.value

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "restated": self.restated}


def default_unit(metric: str) -> str:
    if metric in PER_SHARE:
        return "USD/shares"
    if metric in SHARE_COUNTS:
        return "shares"
    return "USD"


def _days(start: str, end: str) -> int:
    return (date.fromisoformat(end) - date.fromisoformat(start)).days


def _within(start: str | None, end: str, bounds: tuple[int, int]) -> bool:
    return bool(start) and bounds[0] <= _days(start, end) <= bounds[1]


def _day_before(day: str) -> str:
    return (date.fromisoformat(day) - timedelta(days=1)).isoformat()


# --- the JSON ------------------------------------------------------------------------------

class CompanyFacts:
    """One company's companyfacts file: ``rows(concept, unit)`` = its filed values."""

    def __init__(self, path: Path):
        try:
            data = json.loads(path.read_bytes())
        except OSError as err:
            raise GoldError(f"{path.name}: cannot read ({err.strerror or err})") from None
        if not isinstance(data, dict) or not isinstance(data.get("facts"), dict):
            raise GoldError(f"{path.name}: not a companyfacts file")
        self.cik = str(data.get("cik", "")).zfill(10)
        self.name = str(data.get("entityName") or "")
        self._facts: dict[str, dict[str, Any]] = data["facts"]

    def units(self, concept: str) -> dict[str, list[dict[str, Any]]]:
        """``{unit: rows}`` of a concept ("us-gaap:" when no prefix is written)."""
        taxonomy, _, name = concept.rpartition(":")
        entry = self._facts.get(taxonomy or "us-gaap", {}).get(name) or {}
        return entry.get("units") or {}

    def rows(self, concept: str, unit: str) -> list[dict[str, Any]]:
        return list(self.units(concept).get(unit, []))


@lru_cache(maxsize=16)
def _load(path: str) -> CompanyFacts:
    return CompanyFacts(Path(path))


def company_facts(ticker: str, facts_dir: Path = COMPANYFACTS) -> CompanyFacts:
    if ticker not in COMPANIES:
        raise GoldError(f"{ticker}: not one of the question set's companies "
                        f"({', '.join(COMPANIES)})")
    path = Path(facts_dir) / f"CIK{COMPANIES[ticker][0]}.json"
    if not path.is_file():
        raise GoldError(f"{ticker}: no companyfacts file CIK{COMPANIES[ticker][0]}.json in "
                        f"{facts_dir}")
    return _load(str(path))


def _order(row: dict[str, Any]) -> tuple[str, str]:
    return (str(row.get("filed") or ""), str(row.get("accn") or ""))


def _point(cf: CompanyFacts, concept: str, unit: str, start: str | None,
           end: str) -> tuple[dict, dict] | None:
    """(latest filed, first filed) rows of one concept at exactly (start, end)."""
    hits = [r for r in cf.rows(concept, unit)
            if r.get("end") == end and (r.get("start") or None) == (start or None)]
    if not hits:
        return None
    hits.sort(key=_order)
    return hits[-1], hits[0]


def _value(concept: str, unit: str, rows: tuple[dict, dict]) -> dict[str, Any]:
    latest, first = rows
    return {"concept": concept, "unit": unit, "value": float(latest["val"]),
            "filed": latest.get("filed"), "accession": latest.get("accn"),
            "form": latest.get("form"), "start": latest.get("start"), "end": latest["end"],
            "first_filed_value": float(first["val"]), "first_filed": first.get("filed"),
            "first_accession": first.get("accn")}


def lookup(cf: CompanyFacts, concepts: list[str], unit: str, start: str | None,
           end: str) -> dict[str, Any] | None:
    """The point value of the first concept with a fact at (start, end), or None."""
    for concept in concepts:
        rows = _point(cf, concept, unit, start, end)
        if rows:
            return _value(concept, unit, rows)
    return None


def _fiscal_year_start(cf: CompanyFacts, concept: str, unit: str, end: str) -> str | None:
    starts = {r["start"] for r in cf.rows(concept, unit)
              if r.get("end") == end and _within(r.get("start"), end, FY_DAYS)}
    if len(starts) > 1:
        raise GoldError(f"{concept}: several full years end {end}: {sorted(starts)}")
    return next(iter(starts), None)


def _quarter_chain(cf: CompanyFacts, concept: str, unit: str, start: str,
                   end: str) -> list[dict[str, Any]] | None:
    """Three consecutive quarters (80-100 days each) covering start..end, or None."""
    quarters = {}
    for r in cf.rows(concept, unit):
        if _within(r.get("start"), r["end"], Q_DAYS):
            quarters.setdefault(r["start"], set()).add(r["end"])
    chain, cursor = [], start
    for _ in range(3):
        ends = sorted(quarters.get(cursor, ()))
        if not ends:
            return None
        q_end = ends[0]
        rows = _point(cf, concept, unit, cursor, q_end)
        chain.append(_value(concept, unit, rows))
        cursor = (date.fromisoformat(q_end) + timedelta(days=1)).isoformat()
    return chain if chain[-1]["end"] == end else None


def derive_q4(cf: CompanyFacts, concepts: list[str], unit: str, start: str,
              end: str) -> dict[str, Any] | None:
    """Q4 (start..end) = full year - nine months to date (or - Q1 - Q2 - Q3), one concept."""
    q3_end = _day_before(start)
    for concept in concepts:
        fy_start = _fiscal_year_start(cf, concept, unit, end)
        if fy_start is None:
            continue
        year = _value(concept, unit, _point(cf, concept, unit, fy_start, end))
        ytd = _point(cf, concept, unit, fy_start, q3_end)
        if ytd:
            before = [_value(concept, unit, ytd)]
            formula = "FY - 9M"
        else:
            before = _quarter_chain(cf, concept, unit, fy_start, q3_end) or []
            formula = "FY - Q1 - Q2 - Q3"
        if not before:
            continue
        return {"concept": concept, "unit": unit,
                "value": year["value"] - sum(b["value"] for b in before),
                "first_filed_value": (year["first_filed_value"]
                                      - sum(b["first_filed_value"] for b in before)),
                "filed": year["filed"], "accession": year["accession"], "form": year["form"],
                "first_filed": year["first_filed"], "first_accession": year["first_accession"],
                "formula": formula, "parts": [year, *before]}
    return None


_FORMULA = re.compile(r"^\s*(\w+)\s*([+-])\s*(\w+)\s*$")


def _formula(cf: CompanyFacts, expect: dict, unit: str) -> dict[str, Any] | None:
    m = _FORMULA.match(expect["formula"])
    if not m:
        raise GoldError(f"formula {expect['formula']!r}: only 'a - b' or 'a + b'")
    a, op, b = m.groups()
    parts = []
    for name in (a, b):
        concepts = (expect.get("parts") or {}).get(name)
        if not concepts:
            raise GoldError(f"formula {expect['formula']!r}: no concepts for part {name!r}")
        got = lookup(cf, concepts, unit, expect.get("start"), expect["end"])
        if got is None:
            return None
        parts.append({"metric": name, **got})
    sign = 1 if op == "+" else -1
    return {"concept": None, "unit": unit,
            "value": parts[0]["value"] + sign * parts[1]["value"],
            "first_filed_value": (parts[0]["first_filed_value"]
                                  + sign * parts[1]["first_filed_value"]),
            "filed": max(p["filed"] for p in parts), "accession": None, "form": None,
            "first_filed": min(p["first_filed"] for p in parts), "first_accession": None,
            "formula": expect["formula"], "parts": parts}


# --- one expectation, one question ---------------------------------------------------------

def _check_expect(expect: dict, qid: str) -> None:
    for key in ("ticker", "metric", "period", "end"):
        if not expect.get(key):
            raise GoldError(f"{qid}: an expectation lacks {key!r}: {expect}")
    if not expect.get("concepts") and not expect.get("formula"):
        raise GoldError(f"{qid}: an expectation needs concepts or a formula: {expect}")
    period, start, end = expect["period"], expect.get("start"), expect["end"]
    if period not in ("FY", "Q", "instant"):
        raise GoldError(f"{qid}: period {period!r} is not FY, Q or instant")
    if (period == "instant") != (start is None):
        raise GoldError(f"{qid}: an instant has no start and a duration needs one: {expect}")
    if period == "FY" and not _within(start, end, FY_DAYS):
        raise GoldError(f"{qid}: {start}..{end} is not a full year")
    if period == "Q" and not _within(start, end, Q_DAYS):
        raise GoldError(f"{qid}: {start}..{end} is not a quarter")
    if expect.get("derive") not in (None, "q4"):
        raise GoldError(f"{qid}: derive {expect['derive']!r} is not null or 'q4'")
    if expect.get("derive") == "q4" and period != "Q":
        raise GoldError(f"{qid}: a q4 derivation is a quarter (period 'Q')")


def gold_value(expect: dict, qid: str = "?", facts_dir: Path = COMPANYFACTS) -> GoldValue:
    """The gold of one expectation; GoldError (naming ``qid``) when the JSON has no fact."""
    _check_expect(expect, qid)
    ticker, metric = expect["ticker"], expect["metric"]
    try:
        cf = company_facts(ticker, facts_dir)
    except GoldError as err:
        raise GoldError(f"{qid}: {err}") from None
    unit = expect.get("unit") or default_unit(metric)
    start, end = expect.get("start"), expect["end"]
    if expect.get("derive") == "q4":
        got = derive_q4(cf, expect.get("concepts") or [], unit, start, end)
    elif expect.get("formula") and not expect.get("concepts"):
        got = _formula(cf, expect, unit)
    else:
        got = lookup(cf, expect["concepts"], unit, start, end)
        if got is None and expect.get("formula"):
            got = _formula(cf, expect, unit)
    if got is None:
        what = f"{start}..{end}" if start else f"at {end}"
        raise GoldError(f"{qid}: no {ticker} {metric} fact {what} [{unit}] "
                        f"(concepts {expect.get('concepts') or expect.get('formula')}"
                        f"{', derived q4' if expect.get('derive') else ''}): fix the question")
    derived = bool(expect.get("derive")) or bool(got.get("parts"))
    return GoldValue(ticker=ticker, metric=metric, period=expect["period"], start=start,
                     end=end, value=got["value"], unit=unit, concept=got["concept"] or "",
                     filed=got["filed"] or "", accession=got["accession"], form=got["form"],
                     first_filed_value=got["first_filed_value"],
                     first_filed=got["first_filed"] or "",
                     first_accession=got["first_accession"], derived=derived,
                     derive=expect.get("derive"),
                     formula=got.get("formula"), parts=got.get("parts", []))


def latest_fiscal_years(ticker: str, concepts: list[str], n: int, unit: str = "USD",
                        facts_dir: Path = COMPANYFACTS) -> list[tuple[str, str]]:
    """The ``n`` latest full-year periods (start, end) a 10-K reported for any of
    ``concepts``, oldest first."""
    cf = company_facts(ticker, facts_dir)
    periods = {(r["start"], r["end"]) for c in concepts for r in cf.rows(c, unit)
               if str(r.get("form", "")).startswith("10-K")
               and _within(r.get("start"), r["end"], FY_DAYS)}
    return sorted(periods, key=lambda p: p[1])[-n:]


def _check_last_n(question: dict, qid: str, facts_dir: Path) -> None:
    n = question.get("last_n_years")
    if not n:
        return
    series: dict[tuple[str, str], list[dict]] = {}
    for e in question["expect"]:
        series.setdefault((e["ticker"], e["metric"]), []).append(e)
    for (ticker, metric), expects in series.items():
        unit = expects[0].get("unit") or default_unit(metric)
        want = latest_fiscal_years(ticker, expects[0]["concepts"], n, unit, facts_dir)
        have = sorted(((e["start"], e["end"]) for e in expects), key=lambda p: p[1])
        if have != want:
            raise GoldError(f"{qid}: 'last {n} years' of {ticker} {metric} are {want} in the "
                            f"JSON, the question lists {have}: fix the question")


def _check_absent(question: dict, qid: str, facts_dir: Path) -> None:
    for item in question.get("absent", []):
        ticker = item["ticker"]
        if ticker not in COMPANIES:
            continue  # a company outside the five: nothing of it is in the store
        cf = company_facts(ticker, facts_dir)
        low, high = item.get("end_from"), item.get("end_to")
        for concept in item.get("concepts", []):
            for unit, rows in cf.units(concept).items():
                for r in rows:
                    if (low is None or r["end"] >= low) and (high is None or r["end"] <= high):
                        raise GoldError(f"{qid}: says {ticker} has no {concept} "
                                        f"{low or ''}..{high or ''}, but the JSON has "
                                        f"{r['val']} [{unit}] at {r['end']} ({r.get('form')} "
                                        f"{r.get('filed')}): fix the question")


def question_gold(question: dict, facts_dir: Path = COMPANYFACTS) -> list[GoldValue]:
    """Every expected value of a question (``[]`` for narrative and cannot-answer ones)."""
    qid = question.get("id", "?")
    if question.get("route") not in ROUTES:
        raise GoldError(f"{qid}: route {question.get('route')!r} is not one of {ROUTES}")
    if question.get("category") not in CATEGORIES:
        raise GoldError(f"{qid}: category {question.get('category')!r} is not one of "
                        f"{CATEGORIES}")
    expects = question.get("expect") or []
    if not question.get("answerable", True):
        if expects:
            raise GoldError(f"{qid}: a question that cannot be answered expects no values")
        _check_absent(question, qid, facts_dir)
        return []
    if question["route"] != "narrative" and not expects:
        raise GoldError(f"{qid}: an answerable {question['route']} question needs expectations")
    values = [gold_value(e, qid, facts_dir) for e in expects]
    _check_last_n(question, qid, facts_dir)
    return values


def check_value(expr: str, values: list[float]) -> float | bool:
    """A reasoning question's ``check`` expression over its gold values, named a, b, c, … in
    the order of ``expect``: numbers, + - * /, parentheses and one comparison ("c / d > a / b").
    Nothing else is evaluated."""
    import ast

    names = {chr(ord("a") + i): v for i, v in enumerate(values)}

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in names:
            return names[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult,
                                                               ast.Div)):
            left, right = ev(node.left), ev(node.right)
            return {ast.Add: left + right, ast.Sub: left - right, ast.Mult: left * right,
                    ast.Div: left / right if right else float("nan")}[type(node.op)]
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(
                node.ops[0], (ast.Gt, ast.GtE, ast.Lt, ast.LtE)):
            left, right = ev(node.left), ev(node.comparators[0])
            return {ast.Gt: left > right, ast.GtE: left >= right, ast.Lt: left < right,
                    ast.LtE: left <= right}[type(node.ops[0])]
        raise GoldError(f"check {expr!r}: {ast.dump(node)[:60]} is not allowed")
    return ev(ast.parse(expr, mode="eval"))


def load_questions(path: str | Path = QUESTIONS) -> list[dict[str, Any]]:
    path = Path(path)
    out, seen = [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
        except json.JSONDecodeError as err:
            raise GoldError(f"{path.name}:{n}: not JSON ({err})") from None
        if not q.get("id") or not q.get("question"):
            raise GoldError(f"{path.name}:{n}: a question needs 'id' and 'question'")
        if q["id"] in seen:
            raise GoldError(f"{path.name}:{n}: id {q['id']} repeats")
        seen.add(q["id"])
        out.append(q)
    return out


def all_gold(questions: list[dict], facts_dir: Path = COMPANYFACTS) -> dict[str, list[GoldValue]]:
    """Gold of every question, keyed by id; the first question without gold raises."""
    return {q["id"]: question_gold(q, facts_dir) for q in questions}
