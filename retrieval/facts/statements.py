"""Facts from the financial-statement tables of PDF filings (no XBRL in them).

At ingest every PDF's tables were kept as JSON rows keyed by column header ("label", "2018",
"2017", …). This module finds the primary statements among them — pages whose first lines
are a title such as "Consolidated Statements of Operations", "Consolidated Balance Sheets",
"Statement of Financial Position", "Consolidated Statements of Cash Flows" — reads the unit
from the page ("(In millions, except per share data)"), and turns each line whose label is a
phrase of a metric of that statement (``concepts.yaml``) into a fact ``table:<metric key>``
for each fiscal-year column: balance-sheet columns are instants at the fiscal year end, the
others full fiscal years. A line in a note or a segment table never counts: only the
primary statements are read. 10-Q tables (quarters beside year-to-date columns) are skipped.

Companies without a CIK get a synthetic one, ``KEY:<company key>``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from datetime import date, timedelta

from finrag.retrieval.routing.calendars import nominal_end
from finrag.retrieval.routing.companies import Company, CompanyTable
from finrag.retrieval.facts.concepts import ConceptTable, Metric, _norm
from finrag.retrieval.facts.model import Fact
from finrag.retrieval.facts.store import FactStore

SOURCE_PREFIX = "table:"
_HEAD_LINES = 8  # a statement's title is among the first lines of its page
_TITLE = re.compile(
    r"^(?:[a-z0-9.,&'’]{0,40}?consolidated|combined)?"
    r"(?:statements?of(?:consolidated)?(?P<kind>income|operations|earnings|cashflows?|"
    r"financialposition|financialcondition)|(?P<bs>balancesheets?)|(?P<is>incomestatements?)|"
    r"(?P<cf>cashflows?statements?))"
    r"(?:\(continued\)|continued|-continued|\(unaudited\))?$")
_KINDS = {"income": "income", "operations": "income", "earnings": "income",
          "cashflow": "cash_flow", "cashflows": "cash_flow", "financialposition": "balance",
          "financialcondition": "balance"}
_UNIT = re.compile(r"\b(?:in|amounts\s+in|dollars\s+in|\$\s*in)?\s*(millions|thousands|billions)\b"
                   r"|\((millions|thousands|billions)", re.I)
_SCALE = {"thousands": 1e3, "millions": 1e6, "billions": 1e9}
_YEAR = re.compile(r"^(?:.*\D)?((?:19|20)\d\d)$")
# paid out in cash: tables print them in parentheses, XBRL (and questions) as positive amounts
_OUTFLOWS = {"capex", "dividends_paid", "share_repurchases", "interest_expense"}


def statement_kind(page_text: str) -> str | None:
    """income | balance | cash_flow when the page opens with a primary statement's title."""
    lines = [line for line in page_text.split("\n") if line.strip()][:_HEAD_LINES]
    for line in lines:
        key = re.sub(r"\s+", "", line).casefold()
        if "inthe" in key or "notesto" in key:
            continue
        m = _TITLE.match(key)
        if m:
            if m.group("bs") or m.group("is") or m.group("cf"):
                return "balance" if m.group("bs") else "income" if m.group("is") else "cash_flow"
            return _KINDS[m.group("kind")]
    return None


def statement_pages(pages) -> dict[int, str]:
    """{page number: income | balance | cash_flow} of the (number, text) pages that open a
    primary statement (a continued statement's pages included)."""
    return {n: kind for n, text in pages if (kind := statement_kind(text))}


def page_scale(page_text: str) -> float | None:
    """1e6 for "(In millions…)", 1e3 for thousands; None when the page does not say."""
    m = _UNIT.search(page_text[:1500])
    return _SCALE[(m.group(1) or m.group(2)).casefold()] if m else None


def parse_amount(cell: str | None) -> float | None:
    """"$(1,577)" -> -1577; "—" -> 0; None for anything that is not one number."""
    if cell is None:
        return None
    text = str(cell).strip()
    text = re.sub(r"^\(\d\)\s+", "", text)  # a footnote mark before the figure
    text = re.sub(r"\s+", " ", text.replace("$", " ").replace(",", "")).strip()
    text = text.replace("( ", "(").replace(" )", ")")
    if " " in text:
        return None  # two figures run together ("$103 5,020"): no safe reading
    if text in ("—", "–", "-", "——"):
        return 0.0
    negative = text.startswith("(") and text.endswith(")")
    text = text.strip("()")
    if not re.fullmatch(r"-?\d+(?:\.\d+)?", text):
        return None
    value = float(text)
    return -value if negative else value


