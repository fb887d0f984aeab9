"""The facts routes on the shared SEC companyfacts files: store, calendars, answers, routes."""

import json
import re

import pytest

from tests.conftest import SHARED, need_shared

SEC = SHARED / "data" / "sec"
COMPANYFACTS = SEC / "companyfacts"


@pytest.fixture(scope="module")
def facts_index(tmp_path_factory, embedder):
    """An index holding only the five companies' companyfacts (no documents)."""
    from finrag.retrieval.indexer import Ingestor

    need_shared(COMPANYFACTS)
    folder = tmp_path_factory.mktemp("facts-index")
    ingestor = Ingestor(folder, embedder)
    report = ingestor.run([COMPANYFACTS], progress=False)
    counts = ingestor.facts.counts()
    ingestor.close()
    assert report.ok and len(report.facts_files) == 5, report.failed
    assert counts["companies"] == 5 and counts["facts"] > 80_000
    return folder


@pytest.fixture(scope="module")
def pipe(facts_index):
    from finrag.retrieval.systems.pipelines import Pipeline

    p = Pipeline.load(facts_index, profile="tiny")
    yield p
    p.close()


def value_of(answer, metric):
    [fact] = [f for f in answer.facts if f["metric"] == metric]
    return fact


# --- store and calendars ---------------------------------------------------------------------

def test_quarters_of_52_53_week_years_follow_the_day_count():
    from datetime import date

    from finrag.retrieval.routing.calendars import quarter_ending

    assert quarter_ending(date(2023, 12, 30), 2024, "09-27") == 1  # Apple Q1 FY2024
    assert quarter_ending(date(2022, 12, 31), 2023, "09-27") == 1  # a 14-week Q1
    assert quarter_ending(date(2024, 4, 28), 2025, "01-28") == 1  # NVIDIA Q1 FY2025
    assert quarter_ending(date(2024, 9, 28), 2024, "09-27") == 4


def test_facts_sit_on_each_companys_calendar(pipe):
    store = pipe.facts.store
    nvda = store.company("NVIDIA")
    [fy] = {(r.start, r.end, r.value) for r in store.lookup(
        nvda.cik, ["us-gaap:Revenues"], periods=("FY",), fiscal_years=[2024])}
    assert fy == ("2023-01-30", "2024-01-28", 60_922_000_000.0)
    apple = store.company("APPLE")
    q1 = store.lookup(apple.cik, ["us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"],
                      periods=("Q",), fiscal_years=[2024], fiscal_quarter=1)
    assert q1 and {r.end for r in q1} == {"2023-12-30"}


def test_reingest_is_idempotent_and_a_malformed_file_is_one_clear_line(facts_index, embedder,
                                                                        tmp_path):
    from finrag.retrieval.indexer import Ingestor

    ingestor = Ingestor(facts_index, embedder)
    try:
        before = ingestor.facts.counts()
        report = ingestor.run([COMPANYFACTS / "CIK0001045810.json"], progress=False)
        assert report.skipped and not report.facts_files and ingestor.facts.counts() == before
        bad = tmp_path / "CIK0000000001.json"
        bad.write_text('{"cik": 1, "facts": {"us-gaap": {"Revenues": {"units": {"USD": '
                       '[{"end": "2024-01-01"}]}}}}}')
        broken = tmp_path / "CIK0000000002.json"
        broken.write_text('{"cik": 2, "facts": ')
        report = ingestor.run([bad, broken], progress=False)
    finally:
        ingestor.close()
    messages = [m for _, m in report.failed]
    assert len(messages) == 2 and all("\n" not in m for m in messages)
    assert "malformed fact" in messages[0] and "not valid JSON" in messages[1]


# --- answers -----------------------------------------------------------------------------------

def test_metric_lookup_is_exact_cited_and_makes_no_llm_call(pipe):
    a = pipe.answer("What was NVIDIA's revenue in fiscal 2024?")
    assert a.route == "metric_lookup" and a.usage["llm_calls"] == 0
    f = value_of(a, "revenue")
    assert f["value"] == 60_922_000_000.0 and f["concept"] == "us-gaap:Revenues"
    assert f["end"] == "2024-01-28" and f["form"] == "10-K" and not f["derived"]
    assert f["url"] == ("https://www.sec.gov/Archives/edgar/data/1045810/000104581024000029/"
                        "0001045810-24-000029-index.htm")
    assert "$60,922 million" in a.answer and a.confidence == 95
    assert a.citations[0].url == f["url"]


def test_fiscal_year_end_date_picks_the_same_year(pipe):
    a = pipe.answer("What was NVIDIA's revenue for the fiscal year ended January 28, 2024?")
    assert value_of(a, "revenue")["value"] == 60_922_000_000.0


