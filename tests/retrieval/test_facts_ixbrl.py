"""Tests for retrieval.facts.ixbrl: a handwritten inline-XBRL snippet, then the shared EDGAR filings
checked against SEC's companyfacts for the same companies."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from conftest import SHARED, need_shared
from finrag.retrieval.facts.companyfacts import read_companyfacts
from finrag.retrieval.facts.ixbrl import read_inline_facts
from finrag.retrieval.facts.model import FactsError

SEC_DIR = SHARED / "data" / "sec"
NVDA_10K = "nvda/nvda-10-k-2025-02-26.html"
AAPL_10K = "aapl/aapl-10-k-2024-11-01.html"

HEADER = """
<div style="display:none"><ix:header><ix:hidden>
  <ix:nonNumeric contextRef="c-1" name="dei:EntityRegistrantName">Example&#160;Corp</ix:nonNumeric>
  <ix:nonNumeric contextRef="c-1" name="dei:DocumentType">10-K</ix:nonNumeric>
  <ix:nonNumeric contextRef="c-1" name="dei:DocumentFiscalYearFocus">2025</ix:nonNumeric>
  <ix:nonNumeric contextRef="c-1" name="dei:DocumentFiscalPeriodFocus">FY</ix:nonNumeric>
  <ix:nonNumeric contextRef="c-1" name="dei:CurrentFiscalYearEndDate">--01-26</ix:nonNumeric>
  <ix:nonFraction contextRef="c-2" unitRef="usd" name="us-gaap:Assets" decimals="-6" scale="6"
    format="ixt:num-dot-decimal">5,000</ix:nonFraction>
</ix:hidden><ix:resources>
  <xbrli:context id="c-1"><xbrli:entity><xbrli:identifier scheme="http://www.sec.gov/CIK">1234</xbrli:identifier>
    </xbrli:entity><xbrli:period><xbrli:startDate>2024-01-29</xbrli:startDate>
    <xbrli:endDate>2025-01-26</xbrli:endDate></xbrli:period></xbrli:context>
  <xbrli:context id="c-2"><xbrli:entity><xbrli:identifier scheme="http://www.sec.gov/CIK">1234</xbrli:identifier>
    </xbrli:entity><xbrli:period><xbrli:instant>2025-01-26</xbrli:instant></xbrli:period></xbrli:context>
  <xbrli:context id="c-3"><xbrli:entity><xbrli:identifier scheme="http://www.sec.gov/CIK">1234</xbrli:identifier>
    <xbrli:segment><xbrldi:explicitMember dimension="us-gaap:StatementBusinessSegmentsAxis">ex:ChipsMember
    </xbrldi:explicitMember><xbrldi:typedMember dimension="ex:YearAxis"><ex:d>2026</ex:d></xbrldi:typedMember>
    </xbrli:segment></xbrli:entity><xbrli:period><xbrli:startDate>2024-01-29</xbrli:startDate>
    <xbrli:endDate>2025-01-26</xbrli:endDate></xbrli:period></xbrli:context>
  <xbrli:unit id="usd"><xbrli:measure>iso4217:USD</xbrli:measure></xbrli:unit>
  <xbrli:unit id="eps"><xbrli:divide><xbrli:unitNumerator><xbrli:measure>iso4217:USD</xbrli:measure>
    </xbrli:unitNumerator><xbrli:unitDenominator><xbrli:measure>xbrli:shares</xbrli:measure>
    </xbrli:unitDenominator></xbrli:divide></xbrli:unit>
  <xbrli:unit id="pure"><xbrli:measure>xbrli:pure</xbrli:measure></xbrli:unit>
</ix:resources></ix:header></div>
"""

BODY = """
<p>For the fiscal year ended <ix:nonNumeric contextRef="c-1" name="dei:DocumentPeriodEndDate"
  format="ixt:date-monthname-day-year-en">January 26, 2025</ix:nonNumeric></p>
<table><tr><td>Revenue</td><td>$</td><td><ix:nonFraction contextRef="c-1" unitRef="usd" name="us-gaap:Revenues"
  decimals="-6" scale="6" format="ixt:num-dot-decimal">130,497</ix:nonFraction></td></tr>
<tr><td>Revenue again</td><td><ix:nonFraction contextRef="c-1" unitRef="usd" name="us-gaap:Revenues"
  decimals="-6" scale="6" format="ixt:num-dot-decimal">130,497</ix:nonFraction></td></tr>
<tr><td>Chips</td><td><ix:nonFraction contextRef="c-3" unitRef="usd" name="us-gaap:Revenues" decimals="-6"
  scale="6">1,2<span>34</span></ix:nonFraction></td></tr>
<tr><td>Loss</td><td>(<ix:nonFraction contextRef="c-1" unitRef="usd" name="us-gaap:OtherNonoperatingIncomeExpense"
  decimals="-6" scale="6" sign="-" format="ixt:num-dot-decimal">12.5</ix:nonFraction>)</td></tr>