def year_columns(header: list[str]) -> dict[str, int]:
    """Column → fiscal year for headers naming distinct years ("2018", "Fiscal 2018",
    "December 31, 2018", "FY2018"); {} for any other table (a quarter beside a year, a
    duplicated year)."""
    out: dict[str, int] = {}
    for col in header[1:]:
        m = _YEAR.match(str(col).strip())
        if not m:
            return {}
        out[col] = int(m.group(1))
    return out if out and len(set(out.values())) == len(out) else {}


def table_years(table: dict, page_text: str = "") -> tuple[dict[str, int], list[dict]]:
    """(column → fiscal year, the rows below) of a table: years from its header, else from a
    row near its top holding only years, else from the page's text above the table's first
    line when it names exactly one run of consecutive years per column ("May 31, 2020 / May
    26, 2019" that the PDF extraction broke)."""
    years = year_columns(table["header"])
    if years:
        return years, table["rows"]
    for i, row in enumerate(table["rows"][:6]):
        cells = {k: str(v).strip() for k, v in row.items() if k != "label" and str(v).strip()}
        if len(cells) >= 2 and all(re.fullmatch(r"(?:19|20)\d\d", v) for v in cells.values()) \
                and len(set(cells.values())) == len(cells):
            return {k: int(v) for k, v in cells.items()}, table["rows"][i + 1:]
    columns = [c for c in table["header"][1:]]
    first = next((str(r.get("label", "")) for r in table["rows"] if len(r) > 1
                  and str(r.get("label", "")).strip()
                  and not re.search(r"\b(?:19|20)\d\d\b", str(r.get("label", "")))), "")
    head = page_text[:page_text.find(first)] if first and first in page_text else ""
    found = list(dict.fromkeys(int(y) for y in re.findall(r"\b((?:19|20)\d\d)\b", head)))
    if len(columns) >= 2 and len(found) == len(columns) and all(
            abs(a - b) == 1 for a, b in zip(found, found[1:])) and len(set(
            (a - b) for a, b in zip(found, found[1:]))) == 1:
        rows = [r for r in table["rows"]
                if not any(re.search(r"\b(?:19|20)\d\d\b", str(v)) for k, v in r.items()
                           if k != "label")]  # the broken date row itself
        return dict(zip(columns, found)), rows
    return {}, []


def _label_keys(label: str) -> list[str]:
    """The normalised forms of a table label, most literal first."""
    text = re.sub(r"\(\d\)|\*", " ", label)
    text = re.sub(r"[—–]", " ", text)
    base = _norm(re.sub(r"[:.]+$", "", text.strip())).casefold()
    plain = _norm(re.sub(r"\([^)]*\)", " ", text).strip(" :.")).casefold()
    keys = [base, plain]
    for k in (base, plain):
        keys.append(re.sub(r"^(?:less|add)\s+", "", k))
        keys.append(re.sub(r"\s+(?:net|and other)$", "", k))
        keys.append(re.sub(r"\s+net of .*$", "", k))
        keys.append(re.sub(r"^total\s+", "", k))
        if re.match(r"^net (?:income|earnings)(?: \(loss\))? attributable to "
                    r"(?!.*(?:non ?controlling|minority|redeemable))", k):
            keys.append("net income attributable to common shareholders")
        if re.match(r"^total (?!liabilities).*(?:share|stock)holders equity$", k):
            keys.append("total shareholders equity")
    return list(dict.fromkeys(k.strip() for k in keys if k.strip()))


@dataclass
class _Matcher:
    """Label → (metric, rank) for the metrics of one statement; rank: lower wins in a table."""

    by_label: dict[str, dict[str, tuple[Metric, int]]] = field(default_factory=dict)

    @classmethod
    def build(cls, concepts: ConceptTable) -> "_Matcher":
        out = cls()
        for metric in concepts.metrics.values():
            if metric.statement is None or metric.kind == "per_share" \
                    or metric.key.startswith(("shares", "weighted_shares")):
                continue  # per-share and share counts are not read from tables (no scale)
            table = out.by_label.setdefault(metric.statement, {})
            for rank, phrase in enumerate((*metric.phrases, metric.key.replace("_", " "))):
                key = _norm(phrase).casefold()
                if len(key.split()) < 2 and key not in ("inventories", "inventory", "goodwill",
                                                        "revenues", "revenue", "receivables"):
                    continue  # one-word phrases ("sales", "cash", "assets") name no line
                table.setdefault(key, (metric, rank))
        return out

    def match(self, statement: str, label: str) -> tuple[Metric, int] | None:
        table = self.by_label.get(statement, {})
        for i, key in enumerate(_label_keys(label)):
            if key in table:
                metric, rank = table[key]
                return metric, rank + 100 * (i > 1)  # a trimmed label ranks after exact ones
        return None