def test_q4_is_derived_and_labelled(pipe):
    a = pipe.answer("What was Apple's revenue in the fourth quarter of fiscal 2024?")
    f = value_of(a, "revenue")
    assert f["derived"] and f["fiscal_quarter"] == 4 and f["end"] == "2024-09-28"
    assert f["value"] == 391_035_000_000.0 - 296_105_000_000.0
    assert "derived" in a.answer and a.confidence == 85


def test_a_balance_in_q4_is_the_year_end_balance(pipe):
    a = pipe.answer("Apple total assets at the end of Q4 FY2023")
    f = value_of(a, "total_assets")
    assert not f["derived"] and f["end"] == "2023-09-30" and f["period"] == "instant"


def test_restated_eps_answers_with_the_latest_filing_and_keeps_the_first(pipe):
    a = pipe.answer("NVIDIA diluted EPS in fiscal 2021")
    f = value_of(a, "eps_diluted")
    assert f["first_filed"]["value"] == 6.90 and f["value"] < 2.0  # 4:1 split in 2021
    assert "restated" in a.answer


def _revenue(value: float, source: str, cik: str = "0000000042") -> "Fact":
    from finrag.retrieval.facts.model import Fact

    return Fact(cik=cik, concept="us-gaap:Revenues", unit="USD", start="2023-01-01",
                end="2023-12-31", value=value, form="10-K", source=source)


def test_facts_keep_their_source_and_a_company_keeps_its_first_record():
    """Two filings stating the same figure are both stored (each under its own source);
    removing one leaves the other's; a later file under the same CIK neither renames nor
    re-calendars the company stored first."""
    import sqlite3

    from finrag.retrieval.facts.store import FactStore
    from finrag.retrieval.routing.companies import Company

    store = FactStore(sqlite3.connect(":memory:"))
    pines = Company(key="PINES", name="Quiet Pines", cik="42", fiscal_year_end="12-31")
    assert store.add("ixbrl:PINES_2023_10K", "a", pines, [_revenue(5.0, "ixbrl:PINES_2023_10K")]) == 1
    assert store.add("ixbrl:PINES_2024_10K", "b", pines, [_revenue(5.0, "ixbrl:PINES_2024_10K")]) == 1
    rows = store.lookup("0000000042", ["us-gaap:Revenues"], periods=("FY",))
    assert sorted(r.source for r in rows) == ["ixbrl:PINES_2023_10K", "ixbrl:PINES_2024_10K"]
    assert store.remove_sources(["ixbrl:PINES_2023_10K"]) == 1
    [left] = store.lookup("0000000042", ["us-gaap:Revenues"], periods=("FY",))
    assert left.source == "ixbrl:PINES_2024_10K"
    # another name and calendar under the same CIK: the first record stands, and the new
    # file's facts are placed on its calendar (a June year end would name this year 2024)
    evil = Company(key="EVIL", name="Evil Holdings", cik="42", fiscal_year_end="06-30")
    store.add("ixbrl:EVIL_2024_10K", "c", evil, [_revenue(9.0, "ixbrl:EVIL_2024_10K")])
    [company] = store.companies()
    assert (company.key, company.name, company.fiscal_year_end) == ("PINES", "Quiet Pines",
                                                                    "12-31")
    assert store.recorded_company("42") == company
    evil_rows = [r for r in store.lookup("0000000042", ["us-gaap:Revenues"], periods=("FY",))
                 if r.source == "ixbrl:EVIL_2024_10K"]
    assert [(r.value, r.fiscal_year) for r in evil_rows] == [(9.0, 2023)]