<tr><td>EPS</td><td><ix:nonFraction contextRef="c-1" unitRef="eps" name="us-gaap:EarningsPerShareDiluted"
  decimals="2" scale="0" format="ixt:num-dot-decimal">2.94</ix:nonFraction></td></tr>
<tr><td>Rate</td><td><ix:nonFraction contextRef="c-1" unitRef="pure" name="us-gaap:EffectiveIncomeTaxRate"
  decimals="3" scale="-2" format="ixt:num-dot-decimal">13.3</ix:nonFraction>%</td></tr>
<tr><td>Euro style</td><td><ix:nonFraction contextRef="c-1" unitRef="usd" name="ex:EuroStyle" decimals="INF"
  format="ixt:num-comma-decimal">1.234,5</ix:nonFraction></td></tr>
<tr><td>Dash</td><td><ix:nonFraction contextRef="c-1" unitRef="usd" name="ex:Dash" decimals="-6" scale="6"
  format="ixt:fixed-zero">&#8212;</ix:nonFraction></td></tr>
<tr><td>Nil</td><td><ix:nonFraction contextRef="c-1" unitRef="usd" name="ex:Nil" xsi:nil="true"/></td></tr>
<tr><td>Bad context</td><td><ix:nonFraction contextRef="c-9" unitRef="usd" name="ex:Bad">1</ix:nonFraction></td></tr>
<tr><td>Bad unit</td><td><ix:nonFraction contextRef="c-1" unitRef="eur" name="ex:Bad">1</ix:nonFraction></td></tr>
</table>
<p>We have <ix:nonFraction contextRef="c-1" unitRef="pure" name="ex:Segments" decimals="INF" scale="0"
  format="ixt-sec:numwordsen">two</ix:nonFraction> segments and
  <ix:nonFraction contextRef="c-1" unitRef="usd" name="us-gaap:Liabilities" decimals="-6" scale="6">1,<ix:nonFraction
  contextRef="c-2" unitRef="usd" name="us-gaap:LiabilitiesCurrent" decimals="-6" scale="6">0</ix:nonFraction>00
  </ix:nonFraction>.</p>
