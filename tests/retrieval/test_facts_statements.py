"""Facts read from the statement tables of a PDF filing (3M's 2018 10-K from FinanceBench)."""

from __future__ import annotations

import pytest

from finrag.retrieval.facts.formula import FormulaError, evaluate, names, parse
from finrag.retrieval.facts.statements import parse_amount, statement_kind, year_columns
from finrag.retrieval.facts.units import in_requested_unit, read_request
from tests.conftest import FINANCEBENCH, need_shared

DOC = "3M_2018_10K"


@pytest.fixture(scope="module")
def mmm(tmp_path_factory, embedder):
    """An index of one FinanceBench PDF; ingest reads its statements into the facts store."""
    from finrag.retrieval.indexer import Ingestor

    pdf = need_shared(FINANCEBENCH / "pdfs" / f"{DOC}.pdf")
    folder = tmp_path_factory.mktemp("mmm-index")
    ingestor = Ingestor(folder, embedder)
    report = ingestor.run([pdf], progress=False)
    assert report.added == [DOC] and report.facts_added > 0 and report.facts_files == [DOC]
    yield ingestor
    ingestor.close()


@pytest.fixture(scope="module")
def answerer(mmm):
    from finrag.retrieval.facts.answer import FactsAnswerer
    from finrag.retrieval.facts.concepts import default_concepts

    return FactsAnswerer(mmm.facts, default_concepts())


def _row(catalog, page: int, label: str, year: str) -> float:
    for table in catalog.tables(DOC, page):
        for row in table["rows"]:
            if row.get("label") == label:
                return parse_amount(row[year]) * 1e6
    raise AssertionError(f"no {label!r} on page {page}")


def test_capex_from_the_cash_flow_statement(mmm, answerer):
    from finrag.retrieval.facts.concepts import default_concepts

    company = mmm.facts.company("3M")
    assert company is not None and company.cik == "KEY:3M"
    v, why = answerer.value(company, default_concepts()["capex"], 2018, None)
    assert why == "" and v.value == pytest.approx(1.577e9) and v.unit == "USD"
    assert v.concept == "table:capex" and v.period == "FY" and v.end == "2018-12-31"
    assert (v.doc_id, v.page) == (DOC, 60) and v.url is None and v.form == "10-K"
    assert {"doc_id", "page", "value", "concept", "accession"} <= set(v.to_dict())


def test_year_end_ppe_in_billions(mmm, answerer):
    from finrag.retrieval.facts.classify import classify
    from finrag.retrieval.facts.concepts import default_concepts

    q = classify("Answer the following question by primarily using information that is shown "
                 "in the balance sheet: what is the year end FY2018 net PPNE for 3M? Answer in "
                 "USD billions.", default_concepts())
    assert q.route == "metric_lookup" and [m.key for m in q.metrics] == ["ppe_net"]
    result = answerer.answer(q, [mmm.facts.company("3M")])
    [v] = result.values
    assert v.value == pytest.approx(8.738e9) and v.period == "instant" and v.end == "2018-12-31"
    assert "$8.74 billion" in result.text and f"[{DOC} p.58]" in result.text


def test_roa_with_average_assets_equals_the_hand_computation(mmm, answerer):
    from finrag.retrieval.facts.classify import classify
    from finrag.retrieval.facts.concepts import default_concepts

    catalog = mmm.index.catalog
    net_income = _row(catalog, 56, "Net income attributable to 3M", "2018")
    assets = [_row(catalog, 58, "Total assets", y) for y in ("2018", "2017")]
    expected = net_income / (sum(assets) / 2)
    q = classify("What is the FY2018 return on assets (ROA) for 3M? ROA is defined as: FY2018 net "
                 "income / (average total assets between FY2017 and FY2018). Round your answer "
                 "to two decimal places.", default_concepts())
    assert [m.key for m in q.metrics] == ["return_on_assets"] and q.periods == [(2018, None)]
    result = answerer.answer(q, [mmm.facts.company("3M")])
    [v] = result.values
    assert v.derived and v.value == pytest.approx(expected)
    assert v.formula.startswith("net_income / avg(total_assets)")
    assert f"{expected:.2f}" in result.text.split("—")[0]


def test_dpo_reads_the_prior_year_and_says_what_is_missing(mmm, answerer):
    from finrag.retrieval.facts.concepts import default_concepts

    c = default_concepts()
    company = mmm.facts.company("3M")
    catalog = mmm.index.catalog
    payables = [_row(catalog, 58, "Accounts payable", y) for y in ("2018", "2017")]
    inventory = [_row(catalog, 58, "Total inventories", y) for y in ("2018", "2017")]
    cogs = _row(catalog, 56, "Cost of sales", "2018")
    v, _ = answerer.value(company, c["days_payable_outstanding"], 2018, None)
    assert v.value == pytest.approx(365 * sum(payables) / 2 / (cogs + inventory[0] - inventory[1]))
    # the 2018 10-K's balance sheet has no FY2016 column: nothing is made up
    v, why = answerer.value(company, c["days_payable_outstanding"], 2017, None)
    assert v is None and "accounts payable" in why and "FY2016" in why


