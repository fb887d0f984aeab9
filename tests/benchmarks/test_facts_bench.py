"""The SEC facts benchmark: gold from companyfacts JSON, the scoring rules, the question set,
and the report drawn from a stand-in pipeline (the facts route itself is tested elsewhere)."""

import json
import sqlite3
from collections import Counter

import pytest
from conftest import SHARED, need_shared

from finrag.benchmarks import facts_gold as G
from finrag.benchmarks import facts_quality as FQ
from finrag.benchmarks import facts_quality_report as FQR
from finrag.retrieval.answer import Answer, LLMCall

COMPANYFACTS = SHARED / "data" / "sec" / "companyfacts"

NVDA_FY24 = ("2023-01-30", "2024-01-28")


def expect(ticker, metric, start, end, period="FY", concepts=None, derive=None):
    concepts = concepts or {
        "revenue": ["us-gaap:Revenues",
                    "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"],
        "eps_diluted": ["us-gaap:EarningsPerShareDiluted"]}[metric]
    return {"ticker": ticker, "metric": metric, "concepts": concepts, "period": period,
            "start": start, "end": end, "derive": derive}


@pytest.fixture(scope="module")
def facts_dir():
    return need_shared(COMPANYFACTS)


# --- gold ----------------------------------------------------------------------------------

def test_nvidia_fiscal_2024_revenue(facts_dir):
    g = G.gold_value(expect("NVDA", "revenue", *NVDA_FY24), "t", facts_dir)
    assert g.value == 60_922_000_000
    assert g.concept == "us-gaap:Revenues" and g.unit == "USD" and not g.derived
    assert g.filed >= g.first_filed and g.form == "10-K"


def test_q4_is_full_year_minus_nine_months(facts_dir):
    g = G.gold_value(expect("NVDA", "revenue", "2023-10-30", "2024-01-28", "Q", derive="q4"),
                     "t", facts_dir)
    cf = G.company_facts("NVDA", facts_dir)
    year = G.lookup(cf, ["us-gaap:Revenues"], "USD", *NVDA_FY24)["value"]
    nine = G.lookup(cf, ["us-gaap:Revenues"], "USD", "2023-01-30", "2023-10-29")["value"]
    assert g.value == year - nine == 22_103_000_000
    assert g.derived and g.derive == "q4" and g.formula == "FY - 9M"
    assert [p["end"] for p in g.parts] == ["2024-01-28", "2023-10-29"]


def test_latest_filing_wins_and_first_filed_is_kept(facts_dir):
    # NVIDIA's FY2021 diluted EPS: $6.90 as filed, $1.73 after the July 2021 4:1 split
    g = G.gold_value(expect("NVDA", "eps_diluted", "2020-01-27", "2021-01-31"), "t", facts_dir)
    assert g.value == pytest.approx(1.73) and g.first_filed_value == pytest.approx(6.90)
    assert g.restated and g.per_share and g.unit == "USD/shares"
    assert g.filed > g.first_filed


def test_a_missing_fact_names_the_question(facts_dir):
    with pytest.raises(G.GoldError, match="sec-999"):
        G.gold_value(expect("SNOW", "revenue", "2011-02-01", "2012-01-31"), "sec-999", facts_dir)
    with pytest.raises(G.GoldError, match="sec-998.*not a full year"):
        G.gold_value(expect("NVDA", "revenue", "2023-01-30", "2023-04-30"), "sec-998", facts_dir)


def test_last_n_years_must_be_the_latest_10k_years(facts_dir):
    years = G.latest_fiscal_years("NVDA", ["us-gaap:Revenues"], 3, facts_dir=facts_dir)
    assert len(years) == 3 and years[0] < years[1] < years[2]
    stale = {"id": "sec-997", "route": "timeseries", "category": "timeseries",
             "answerable": True, "last_n_years": 2,
             "expect": [expect("NVDA", "revenue", *NVDA_FY24)]}
    with pytest.raises(G.GoldError, match="sec-997.*last 2 years"):
        G.question_gold(stale, facts_dir)