"""


def write(tmp_path: Path, body: str, name: str = "ex-10k.html") -> Path:
    path = tmp_path / name
    path.write_text(f"<html><head><title>T</title></head><body>{body}</body></html>", encoding="utf-8")
    return path


def shared_file(relative: str) -> Path:
    path = need_shared(SEC_DIR) / "filings" / relative
    assert path.is_file(), f"expected shared filing is missing: {path}"
    return path


def by_concept(facts, concept, dimensions=()):
    return {(f.start, f.end): f for f in facts if f.concept == concept and f.dimensions == dimensions}


# ---------------------------------------------------------------------------- handwritten snippet


def test_snippet_info(tmp_path):
    info, _ = read_inline_facts(write(tmp_path, HEADER + BODY))
    assert info == {"cik": "0000001234", "entity_name": "Example Corp", "form": "10-K", "fiscal_year": 2025,
                    "fiscal_period": "FY", "period_end": "2025-01-26", "fiscal_year_end": "01-26", "skipped": 2}


def test_snippet_facts(tmp_path):
    _, facts = read_inline_facts(write(tmp_path, HEADER + BODY))
    values = {(f.concept, f.dimensions): f.value for f in facts}
    assert len(values) == len(facts) == 11  # the repeated revenue is kept once, the nil fact not at all
    assert values["us-gaap:Revenues", ()] == 130497000000.0
    chips = (("ex:YearAxis", "2026"), ("us-gaap:StatementBusinessSegmentsAxis", "ex:ChipsMember"))
    assert values["us-gaap:Revenues", chips] == 1234000000.0  # text split across a <span>
    assert values["us-gaap:OtherNonoperatingIncomeExpense", ()] == -12500000.0
    assert values["us-gaap:EffectiveIncomeTaxRate", ()] == pytest.approx(0.133)
    assert values["ex:EuroStyle", ()] == 1234.5
    assert values["ex:Dash", ()] == 0.0
    assert values["ex:Segments", ()] == 2.0
    assert values["us-gaap:Liabilities", ()] == 1000000000.0  # its text includes the nested fact's
    assert values["us-gaap:LiabilitiesCurrent", ()] == 0.0

    revenue = by_concept(facts, "us-gaap:Revenues")["2024-01-29", "2025-01-26"]
    assert (revenue.cik, revenue.unit, revenue.decimals, revenue.form) == ("0000001234", "USD", -6, "10-K")
    assert (revenue.filing_fy, revenue.filing_fp, revenue.accession, revenue.filed) == (2025, "FY", None, None)
    assert revenue.source == "ixbrl:ex-10k"
    assets = by_concept(facts, "us-gaap:Assets")[None, "2025-01-26"]  # inside ix:hidden, an instant
    assert assets.value == 5000000000.0
    eps = by_concept(facts, "us-gaap:EarningsPerShareDiluted")["2024-01-29", "2025-01-26"]
    assert (eps.unit, eps.decimals) == ("USD/shares", 2)
    assert by_concept(facts, "ex:EuroStyle")["2024-01-29", "2025-01-26"].decimals is None
    assert by_concept(facts, "ex:Segments")["2024-01-29", "2025-01-26"].unit == "pure"


def test_source_argument_and_cik_from_context(tmp_path):
    header = HEADER.replace("dei:DocumentFiscalYearFocus", "dei:Other")
    info, facts = read_inline_facts(write(tmp_path, header + BODY), source="ixbrl:doc-7")
    assert info["cik"] == "0000001234" and info["fiscal_year"] is None
    assert {f.source for f in facts} == {"ixbrl:doc-7"}
    assert {f.filing_fy for f in facts} == {None}


# ---------------------------------------------------------------------------- errors


def test_html_without_inline_xbrl(tmp_path):
    path = write(tmp_path, "<p>Annual report</p><table><tr><td>Revenue</td><td>1,234</td></tr></table>")
    with pytest.raises(FactsError, match="no inline XBRL") as err:
        read_inline_facts(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("content, message", [
    (b"", "empty file"),
    (b"  \n", "empty file"),
    (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n", "not an HTML document"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not an HTML document"),
])
def test_unreadable_content(tmp_path, content, message):
    path = tmp_path / "doc.html"
    path.write_bytes(content)
    with pytest.raises(FactsError, match=message) as err:
        read_inline_facts(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_missing_file(tmp_path):
    path = tmp_path / "nope.html"
    with pytest.raises(FactsError, match="cannot read file") as err:
        read_inline_facts(path)
    assert str(path) in str(err.value)


# ---------------------------------------------------------------------------- shared filings


@pytest.mark.integration
def test_shared_nvda_10k():
    info, facts = read_inline_facts(shared_file(NVDA_10K))
    assert (info["cik"], info["form"], info["fiscal_year"], info["fiscal_period"]) == ("0001045810", "10-K", 2025, "FY")
    assert (info["period_end"], info["fiscal_year_end"], info["skipped"]) == ("2025-01-26", "01-26", 0)
    assert len(facts) > 1000
    assert {f.source for f in facts} == {"ixbrl:nvda-10-k-2025-02-26"}

    revenue = [f for f in facts if f.concept == "us-gaap:Revenues" and not f.dimensions and f.end == "2025-01-26"
               and 360 <= (date.fromisoformat(f.end) - date.fromisoformat(f.start)).days <= 371]
    assert [f.value for f in revenue] == [130497000000.0]
    _, companyfacts = read_companyfacts(need_shared(SEC_DIR) / "companyfacts" / "CIK0001045810.json")
    assert revenue[0].value in {f.value for f in companyfacts if f.concept == "us-gaap:Revenues"
                                and (f.start, f.end) == (revenue[0].start, revenue[0].end)}

    segments = [f for f in facts if f.concept == "us-gaap:Revenues" and f.end == "2025-01-26" and any(
        axis == "us-gaap:StatementBusinessSegmentsAxis" for axis, _ in f.dimensions)]
    assert len(segments) >= 2 and all(f.start == "2024-01-29" for f in segments)
    eps = [f for f in facts if f.concept == "us-gaap:EarningsPerShareDiluted" and not f.dimensions]
    assert eps and {f.unit for f in eps} == {"USD/shares"}
    assets = by_concept(facts, "us-gaap:Assets")
    assert assets and all(start is None for start, _ in assets)


@pytest.mark.integration
def test_shared_aapl_10k_net_sales():
    info, facts = read_inline_facts(shared_file(AAPL_10K))
    assert (info["cik"], info["form"], info["fiscal_year"]) == ("0000320193", "10-K", 2024)
    sales = by_concept(facts, "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax")
    assert sales["2023-10-01", "2024-09-28"].value == 391035000000.0


@pytest.mark.integration
def test_shared_aapl_10k_agrees_with_companyfacts():
    """Every consolidated USD fact that companyfacts also holds from a 10-K has the same value,
    up to the rounding the filing states: the text repeats some figures rounded ("$22.0 billion"
    next to 22,038 in a table), and companyfacts keeps only the precise one."""
    _, facts = read_inline_facts(shared_file(AAPL_10K))
    _, companyfacts = read_companyfacts(need_shared(SEC_DIR) / "companyfacts" / "CIK0000320193.json")
    reference: dict[tuple, set[float]] = {}
    for f in companyfacts:
        if f.form == "10-K" and f.unit == "USD":
            reference.setdefault((f.concept, f.start, f.end), set()).add(f.value)
    compared = exact = 0
    for f in facts:
        values = reference.get((f.concept, f.start, f.end))
        if f.unit != "USD" or f.dimensions or values is None:
            continue
        compared += 1
        exact += f.value in values
        tolerance = 0.5 * 10 ** -f.decimals if f.decimals is not None else 0
        assert any(abs(f.value - v) <= tolerance for v in values), (f, values)
    assert compared > 300 and exact >= compared - 5