def test_a_facts_table_of_before_is_rebuilt_with_the_source_in_its_key(tmp_path):
    import sqlite3

    from finrag.retrieval.facts.store import FactStore
    from finrag.retrieval.routing.companies import Company

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE facts (id INTEGER PRIMARY KEY, cik TEXT NOT NULL, concept TEXT NOT NULL,
            unit TEXT NOT NULL, start TEXT NOT NULL, end TEXT NOT NULL, value REAL NOT NULL,
            decimals INTEGER, form TEXT NOT NULL, accession TEXT NOT NULL, filed TEXT NOT NULL,
            filing_fy INTEGER, filing_fp TEXT, dimensions TEXT NOT NULL, period TEXT NOT NULL,
            fiscal_year INTEGER, fiscal_quarter INTEGER, source TEXT NOT NULL,
            UNIQUE (cik, concept, unit, start, end, accession, dimensions));
        INSERT INTO facts VALUES (7, '0000000042', 'us-gaap:Revenues', 'USD', '2023-01-01',
            '2023-12-31', 5.0, NULL, '10-K', '', '', NULL, NULL, '', 'FY', 2023, NULL,
            'ixbrl:PINES_2023_10K');""")
    db.commit()
    store = FactStore(db)
    pines = Company(key="PINES", name="Quiet Pines", cik="42", fiscal_year_end="12-31")
    assert store.add("ixbrl:PINES_2024_10K", "b", pines, [_revenue(5.0, "ixbrl:PINES_2024_10K")]) == 1
    assert [r[0] for r in db.execute("SELECT id FROM facts ORDER BY id")][0] == 7
    assert db.execute("SELECT count(*) FROM facts").fetchone()[0] == 2
    assert "facts_lookup" in {r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type='index'")}
    assert not db.execute("SELECT 1 FROM sqlite_master WHERE name='facts_before_sources'"
                          ).fetchone()


def test_segment_facts_never_answer(tmp_path, embedder):
    from finrag.retrieval.facts.answer import FactsAnswerer
    from finrag.retrieval.facts.classify import classify
    from finrag.retrieval.facts.concepts import default_concepts
    from finrag.retrieval.indexer import Ingestor

    need_shared(SEC / "filings")
    ingestor = Ingestor(tmp_path / "idx", embedder)
    try:
        from finrag.retrieval.facts.load import load_inline

        load_inline(ingestor.facts, SEC / "filings" / "nvda" / "nvda-10-k-2025-02-26.html",
                    "nvda-10-k-2025-02-26", "sha", ingestor.companies)
        rows = ingestor.facts.lookup("0001045810", ["us-gaap:Revenues"], periods=("FY",),
                                     fiscal_years=[2025], consolidated=False)
        assert any(r.dimensions for r in rows) and any(not r.dimensions for r in rows)
        answerer = FactsAnswerer(ingestor.facts, default_concepts())
        result = answerer.answer(classify("NVIDIA revenue fiscal 2025", default_concepts()),
                                 [ingestor.facts.company("NVIDIA")])
    finally:
        ingestor.close()
    assert [v.value for v in result.values] == [130_497_000_000.0]


def test_timeseries_comparison_and_statement(pipe):
    a = pipe.answer("NVIDIA revenue from fiscal 2021 to 2025")
    assert a.route == "timeseries"
    assert [f["fiscal_year"] for f in a.facts] == [2021, 2022, 2023, 2024, 2025]
    assert "Change from FY2021 to FY2025" in a.answer
    a = pipe.answer("Compare Apple's and NVIDIA's net income in fiscal 2024")
    assert {f["ticker"] for f in a.facts} == {"AAPL", "NVDA"}
    assert {f["end"] for f in a.facts} == {"2024-09-28", "2024-01-28"}
    assert "own fiscal calendar" in a.answer
    a = pipe.answer("Show me Snowflake's cash flow statement for fiscal 2024")
    assert a.route == "full_statement"
    metrics = [f["metric"] for f in a.facts]
    assert {"operating_cash_flow", "investing_cash_flow", "financing_cash_flow"} <= set(metrics)
    assert metrics.index("operating_cash_flow") < metrics.index("financing_cash_flow")


def test_what_the_facts_do_not_hold_is_said_without_a_number(pipe):
    for question in ("What was Snowflake's revenue in fiscal 2012?",
                     "What were Snowflake's inventories at the end of fiscal 2024?"):
        a = pipe.answer(question)
        assert not a.facts and "Not in the XBRL facts" in a.answer
        assert not [t for t in a.answer.replace("2012", "").replace("2024", "").split()
                    if any(ch.isdigit() for ch in t)], a.answer
        assert a.usage["llm_calls"] == 0


def test_routes_from_rules():
    from finrag.retrieval.facts.classify import classify
    from finrag.retrieval.facts.concepts import default_concepts

    c = default_concepts()
    cases = {
        "What was NVIDIA's revenue in fiscal 2024?": "metric_lookup",
        "Show me Apple's balance sheet for FY2023": "full_statement",
        "Apple net income over the last three years": "timeseries",
        "What was NVIDIA's revenue in fiscal 2025 and what drove the growth?": "hybrid",
        "What are Meta's key risk factors?": "narrative",
        "Using the cash flow statement, what was Apple's capex in FY2022?": "metric_lookup",
        "How much did Apple spend buying back its own stock in FY2023?": "metric_lookup",
        "How much did Apple pay its suppliers in FY2023?": "undecided",
    }
    assert {q: classify(q, c).route for q in cases} == cases
    assert classify("Apple net income over the last three years", c).last_n == (3, "years")
    # "X change as of FY" is one year's change; "how did X change from A to B" is a series
    [m] = classify("What drove operating margin change as of FY2022 for 3M?", c).metrics
    assert m.key == "operating_margin_change" and m.formula == "change(operating_margin)"
    q = classify("How did Alphabet's capital expenditures change from 2021 to 2024?", c)
    assert q.route == "timeseries" and [m.key for m in q.metrics] == ["capex"]


def test_the_concept_table_is_extendable(tmp_path):
    from finrag.retrieval.facts.concepts import ConceptTable

    mine = tmp_path / "mine.yaml"
    mine.write_text("metrics:\n  buybacks_net:\n    phrases: [net buybacks]\n"
                    "    formula: share_repurchases - revenue\n"
                    "  revenue:\n    phrases: [takings]\n")
    table = ConceptTable.load(mine)
    assert len(table) >= 45 and [m.metric.key for m in table.find("net buybacks")] == ["buybacks_net"]
    assert [m.metric.key for m in table.find("the takings")] == ["revenue"]
    assert table["revenue"].concepts[0] == "us-gaap:Revenues"  # fields not given are kept
    bad = tmp_path / "bad.yaml"
    bad.write_text("metrics:\n  x:\n    formula: nothing - revenue\n")
    with pytest.raises(ValueError, match="names a metric the table does not have"):
        ConceptTable.load(bad)
    assert len(ConceptTable.load()) >= 30


def test_contradictions_between_facts_and_text():
    from finrag.retrieval.facts.answer import FactValue
    from finrag.retrieval.facts.checks import confidence, contradictions
    from finrag.retrieval.facts.concepts import default_concepts

    v = FactValue("NVIDIA", "NVDA", "0001045810", "revenue", "Revenue", "us-gaap:Revenues",
                  130_497_000_000.0, "USD", "FY", 2025, None, "2024-01-29", "2025-01-26", "10-K",
                  None, "2025-02-26", None)
    text = [("d", 3, "Revenue for fiscal year 2025 was $130.5 billion, up 114%."),
            ("d", 4, "Revenue for fiscal year 2025 was $113.0 billion. Data Center revenue "
                     "for fiscal year 2025 was $115.2 billion.")]
    found = contradictions([v], text, default_concepts())
    assert [(c["page"], c["text_value"]) for c in found] == [(4, 113.0e9)]  # not Data Center's
    assert found[0]["severity"] == "high"
    assert confidence([v], 1, 0, found) == 70 and confidence([v], 1, 0, []) == 95
    assert confidence([v], 2, 1, []) == 48 and confidence([], 1, 1, [], routed=False) == 30


def test_a_metric_lookup_loads_no_llm(pipe):
    """Its speed is benchmarks/facts' to measure; here, that no LLM is loaded on this path (a
    pipeline of its own, so another test's engines do not count)."""
    from finrag.retrieval.systems.pipelines import Pipeline

    fresh = Pipeline(pipe.index, pipe.embedder, pipe.profile, light=pipe.light, meter=pipe.meter)
    a = fresh.answer("Alphabet net income FY2023")
    assert a.usage["llm_calls"] == 0 and fresh._engines == {}
    assert json.loads(json.dumps(a.to_dict()))["route"] == "metric_lookup" and a.facts