def test_debt_is_long_term_debt_and_its_current_portion(mmm, answerer):
    from finrag.retrieval.facts.classify import classify
    from finrag.retrieval.facts.concepts import default_concepts

    catalog = mmm.index.catalog
    debt = {y: _row(catalog, 58, "Long-term debt", y)
            + _row(catalog, 58, "Short-term borrowings and current portion of long-term debt", y)
            for y in ("2018", "2017")}
    q = classify("Has 3M increased its debt on balance sheet between FY2017 and FY2018?",
                 default_concepts())
    assert [m.key for m in q.metrics] == ["total_debt"] and q.trend.yes_no
    result = answerer.answer(q, [mmm.facts.company("3M")])
    assert {v.end[:4]: v.value for v in result.values} == pytest.approx(debt)
    assert result.text.startswith("Yes" if debt["2018"] > debt["2017"] else "No")
    q = classify("What was 3M's net debt at the end of FY2018?", default_concepts())
    assert [m.key for m in q.metrics] == ["net_debt"]
    # a question about the debt itself, not its amount, names no metric
    for text in ("Which debt securities are registered to trade on a national securities "
                 "exchange under 3M's name?", "What are the covenants of 3M's debt?"):
        assert classify(text, default_concepts()).metrics == [], text


def test_a_note_table_does_not_override_the_primary_statement(mmm):
    catalog = mmm.index.catalog
    label = "Purchases of property, plant and equipment (PP&E)"
    elsewhere = [t["page"] for t in catalog.tables(DOC) if t["page"] != 60
                 and any(r.get("label") == label for r in t["rows"])]
    assert elsewhere  # MD&A tables repeat the line …
    assert all(statement_kind(dict(catalog.pages(DOC))[p]) is None for p in elsewhere)
    rows = mmm.facts.lookup("KEY:3M", ["table:capex"], periods=("FY",))
    assert rows and {r.source for r in rows} == {f"table:{DOC}#p60"}  # … the statement answers


def test_extract_again_replaces_the_documents_facts(mmm):
    from finrag.retrieval.routing.companies import CompanyTable
    from finrag.retrieval.facts.concepts import default_concepts
    from finrag.retrieval.facts.statements import store_statements

    before = mmm.facts.counts()["facts"]
    again = store_statements(mmm.facts, mmm.index.catalog, DOC, CompanyTable.load(),
                             default_concepts())
    assert again.facts and mmm.facts.counts()["facts"] == before
    assert set(again.statements) == {"income p.56", "balance p.58", "cash_flow p.60"}


def test_amounts_columns_and_titles():
    assert parse_amount("$(1,577)") == -1577 and parse_amount("—") == 0
    assert parse_amount("(1) 268") == 268 and parse_amount("$103 5,020") is None
    assert parse_amount("12.5%") is None and parse_amount("($5,053)") == -5053
    assert year_columns(["label", "2018", "2017"]) == {"2018": 2018, "2017": 2017}
    assert year_columns(["label", "Fiscal 2018", "December 31, 2017"]) == {
        "Fiscal 2018": 2018, "December 31, 2017": 2017}
    assert year_columns(["label", "2021", "2020", "2021_2", "2020_2"]) == {}
    assert statement_kind("Table of Contents\n3M Company and Subsidiaries\n"
                          "Consolidated Statement of Cash Flow s\n(Millions)") == "cash_flow"
    assert statement_kind("INCOME STATEMENTS\n(In millions)") == "income"
    assert statement_kind("NOTE 7. Supplemental Balance Sheet Information\n") is None
    assert statement_kind("The location in the consolidated statements of\nincome") is None


def test_formula_language():
    node = parse("365 * avg(accounts_payable) / (cost_of_revenue + change(inventory))")
    assert names(node) == ["accounts_payable", "cost_of_revenue", "inventory"]
    values = {("accounts_payable", 0): 10.0, ("accounts_payable", 1): 6.0,
              ("cost_of_revenue", 0): 100.0, ("inventory", 0): 30.0, ("inventory", 1): 20.0}
    assert evaluate(node, lambda k, back: values[(k, back)]) == pytest.approx(365 * 8 / 110)
    assert evaluate(parse("pct_change(x)"), lambda k, b: (150.0, 120.0)[b]) == pytest.approx(0.25)
    assert evaluate(parse("1 - a / b"), lambda k, b: {"a": 1.0, "b": 4.0}[k]) == 0.75
    for bad in ("avg(x", "foo(x)", "x $ y", ""):
        with pytest.raises(FormulaError):
            parse(bad)