@dataclass
class ExtractReport:
    doc_id: str
    tables: int = 0  # tables read on statement pages
    statements: list[str] = field(default_factory=list)  # "income p.56", …
    facts: list[Fact] = field(default_factory=list)
    note: str = ""


def company_with_id(company: Company) -> Company:
    """The company with a CIK, a synthetic ``KEY:<key>`` when the table knows none."""
    if company.cik:
        return company
    holder = copy.copy(company)  # not through the constructor: it admits 10-digit CIKs only
    holder.cik = f"KEY:{company.key}"
    return holder


def extract(catalog, doc_id: str, company: Company, concepts: ConceptTable) -> ExtractReport:
    """The statement-line facts of one catalog document."""
    doc = catalog.document(doc_id)
    if doc is None:
        raise ValueError(f"{doc_id}: not in the index")
    report = ExtractReport(doc_id)
    if not (doc.doc_type or "").upper().startswith("10-K"):
        report.note = f"{doc.doc_type}: only 10-K statements are read" + (
            " (10-Q columns mix quarters and year-to-date)" if "10-Q" in doc.doc_type.upper() else "")
        return report
    company = company_with_id(company)
    fye = company.fiscal_year_end or "12-31"
    matcher = _Matcher.build(concepts)
    pages = dict(catalog.pages(doc_id))
    kinds = statement_pages(pages.items())
    scales = [page_scale(pages[n]) for n, k in kinds.items() if k]
    doc_scale = max(set(s for s in scales if s), key=scales.count, default=None)
    filed = doc.filing_date or doc.period_end or (
        nominal_end(doc.fiscal_year, fye).isoformat() if doc.fiscal_year else "")
    best: dict[tuple[str, int], tuple[int, Fact]] = {}
    for table in catalog.tables(doc_id):
        kind = kinds.get(table["page"])
        if kind is None:
            continue
        years, rows = table_years(table, pages[table["page"]])
        scale = page_scale(pages[table["page"]]) or doc_scale
        if not years or scale is None:
            continue
        report.tables += 1
        where = f"{kind} p.{table['page']}"
        if where not in report.statements:
            report.statements.append(where)
        held = ""  # a label the PDF broke over two lines: the first line has no values
        for row in rows:
            label = str(row.get("label", ""))
            found = matcher.match(kind, label) or (
                matcher.match(kind, f"{held} {label}") if held else None)
            held = label if len(row) == 1 and not label.rstrip().endswith(":") else ""
            if not found:
                continue
            metric, rank = found
            for col, year in years.items():
                value = parse_amount(row.get(col))
                if value is None:
                    continue
                value *= scale
                if metric.key in _OUTFLOWS:
                    value = abs(value)
                end = nominal_end(year, fye)
                start = None if metric.kind == "stock" else (
                    end.replace(year=end.year - 1) + timedelta(days=1)
                    if not (end.month == 2 and end.day == 29) else date(end.year - 1, 3, 1))
                fact = Fact(company.cik, f"{SOURCE_PREFIX}{metric.key}", "USD", end.isoformat(),
                            value, start.isoformat() if start else None, form=doc.doc_type,
                            filed=filed, source=f"{SOURCE_PREFIX}{doc_id}#p{table['page']}")
                key = (metric.key, year)
                if key not in best or rank < best[key][0]:
                    best[key] = (rank, fact)
    report.facts = [f for _, f in best.values()]
    if not report.statements:
        report.note = ("no primary statement table found" if not any(kinds.values()) else
                       "no primary statement table found (statement pages, but no table with "
                       "fiscal-year columns and a unit)")
    return report


def store_statements(store: FactStore, catalog, doc_id: str, companies: CompanyTable,
                     concepts: ConceptTable, company_name: str | None = None) -> ExtractReport:
    """Extract one document's statement facts and store them (replacing an earlier run's)."""
    doc = catalog.document(doc_id)
    if doc is None:
        raise ValueError(f"{doc_id}: not in the index")
    company = companies.by_name(company_name or doc.company) or companies.by_key(doc.company)
    if company is None:
        raise ValueError(f"{doc_id}: company {doc.company!r} is not in the company table")
    report = extract(catalog, doc_id, company, concepts)
    store.add(f"{SOURCE_PREFIX}{doc_id}", doc.sha256, company_with_id(company), report.facts)
    return report