def test_a_quarter_named_by_its_end_date_on_a_52_53_week_calendar(pipe):
    a = pipe.answer("Marvell R&D spend in the quarter ended August 3, 2024")
    f = value_of(a, "research_and_development")
    assert (f["fiscal_year"], f["fiscal_quarter"], f["end"]) == (2025, 2, "2024-08-03")


def test_ratios_state_their_formula(pipe):
    a = pipe.answer("Snowflake's operating margin in fiscal 2024")
    f = value_of(a, "operating_margin")
    assert f["derived"] and f["unit"] == "pure" and f["formula"].startswith("operating_income / revenue")
    assert round(f["value"], 3) == -0.39 and "-39.0%" in a.answer


def test_user_metrics_come_from_finrag_concepts(tmp_path, monkeypatch):
    from finrag.retrieval.facts import concepts

    mine = tmp_path / "mine.yaml"
    mine.write_text("metrics:\n  opex_ratio:\n    phrases: [opex ratio]\n"
                    "    formula: operating_expenses / revenue\n    kind: ratio\n")
    monkeypatch.setenv("FINRAG_CONCEPTS", str(mine))
    concepts.default_concepts.cache_clear()
    try:
        assert [m.metric.key for m in concepts.default_concepts().find("the opex ratio")] == [
            "opex_ratio"]
    finally:
        concepts.default_concepts.cache_clear()


# --- reasoning over the numbers: the question's own definitions, directions, signs -----------

def _fy(pipe, company: str, key: str, year: int) -> float:
    facts = pipe.facts
    [found] = [c for c in facts.store.companies() if c.name == company]
    v, why = facts.value(found, facts.concepts[key], year, None)
    assert v is not None, why
    return v.value


def test_a_ratio_the_question_defines_is_computed_by_its_definition(pipe):
    a = pipe.answer("What is NVIDIA's FY2024 return on assets? ROA is defined as: FY2024 net "
                    "income / (average total assets between FY2023 and FY2024). Round your answer "
                    "to two decimal places.")
    assert a.route == "metric_lookup" and a.usage["llm_calls"] == 0
    want = _fy(pipe, "NVIDIA", "net_income", 2024) / (
        (_fy(pipe, "NVIDIA", "total_assets", 2023) + _fy(pipe, "NVIDIA", "total_assets", 2024)) / 2)
    [f] = a.facts
    assert f["value"] == pytest.approx(want, rel=1e-12) and f["derived"]
    assert a.answer.startswith("As the question defines it: ROA = FY2024 net income / (average "
                               "total assets between FY2023 and FY2024).")
    assert f"{want:.2f}" in a.answer
    # each input is cited beside its value
    assert f["formula"].count("[10-K filed ") == 3