def test_requested_units():
    r = read_request("What is the FY2018 capital expenditure amount (in USD millions) for 3M?")
    assert r.scale == 1e6 and in_requested_unit(1.577e9, "USD", r) == "$1,577 million"
    r = read_request("Answer in USD billions.")
    assert in_requested_unit(8.738e9, "USD", r) == "$8.74 billion"
    r = read_request("(in units of percents and round to one decimal place)")
    assert r.percent and r.decimals == 1 and in_requested_unit(0.3080, "pure", r) == "30.8%"
    r = read_request("Round your answer to two decimal places.")
    assert in_requested_unit(0.6589, "pure", r) == "0.66"
    assert in_requested_unit(1.0, "USD", read_request("what is it?")) is None


@pytest.mark.slow
def test_a_routed_question_the_facts_miss_is_answered_from_the_filing_with_the_miss_beside(mmm):
    """Hybrid route, nothing in the facts: the answer is the generator's, led by no "Not in the
    facts" line; what the facts lack is kept in ``facts_note``. With a figure in the facts, the
    figure leads the answer and there is no note."""
    from finrag.retrieval.answer import Answer
    from finrag.retrieval.systems.pipelines import Pipeline

    pipe = Pipeline.load(mmm.index.folder, profile="tiny")
    try:
        miss = pipe.answer("What were 3M's shares outstanding at the end of FY2018 and why did "
                           "they change?")
        hit = pipe.answer("What were 3M's inventories at the end of FY2018 and what drove the "
                          "change?")
    finally:
        pipe.close()
    assert miss.routing.doc_ids == [DOC] and miss.route == "hybrid" and not miss.facts
    assert miss.facts_note == ("Not in the facts read from the filings: 3M: no common shares "
                               "outstanding for FY2018.")
    assert "Not in the facts" not in miss.answer
    assert [c.role for c in miss.calls][-1] == "generator"
    assert Answer.from_dict(miss.to_dict()).facts_note == miss.facts_note
    assert hit.route == "hybrid" and hit.facts_note is None
    assert hit.answer.startswith("3M (MMM) inventories, as of 2018-12-31 (end of FY2018): "
                                 "$4,366 million")


def test_the_statements_a_question_reads():
    from finrag.retrieval.facts.classify import statements_named
    from finrag.retrieval.facts.concepts import default_concepts

    c = default_concepts()
    # named first, in the question's order; "cash" of "cash flow statement" is no metric
    assert statements_named("Using the cash flow statement and the balance sheet, what was "
                            "3M's FY2018 capex?", c) == ["cash_flow", "balance"]
    # through the metric's line, a formula's inputs included
    assert statements_named("What is Microsoft's FY2016 COGS?", c) == ["income"]
    assert statements_named("Does Adobe have an improving operating margin profile?", c) == [
        "income"]
    assert statements_named("What is the FY2018 DPO? DPO is defined as: 365 * (average accounts "
                            "payable) / (COGS + change in inventory)", c)[:2] == [
        "balance", "income"]
    assert statements_named("Who is 3M's chief executive officer?", c) == []


@pytest.mark.slow
def test_statement_pages_lead_the_ranking_when_the_profile_turns_them_on(mmm):
    """3M's capex is a line of the cash flow statement (p.60): with ``statement_pages`` a chunk
    of that page leads HDRR's ranking and the kept chunks; off, nothing is added."""
    from finrag.retrieval.systems.pipelines import Pipeline

    q = "What is the FY2018 capital expenditure amount (in USD millions) for 3M?"
    pipe = Pipeline.load(mmm.index.folder, profile="tiny")

    def answer(n: int):
        settings = pipe.settings.model_copy(update={"statement_pages": n, "facts_routes": False})
        return Pipeline(pipe.index, pipe.embedder,
                        pipe.profile.model_copy(update={"pipeline": settings}),
                        light=pipe.light, use_llm_router=False).answer(q, "hdrr", generate=False)
    try:
        off, on = answer(0), answer(1)
    finally:
        pipe.close()
    assert on.routing.doc_ids == off.routing.doc_ids == [DOC]
    # off, the light stage ranks a chunk of another page first
    lead = off.retrieved["ranked"][0]
    assert not lead["first_page"] <= 60 <= lead["last_page"]
    first, kept = on.retrieved["ranked"][0], on.retrieved["kept"][0]
    assert first["first_page"] <= 60 <= first["last_page"] and kept == first
    assert "statements" in on.timings_ms and "statements" not in off.timings_ms
    ranked = [r["chunk_id"] for r in on.retrieved["ranked"]]
    assert len(ranked) == len(set(ranked))
    assert len(on.retrieved["kept"]) == len({r["chunk_id"] for r in on.retrieved["kept"]})