def test_absent_is_checked(facts_dir):
    wrong = {"id": "sec-996", "route": "metric_lookup", "category": "cannot_answer",
             "answerable": False,
             "absent": [{"ticker": "NVDA", "concepts": ["us-gaap:Revenues"],
                         "end_from": "2024-01-01", "end_to": "2024-02-01"}]}
    with pytest.raises(G.GoldError, match="sec-996"):
        G.question_gold(wrong, facts_dir)


def test_q4_from_three_quarters_when_no_nine_month_fact(tmp_path):
    rows = [("2023-01-01", "2023-12-31", 100.0), ("2023-01-01", "2023-03-31", 20.0),
            ("2023-04-01", "2023-06-30", 25.0), ("2023-07-01", "2023-09-30", 30.0)]
    data = {"cik": 1652044, "entityName": "test", "facts": {"us-gaap": {"Revenues": {"units": {
        "USD": [{"start": s, "end": e, "val": v, "accn": "a", "fy": 2023, "fp": "FY",
                 "form": "10-K", "filed": "2024-02-01"} for s, e, v in rows]}}}}}
    (tmp_path / "CIK0001652044.json").write_text(json.dumps(data))
    G._load.cache_clear()
    g = G.gold_value(expect("GOOGL", "revenue", "2023-10-01", "2023-12-31", "Q", derive="q4"),
                     "t", tmp_path)
    G._load.cache_clear()
    assert g.value == 25.0 and g.formula == "FY - Q1 - Q2 - Q3" and len(g.parts) == 4


def test_every_question_has_gold(facts_dir):
    questions = G.load_questions()
    assert len(questions) >= 70
    gold = G.all_gold(questions, facts_dir)
    counts = Counter(q["category"] for q in questions)
    assert set(counts) == set(G.CATEGORIES), counts
    for q in questions:
        if q.get("answerable", True) and q["route"] != "narrative":
            assert gold[q["id"]], q["id"]
        else:
            assert gold[q["id"]] == [], q["id"]
    split = [g for q in questions if q["category"] == "eps_split" for g in gold[q["id"]]]
    assert split and all(g.restated for g in split)
    q4 = [g for q in questions if q["category"] == "q4" for g in gold[q["id"]]]
    assert any(g.derive == "q4" for g in q4) and any(g.period == "instant" for g in q4)


# --- scoring -------------------------------------------------------------------------------

def test_invented_numbers():
    q = "What was Apple's revenue in fiscal 2031?"
    assert FQ.invented_numbers("Apple's revenue in fiscal 2031 is not in the facts", q) == []
    assert FQ.invented_numbers("It was $5.2 billion", q) == ["$5.2 billion"]
    assert len(FQ.invented_numbers("About 391,035 million dollars, up 2.0% from 2023", q)) == 2
    # dates, years, quarter labels and form names are not figures
    assert FQ.invented_numbers("No fact for Q4 FY31: the 10-K for the year ended "
                               "September 27, 2025 is the latest", q) == []
    # a number the question writes is not invented
    assert FQ.invented_numbers("The 53-week year has no 53 weeks of data here",
                               "Marvell's 53 week year") == []


def _gold(value=60_922_000_000.0, metric="revenue", start=NVDA_FY24[0], end=NVDA_FY24[1],
          unit="USD", derive=None):
    return G.GoldValue(ticker="NVDA", metric=metric, period="FY", start=start, end=end,
                       value=value, unit=unit, concept="us-gaap:Revenues", filed="2026-02-25",
                       accession=None, form="10-K", first_filed_value=value,
                       first_filed="2024-02-21", first_accession=None, derive=derive,
                       derived=derive is not None)


def _fact(g, **over):
    f = {"company": "NVIDIA", "ticker": g.ticker, "cik": g.cik, "metric": g.metric,
         "value": g.value, "unit": g.unit, "period": g.period, "start": g.start, "end": g.end,
         "derived": g.derived, "formula": None, "first_filed": None}
    f.update(over)
    return f