@pytest.mark.slow
def test_a_direction_is_read_from_the_numbers_by_the_metrics_better_side(pipe):
    before = _fy(pipe, "Apple", "operating_income", 2022) / _fy(pipe, "Apple", "revenue", 2022)
    after = _fy(pipe, "Apple", "operating_income", 2023) / _fy(pipe, "Apple", "revenue", 2023)
    assert before != after
    a = pipe.answer("Does Apple have an improving operating margin as of FY2023?")
    first = a.answer.splitlines()[0]
    assert first.startswith("Yes: " if after > before else "No: "), first
    assert ("improved" if after > before else "declined") in first
    assert f"{before * 100:.1f}% in FY2022" in first and f"{after * 100:.1f}% in FY2023" in first
    # "improved or declined": the direction, no yes/no
    ratios = [_fy(pipe, "NVIDIA", "current_assets", y) / _fy(pipe, "NVIDIA", "current_liabilities", y)
              for y in (2023, 2024)]
    a = pipe.answer("Has NVIDIA's current ratio improved or declined between FY2023 and FY2024?")
    first = a.answer.splitlines()[0]
    assert first.startswith("Current ratio " + ("improved" if ratios[1] > ratios[0] else "declined"))
    assert f"{ratios[0]:.2f} in FY2023" in first and f"{ratios[1]:.2f} in FY2024" in first


def test_lower_is_better_where_the_table_says_so():
    from finrag.retrieval.facts.concepts import default_concepts
    from finrag.retrieval.facts.trends import read_trend, verdict

    class V:
        def __init__(self, value, year):
            self.value, self.fiscal_year, self.unit, self.period = value, year, "pure", "FY"
            self.fiscal_quarter = None

    dso = default_concepts()["days_sales_outstanding"]
    ask = read_trend("Does X have an improving DSO as of FY2023?")
    said = verdict(ask, dso, [V(50.0, 2022), V(45.0, 2023)], lambda v: f"{v.value:.1f}")
    assert said.startswith("Yes: days sales outstanding improved from 50.0 in FY2022 to 45.0")
    assert "lower is better" in said
    ask = read_trend("Did X's DSO increase in FY2023?")
    said = verdict(ask, dso, [V(50.0, 2022), V(45.0, 2023)], lambda v: f"{v.value:.1f}")
    assert said.startswith("No: days sales outstanding decreased")


@pytest.mark.slow
def test_a_sign_and_stability_are_judged_with_the_rule_stated(pipe):
    wc = _fy(pipe, "Apple", "current_assets", 2023) - _fy(pipe, "Apple", "current_liabilities", 2023)
    a = pipe.answer("Does Apple have positive working capital based on FY2023 data?")
    first = a.answer.splitlines()[0]
    assert first.startswith("Yes: " if wc > 0 else "No: ")
    assert ("positive" if wc > 0 else "negative") in first
    revenue = [_fy(pipe, "Apple", "revenue", y) for y in (2021, 2022, 2023)]
    moves = [abs(b - a) / a * 100 for a, b in zip(revenue, revenue[1:])]
    a = pipe.answer("Is Apple's revenue stable between FY2021 and FY2023, not fluctuating more "
                    "than roughly 10% each year?")
    first = a.answer.splitlines()[0]
    assert first.startswith("Yes: " if max(moves) <= 10 else "No: "), first
    assert f"{max(moves):.1f} %" in first and "the tolerance the question states" in first


def test_a_missing_period_is_said_and_nothing_is_guessed(pipe):
    a = pipe.answer("Did Snowflake's revenue grow in FY2012?")
    assert "no revenue for FY2011" in a.facts_note and "no revenue for FY2012" in a.facts_note
    assert not re.match(r"(?:Yes|No)\b", a.answer) and not a.facts
    # one of the two periods held: the direction cannot be told, and the answer says which
    from finrag.retrieval.facts.trends import read_trend, verdict

    class V:
        value, fiscal_year, fiscal_quarter, unit, period = 5.0, 2023, None, "USD", "FY"
    said = verdict(read_trend("Did X's revenue grow in FY2023?"),
                   pipe.facts.concepts["revenue"], [V()], str)
    assert said.startswith("The direction cannot be told: only FY2023 of revenue")


def test_yes_no_questions_of_other_kinds_get_no_direction():
    from finrag.retrieval.facts.trends import read_trend

    assert read_trend("Were there any events that increased Pfizer's net income in 2019?") is None
    q = "Did Ulta's wages as a percent of net sales increase in FY2023?"
    at = q.index("net sales")
    assert read_trend(q, (at, at + len("net sales"))) is None
    assert read_trend("Is growth in JnJ's EPS expected to accelerate in FY2023?") is None
    assert read_trend("What drove revenue growth in FY2022?") is None