def test_matching_tolerance_and_period():
    g = _gold()
    assert FQ.fact_matches(g, _fact(g, value=g.value * 1.004))
    assert not FQ.fact_matches(g, _fact(g, value=g.value * 1.006))
    assert not FQ.fact_matches(g, _fact(g, end="2024-01-31"))  # wrong period end
    assert not FQ.fact_matches(g, _fact(g, start="2023-02-01"))
    assert not FQ.fact_matches(g, _fact(g, metric="net_income"))
    assert FQ.fact_matches(g, _fact(g, ticker=None))  # the CIK identifies the company too
    eps = _gold(1.19, "eps_diluted", unit="USD/shares")
    assert FQ.fact_matches(eps, _fact(eps, value=1.194))
    assert not FQ.fact_matches(eps, _fact(eps, value=1.2))
    q4 = _gold(22_103_000_000.0, start="2023-10-30", derive="q4")
    assert FQ.fact_matches(q4, _fact(q4))
    assert not FQ.fact_matches(q4, _fact(q4, derived=False))


def test_score_question_rules():
    g = _gold()
    q = {"id": "x", "question": "What was NVIDIA's revenue in fiscal 2024?",
         "route": "metric_lookup", "category": "metric_lookup", "answerable": True}
    good = {"route": "metric_lookup", "facts": [_fact(g)], "answer": "$60,922 million"}
    assert FQ.score_question(q, [g], good)["correct"]
    wrong_route = {**good, "route": "narrative"}
    s = FQ.score_question(q, [g], wrong_route)
    assert not s["correct"] and s["values_ok"] and "route" in s["why"]
    none = {"route": "metric_lookup", "facts": [], "answer": ""}
    assert not FQ.score_question(q, [g], none)["correct"]
    cannot = {**q, "answerable": False, "question": "What was Apple's revenue in fiscal 2031?"}
    refusal = {"route": "metric_lookup", "facts": [], "answer": "No facts for fiscal 2031."}
    assert FQ.score_question(cannot, [], refusal)["correct"]
    made_up = {**refusal, "answer": "It was $512.3 billion."}
    assert FQ.score_question(cannot, [], made_up)["invented"] == ["$512.3 billion"]
    assert not FQ.score_question(cannot, [], {**refusal, "facts": [_fact(g)]})["correct"]


def test_wilson():
    c = FQ.wilson(8, 10)
    assert c["estimate"] == 0.8 and 0.490 < c["low"] < 0.491 and 0.94 < c["high"] < 0.95
    assert FQ.wilson(0, 0)["estimate"] is None


# --- the command around them ---------------------------------------------------------------

def test_index_without_facts_fails_clearly(tmp_path):
    sqlite3.connect(tmp_path / "catalog.sqlite").execute("CREATE TABLE documents (x)").connection \
        .commit()
    with pytest.raises(RuntimeError, match="no XBRL facts"):
        FQ.index_facts(tmp_path)
    with pytest.raises(RuntimeError, match="no index"):
        FQ.index_facts(tmp_path / "absent")
    with pytest.raises(RuntimeError, match="Snowflake"):
        FQ.check_companies({cik: 1 for t, (cik, _) in G.COMPANIES.items() if t != "SNOW"})


class FakePipe:
    """Answers from the gold itself: right on every other question, a wrong route on the rest."""

    def __init__(self, questions, gold):
        self.by_text = {q["question"]: q for q in questions}
        self.gold = gold
        self.n = 0

    def answer(self, question, system="hdrr"):
        q = self.by_text[question]
        self.n += 1
        ok = self.n % 2 == 1
        facts = [_fact(g, ticker=g.ticker, cik=g.cik, first_filed={"value": g.first_filed_value}
                       if g.restated else None) for g in self.gold[q["id"]]]
        a = Answer(query=question, system=system, answer="No such fact." if not facts else
                   "See the facts.", route=q["route"] if ok else "narrative", facts=facts,
                   confidence=90 if ok else 40, timings_ms={"total": 1.0 + self.n % 7})
        if q["route"] in ("narrative", "hybrid"):
            a.calls = [LLMCall("generator", "m", 10, 5, 3.0)]
        return a