@pytest.mark.slow
def test_judgements_compare_the_computed_measure_with_a_stated_rule(pipe):
    from finrag.retrieval.facts.trends import rules_of_thumb

    capex = _fy(pipe, "Apple", "capex", 2023) / _fy(pipe, "Apple", "revenue", 2023)
    a = pipe.answer("Is Apple a capital-intensive business based on FY2023 data?")
    first = a.answer.splitlines()[0]
    assert a.route == "hybrid" and first.startswith("Yes: " if capex > 0.10 else "No: "), first
    assert f"{capex * 100:.1f}% in FY2023" in first and "above 10.0%" in first
    rule = rules_of_thumb()["judgements"]["capital_intensive"]
    assert rule["source"] in first and rule["says"] in first

    cash, securities, receivables, liabilities = (
        _fy(pipe, "NVIDIA", k, 2024) for k in ("cash", "marketable_securities",
                                               "accounts_receivable", "current_liabilities"))
    quick = (cash + securities + receivables) / liabilities
    a = pipe.answer("Does NVIDIA have a reasonably healthy liquidity profile based on its quick "
                    "ratio for FY2024?")
    first = a.answer.splitlines()[0]
    assert first.startswith("Yes: " if quick >= 1 else "No: ") and f"{quick:.2f} in FY2024" in first

    growth = _fy(pipe, "Snowflake", "revenue", 2024) / _fy(pipe, "Snowflake", "revenue", 2023) - 1
    a = pipe.answer("Are Snowflake's FY2024 financials that of a high growth company?")
    first = a.answer.splitlines()[0]
    assert first.startswith("Yes: " if growth > 0.20 else "No: ") and "OECD" in first
    assert f"{growth * 100:.1f}%" in first


def test_every_rule_of_thumb_states_its_rule_and_source():
    from finrag.retrieval.facts.concepts import default_concepts
    from finrag.retrieval.facts.trends import rules_of_thumb

    rules = rules_of_thumb()
    assert rules["stable"]["source"]
    concepts = default_concepts()
    for name, rule in rules["judgements"].items():
        assert rule["says"] and rule["source"], name
        re.compile(rule["asks"])
        for key in rule["metrics"]:
            base = key.removesuffix("_pct_change")
            assert key in concepts.metrics or base in concepts.metrics, (name, key)
            assert rule["yes_when"][key]["op"] in (">=", ">", "<=", "<"), (name, key)


def test_a_metric_whose_line_the_company_never_reports_is_said_not_to_apply(pipe):
    facts = pipe.facts
    [snow] = [c for c in facts.store.companies() if c.name == "Snowflake"]
    assert facts._years(snow, facts.concepts["inventory"]) == []  # no inventory line, ever
    a = pipe.answer("Roughly how many times has Snowflake sold its inventory in FY2024? "
                    "Calculate inventory turnover ratio for the FY2024; if conventional inventory "
                    "management is not meaningful for the company then state that and explain why.")
    years = facts.store.fiscal_years(snow.cik)
    assert a.answer.startswith(
        f"Inventory turnover is not a useful metric for Snowflake on its own statements: they "
        f"report no inventories line in any year the facts hold (FY{years[0]}–FY{years[-1]})")
    # without the question's "if it is not meaningful" clause nothing is claimed about it
    b = pipe.answer("Roughly how many times has Snowflake sold its inventory in FY2024?")
    assert "not a useful metric" not in b.answer


def test_a_definition_that_does_not_read_is_said_and_nothing_is_computed(pipe):
    a = pipe.answer("What is NVIDIA's FY2024 staff productivity? Staff productivity is defined "
                    "as: FY2024 revenue / FY2024 headcount.")
    assert a.facts == [] and a.route == "narrative"
    assert "'headcount' is not a metric of the table" in a.facts_note


# --- metrics computed over several years, and from lines derived before any verdict ----------

_LINES = {  # concept -> {fiscal year: value}; a duration unless the concept is a balance
    "Revenues": {2017: 1_000e6, 2018: 1_100e6, 2019: 1_210e6, 2020: 2_000e6, 2021: 3_000e6,
                 2022: 4_000e6},
    "PaymentsToAcquirePropertyPlantAndEquipment": {2019: 121e6, 2020: 300e6, 2021: 600e6},
    "NetIncomeLoss": {2017: -50e6, 2018: 100e6, 2019: 121e6},
    "CostOfRevenue": {2020: 1_200e6, 2021: 1_500e6, 2022: 2_400e6},
    "OperatingIncomeLoss": {2022: 600e6},
    "DepreciationDepletionAndAmortization": {2022: 200e6},
}
_BALANCES = {"AccountsPayableCurrent": {2021: 300e6, 2022: 500e6},
             "InventoryNet": {2021: 150e6, 2022: 250e6}}


@pytest.fixture()
def pines():
    """A small in-memory facts store: one company on a calendar year, each year's lines filed
    in the next February's 10-K."""
    import sqlite3

    from finrag.retrieval.facts.answer import FactsAnswerer
    from finrag.retrieval.facts.concepts import default_concepts
    from finrag.retrieval.facts.model import Fact
    from finrag.retrieval.facts.store import FactStore
    from finrag.retrieval.routing.companies import Company

    def fact(concept, year, value, instant=False):
        return Fact(cik="0000000042", concept=f"us-gaap:{concept}", unit="USD",
                    start=None if instant else f"{year}-01-01", end=f"{year}-12-31", value=value,
                    form="10-K", accession=f"0000000042-{year - 1999:02d}-000001",
                    filed=f"{year + 1}-02-15", source="companyfacts:0000000042")

    facts = [fact(c, y, v) for c, years in _LINES.items() for y, v in years.items()]
    facts += [fact(c, y, v, instant=True) for c, years in _BALANCES.items()
              for y, v in years.items()]
    store = FactStore(sqlite3.connect(":memory:"))
    company = Company(key="PINES", name="Quiet Pines", cik="42", fiscal_year_end="12-31")
    store.add("companyfacts:0000000042", "sha", company, facts)
    return FactsAnswerer(store, default_concepts()), store.company("PINES")


def _ask(pines, question):
    from finrag.retrieval.facts.classify import classify

    answerer, company = pines
    return answerer.answer(classify(question, answerer.concepts), [company])


def test_a_multi_year_average_of_a_share_is_the_mean_of_each_years_ratio(pines):
    r = _ask(pines, "What is the FY2019–FY2021 3-year average of capex as a % of revenue for "
                    "Quiet Pines?")
    [v] = r.values
    assert v.metric == "capex_to_revenue" and v.unit == "pure" and v.derived
    # 10%, 15% and 20% a year: their mean, not the summed lines' ratio (1,021 / 6,210 = 16.4%)
    assert v.value == pytest.approx((0.10 + 0.15 + 0.20) / 3, abs=1e-15)
    assert (v.first_year, v.fiscal_year, v.period_label) == (2019, 2021, "FY2019–FY2021")
    assert ("3-year average capital expenditures as a share of revenue, FY2019–FY2021: 15.0%"
            in r.text)
    assert "the mean of each year's ratio (capex / revenue in each year)" in r.text
    assert ("FY2019 = 10.0% (capex FY2019 = $121 million [10-K filed 2020-02-15]; revenue FY2019 "
            "= $1,210 million [10-K filed 2020-02-15])") in r.text
    assert "FY2021 = 20.0% (capex FY2021 = $600 million [10-K filed 2022-02-15]" in r.text


def test_a_multi_year_average_margin_named_by_its_span_and_last_year(pines):
    for question in ("What is Quiet Pines's 3 year average net profit margin FY2017-FY2019?",
                     "What is Quiet Pines's 3 year average net profit margin as of FY2019?"):
        r = _ask(pines, question)
        [v] = r.values
        assert v.metric == "net_margin" and v.first_year == 2017, question
        assert v.value == pytest.approx((-0.05 + 100 / 1_100 + 0.10) / 3, abs=1e-15)
        assert "the mean of each year's ratio (net_income / revenue in each year)" in r.text
        assert ("FY2017 = -5.0% (net_income FY2017 = -$50.0 million [10-K filed 2018-02-15]"
                in r.text)
    # a year missing: no mean of the others, and the gap is said
    r = _ask(pines, "What is Quiet Pines's 3 year average net profit margin FY2019-FY2021?")
    assert not r.values and "no net profit margin for FY2020" in r.text


def test_a_cagr_compounds_from_the_first_to_the_last_year(pines):
    r = _ask(pines, "What is the 2-year revenue CAGR from FY2017 to FY2019 for Quiet Pines?")
    [v] = r.values
    assert v.metric == "revenue_cagr" and v.unit == "pure" and v.derived
    assert v.value == pytest.approx(0.10, abs=1e-12)  # (1,210 / 1,000)^(1/2) - 1
    assert (v.first_year, v.fiscal_year, v.end) == (2017, 2019, "2019-12-31")
    assert "2-year compound annual growth rate of revenue, FY2017–FY2019: 10.0%" in r.text
    assert ("(end / start)^(1/years) − 1, years = FY2019 − FY2017 = 2: revenue FY2017 = $1,000 "
            "million [10-K filed 2018-02-15]; revenue FY2019 = $1,210 million [10-K filed "
            "2020-02-15]") in r.text
    # the years are the named endpoints' distance; a span and one year count back from it
    r = _ask(pines, "What is Quiet Pines's three-year compound annual growth rate of revenue as "
                    "of FY2020?")
    [v] = r.values
    assert v.value == pytest.approx(2 ** (1 / 3) - 1, abs=1e-12) and v.first_year == 2017
    assert "years = FY2020 − FY2017 = 3" in r.text