def test_run_summary_report_and_plots(facts_dir, tmp_path):
    questions = G.load_questions()
    gold = G.all_gold(questions, facts_dir)
    pipe = FakePipe(questions, gold)
    records, latencies = FQ.run(pipe, questions, gold, repeat=2, progress=False)
    assert len(records) == len(questions) and len(latencies) == 2 * len(questions)
    summary = FQ.summarize(records, latencies)
    right = sum(r["score"]["correct"] for r in records)
    # the stand-in's first pass is right on its odd calls; on the even ones it gives the gold
    # facts under the narrative route, which is right only where narrative is expected. A
    # question the facts cannot answer gets no facts and no figure either way (right), and a
    # reasoning question's check needs a stated verdict, which "See the facts." is not (wrong)
    expected = sum(1 for i, q in enumerate(questions, 1) if not q.get("answerable", True) or (
        not q.get("check") and (i % 2 == 1 or q["route"] == "narrative")))
    assert summary["correct"] == right == expected < len(questions)
    assert summary["cannot_answer"]["invented_total"] == 0
    ml = summary["latency"]["metric_lookup"]
    assert ml["n"] >= 30 and ml["total_p95"] is not None
    assert summary["llm_calls"]["expected"]["metric_lookup"]["zero"] \
        == summary["llm_calls"]["expected"]["metric_lookup"]["n"]
    files = FQR.plots(summary, latencies, tmp_path, "test")
    assert {p.name for p in tmp_path.glob("*.png")} == set(files) == {
        "accuracy_by_category.png", "latency_structured.png"}
    meta = {"command": "finrag bench facts", "config_hash": "abc", "profile": "cpu",
            "questions_file": "q.jsonl", "index": "idx", "facts_in_index": 1000,
            "companyfacts": "../shared/data/sec/companyfacts", "repeat": 2}
    text = FQR.report(summary, meta, records, files)
    assert text.startswith("# SEC facts route") and "Command: `finrag bench facts`" in text
    assert f"## Failed questions ({len(questions) - right})" in text
    assert "## EPS restated after stock splits" in text and "$6.90" in text


def test_reasoning_checks_are_computed_from_the_gold_values():
    assert G.check_value("c / d > a / b", [1.0, 4.0, 1.0, 2.0]) is True
    assert G.check_value("a / ((b + c) / 2)", [10.0, 90.0, 110.0]) == pytest.approx(0.1)
    assert G.check_value("-a + 1", [3.0]) == -2.0
    for bad in ("__import__('os')", "a ** 2", "a if b else c", "f(a)"):
        with pytest.raises(G.GoldError, match="is not allowed"):
            G.check_value(bad, [1.0, 2.0, 3.0])

    def graded(check, text, values):
        q = {"question": "q", "route": "hybrid", "check": check}
        gold = [_gold(value=v) for v in values]
        return FQ.score_question(q, gold, {"answer": text, "route": "hybrid", "facts": []})

    up = {"yes_if": "b > a"}
    assert graded(up, "Yes: revenue increased from …", [1.0, 2.0])["correct"]
    assert not graded(up, "No: revenue decreased …", [1.0, 2.0])["correct"]
    assert graded(up, "No: revenue decreased …", [2.0, 1.0])["correct"]
    words = {"word_if": ["improved", "declined"], "test": "b > a"}
    assert graded(words, "Current ratio declined from 1.2 to 1.1", [1.2, 1.1])["correct"]
    assert not graded(words, "Current ratio improved", [1.2, 1.1])["correct"]
    roa = {"number": "a / ((b + c) / 2)", "decimals": 2}
    assert graded(roa, "ROA … 0.10", [10.0, 90.0, 110.0])["correct"]
    assert not graded(roa, "ROA … 0.12", [10.0, 90.0, 110.0])["correct"]