def test_a_cagr_without_two_positive_endpoints_is_refused_saying_why(pines):
    r = _ask(pines, "What is the revenue CAGR from FY2015 to FY2019 for Quiet Pines?")
    assert not r.values
    assert r.missing == ["Quiet Pines: no 4-year compound annual growth rate of revenue "
                         "(FY2015–FY2019): no revenue for FY2015"]
    r = _ask(pines, "What is Quiet Pines's 2-year CAGR of net income from FY2017 to FY2019?")
    assert not r.values and not r.missing
    assert r.text == ("Quiet Pines: a 2-year compound annual growth rate of net income "
                      "(FY2017–FY2019) cannot be computed: it is defined only between two "
                      "positive values, and net income FY2017 = -$50.0 million [10-K filed "
                      "2018-02-15]; net income FY2019 = $121 million [10-K filed 2020-02-15].")


def test_questions_that_ask_no_mean_or_cagr_are_answered_as_before(pines):
    from finrag.retrieval.facts.classify import classify

    r = _ask(pines, "What was Quiet Pines's revenue in FY2019?")
    [v] = r.values
    assert (v.metric, v.value, v.first_year) == ("revenue", 1_210e6, None)
    assert r.text.startswith("Quiet Pines revenue, FY2019 (year ended 2019-12-31): $1,210 million")
    r = _ask(pines, "Quiet Pines revenue from FY2017 to FY2019")
    assert [v.value for v in r.values] == [1_000e6, 1_100e6, 1_210e6]
    assert "Change from FY2017 to FY2019: +$210 million (+21.0%)." in r.text
    assert "mean" not in r.text and "compound" not in r.text
    # year-over-year growth is one year's change, not a CAGR
    q = classify("What is the FY2018 - FY2019 revenue growth rate for Quiet Pines?",
                 pines[0].concepts)
    assert [m.key for m in q.metrics] == ["revenue_pct_change"] and not q.cagr
    # two lines named side by side stay two metrics
    q = classify("What were Quiet Pines's capex and revenue in FY2019?", pines[0].concepts)
    assert [m.key for m in q.metrics] == ["capex", "revenue"] and not q.average


def test_a_line_one_subtraction_away_is_not_called_unreported(pines):
    """Quiet Pines files no gross profit line, but revenue and cost of revenue: gross margin
    applies to it (and any metric with concepts and a formula is treated alike)."""
    from finrag.retrieval.facts.concepts import Metric

    answerer, company = pines
    concepts = answerer.concepts
    assert answerer._years(company, concepts["gross_profit"]) == []
    assert answerer._unsupported_metric(company, concepts["gross_margin"]) is None
    r = _ask(pines, "What drove gross margin change as of FY2030 for Quiet Pines? If gross "
                    "margin is not a useful metric for a company like this, then please state "
                    "that and explain why.")
    assert not r.verdicts and "not a useful metric" not in r.text
    assert "no year-over-year change in gross margin for FY2030" in r.text
    r = _ask(pines, "What is Quiet Pines's FY2021 gross margin?")
    assert r.values[0].value == pytest.approx(0.5)  # (3,000 - 1,500) / 3,000
    # a line neither reported nor derivable still is: no SG&A, no S&M or G&A to add up
    said = answerer._unsupported_metric(company, Metric("sga_ratio", "SG&A ratio",
                                                        formula="sga / revenue", kind="ratio"))
    assert said.startswith("SG&A ratio is not a useful metric for Quiet Pines on its own "
                           "statements: they report no selling, general and administrative "
                           "expense line in any year the facts hold (FY2017–FY2022)")


def test_ebitda_margin_and_dpo_are_computed_by_their_stated_definitions(pines):
    from finrag.retrieval.facts.concepts import default_concepts

    r = _ask(pines, "What is Quiet Pines's FY2022 EBITDA margin?")
    [v] = r.values
    assert (v.metric, v.value) == ("ebitda_margin", pytest.approx(0.2))  # (600 + 200) / 4,000
    assert r.route == "metric_lookup" and "ebitda / revenue: ebitda FY2022 = $800 million" in r.text
    for phrase in ("days payable outstanding", "DPO"):
        r = _ask(pines, f"What is Quiet Pines's FY2022 {phrase}?")
        [v] = r.values
        # 365 * average payables / purchases (cost of revenue + the change in inventory)
        assert v.metric == "days_payable_outstanding" and r.route == "metric_lookup"
        assert v.value == pytest.approx(365 * 400e6 / 2_500e6, abs=1e-9) and "58.40" in r.text
    concepts = default_concepts()
    assert concepts["ebitda"].formula == "operating_income + depreciation_amortization"
    assert concepts["depreciation_amortization"].statement == "cash_flow"
    for key in ("ebitda", "ebitda_margin", "days_payable_outstanding", "days_sales_outstanding",
                "days_inventory_outstanding", "cash_conversion_cycle"):
        assert concepts[key].source, key
    assert "unadjusted" in concepts["ebitda"].label.lower()
