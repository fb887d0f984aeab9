"""Filing metadata from file names and sidecar files.

File names come in two shapes:

* FinanceBench style, ``KEY[_YEAR[Qn]]_TYPE[_dated-YYYY-MM-DD]``: ``3M_2018_10K``,
  ``BESTBUY_2024Q2_10Q``, ``PEPSICO_2023Q1_EARNINGS``, ``AMD_2022_annualreport``,
  ``JOHNSON_JOHNSON_2023_8K_dated-2023-08-30`` (the date is the filing date).
* SEC EDGAR style, ``ticker-type-[fye-]YYYY-MM-DD``: ``aapl-10-k-2024-11-01`` (filing date),
  ``nvda-10-k-fye-2022-01-30`` (fiscal-year end date).

A sidecar (JSONL or a JSON list) states the metadata outright, in FinanceBench's
``documents.jsonl`` format or finrag's own (``DocumentMeta`` fields plus ``fiscal_year_end``).
Fiscal years are named after the calendar year they end in (FY ending January 2025 is FY2025).
"""

from __future__ import annotations

import calendar
import json
import logging
import re
from dataclasses import fields, replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from finrag.retrieval.routing.calendars import fiscal_period
from finrag.retrieval.routing.companies import (Company, CompanyConflict, CompanyTable,
                                                default_table)
from finrag.retrieval.documents import DOC_TYPES, DocumentMeta, check_collections

log = logging.getLogger(__name__)

_EXTENSIONS = {".pdf", ".htm", ".html", ".txt", ".xml", ".json", ".md"}
_DATE = r"\d{4}-\d{2}-\d{2}"
_FINANCEBENCH_NAME = re.compile(
    rf"(?P<key>[a-z0-9]+(?:_[a-z][a-z0-9]*)*)(?:_(?P<year>\d{{4}})(?:Q(?P<quarter>[1-4]))?)?"
    rf"_(?P<type>10K|10Q|8K|EARNINGS|annualreport)(?:[_-]dated[_-](?P<date>{_DATE}))?",
    re.IGNORECASE,
)
_EDGAR_NAME = re.compile(
    rf"(?P<ticker>[a-z0-9][a-z0-9.-]*?)-(?P<type>10-k|10-q|8-k)(?P<fye>-fye)?-(?P<date>{_DATE})",
    re.IGNORECASE,
)
_DOC_TYPE_SPELLINGS = {
    "10k": "10-K",
    "10q": "10-Q",
    "8k": "8-K",
    "earnings": "earnings",
    "annualreport": "annual report",
    "10kannualreport": "annual report",  # FinanceBench
}
_ANNUAL = {"10-K", "annual report"}
_WEEK_SLACK = timedelta(days=3)  # a 52/53-week year ends within 3 days of its nominal end
_FINRAG_KEYS = {f.name for f in fields(DocumentMeta)} | {"fiscal_year_end"}


def doc_id_for(path_or_stem: str | Path) -> str:
    """The file stem: ``pdfs/3M_2018_10K.pdf`` -> ``3M_2018_10K`` (unknown suffixes are kept)."""
    path = Path(path_or_stem)
    return path.stem if path.suffix.lower() in _EXTENSIONS else path.name


def normalize_doc_type(text: str) -> str:
    """One of DOC_TYPES for the spellings in use: "10k", "10-K", "Earnings", "10k_annualreport"..."""
    doc_type = _DOC_TYPE_SPELLINGS.get(re.sub(r"[^a-z0-9]", "", str(text).casefold()))
    if doc_type is None:
        raise ValueError(f"unknown document type {text!r}; expected one of {DOC_TYPES}")
    return doc_type


def fiscal_year_for(
    day: date | str, company: Company | None = None, *, in_progress: bool = False
) -> int:
    """The fiscal year that ended most recently on or before ``day``.

    Pass a period end, or a 10-K's filing date. With ``in_progress=True`` it is instead the
    fiscal year under way on ``day`` (for a 10-Q's or 8-K's filing date). The year is named
    after the calendar year of the nominal end, so NVIDIA's year ending 26 January 2025 is 2025
    and Johnson & Johnson's ending 1 January 2023 (nominally 31 December) is 2022. Without a
    known ``fiscal_year_end`` the year is taken to end on 31 December.
    """
    day = date.fromisoformat(day) if isinstance(day, str) else day
    month, dom = map(int, ((company and company.fiscal_year_end) or "12-31").split("-"))
    slack = _WEEK_SLACK if company and company.week_based else timedelta(0)
    year = day.year + 1
    while _nominal_end(year, month, dom) - slack > day:
        year -= 1
    return year + 1 if in_progress else year


def parse_filename(
    path_or_stem: str | Path, companies: CompanyTable | None = None
) -> DocumentMeta:
    """Metadata read from a FinanceBench- or EDGAR-style file name; ValueError when it is neither."""
    doc_id = doc_id_for(path_or_stem)
    table = companies if companies is not None else default_table()
    if match := _EDGAR_NAME.fullmatch(doc_id):
        return _from_edgar_name(doc_id, match, table)
    if match := _FINANCEBENCH_NAME.fullmatch(doc_id):
        return _from_financebench_name(doc_id, match, table)
    raise ValueError(
        f"cannot read filing metadata from the file name {str(path_or_stem)!r}: expected "
        "COMPANY_YEAR[Qn]_TYPE[_dated-YYYY-MM-DD] (e.g. 3M_2018_10K, BESTBUY_2024Q2_10Q) or "
        "ticker-type-[fye-]YYYY-MM-DD (e.g. aapl-10-k-2024-11-01); or give it a sidecar entry"
    )


def load_sidecar(
    path: str | Path, companies: CompanyTable | None = None
) -> dict[str, DocumentMeta]:
    """Metadata by doc id from a JSONL file or a JSON list, in FinanceBench's or finrag's format.

    Company facts a finrag line states (ticker, aliases, fiscal_year_end) are added to
    ``companies`` (by default the shared default table; a staged table refuses, with
    ``CompanyConflict``, a line that contradicts a company it records). A repeated doc id keeps
    its first entry.
    """
    table = companies if companies is not None else default_table()
    found: dict[str, DocumentMeta] = {}
    for where, record in _records(Path(path)):
        try:
            if not isinstance(record, dict):
                raise ValueError(f"expected a JSON object, got {type(record).__name__}")
            if "doc_name" in record:
                meta = _from_financebench_record(record, table)
            else:
                meta = _from_finrag_record(record, table)
        except (TypeError, ValueError) as err:
            kind = CompanyConflict if isinstance(err, CompanyConflict) else ValueError
            raise kind(f"{path}, {where}: {err}") from None
        if meta.doc_id in found:
            if found[meta.doc_id] != meta:
                log.warning("%s, %s: %s listed again with other metadata; keeping the first",
                            path, where, meta.doc_id)
            continue
        found[meta.doc_id] = meta
    return found


def resolve_metadata(
    path: str | Path,
    sidecar: dict[str, DocumentMeta] | None = None,
    companies: CompanyTable | None = None,
) -> DocumentMeta:
    """The sidecar's entry for the file (completed from the company table), else its file name's."""
    table = companies if companies is not None else default_table()
    meta = (sidecar or {}).get(doc_id_for(path))
    if meta is None:
        return parse_filename(path, table)
    company = table.by_name(meta.company) or (meta.ticker and table.by_ticker(meta.ticker)) or None
    if company is None:
        return meta
    return replace(
        meta,
        company=company.name,
        ticker=meta.ticker or company.ticker,
        aliases=meta.aliases or list(company.aliases),
    )


# --- file names ---------------------------------------------------------------------------


def _from_financebench_name(doc_id: str, match: re.Match[str], table: CompanyTable) -> DocumentMeta:
    key = match["key"]
    company = table.by_key(key) or table.by_ticker(key) or table.by_name(key.replace("_", " "))
    doc_type = normalize_doc_type(match["type"])
    filed = _iso_date(match["date"], doc_id)
    year = int(match["year"]) if match["year"] else None
    if year is None and filed:
        year = fiscal_year_for(filed, company, in_progress=doc_type not in _ANNUAL)
    meta = DocumentMeta(
        doc_id=doc_id,
        company=key.replace("_", " ").title(),
        doc_type=doc_type,
        fiscal_year=year,
        fiscal_quarter=int(match["quarter"]) if match["quarter"] else None,
        filing_date=filed,
    )
    return _with_company(meta, company)


def _from_edgar_name(doc_id: str, match: re.Match[str], table: CompanyTable) -> DocumentMeta:
    ticker = match["ticker"].upper()
    company = table.by_ticker(ticker)
    doc_type = normalize_doc_type(match["type"])
    day = _iso_date(match["date"], doc_id)
    meta = DocumentMeta(doc_id=doc_id, company=ticker, doc_type=doc_type, ticker=ticker)
    if match["fye"]:
        meta = replace(meta, fiscal_year=fiscal_year_for(day, company), period_end=day)
    else:
        in_progress = doc_type not in _ANNUAL
        year = fiscal_year_for(day, company, in_progress=in_progress)
        meta = replace(meta, fiscal_year=year, filing_date=day)
    return _with_company(meta, company)


# --- sidecars ------------------------------------------------------------------------------


def _records(path: Path):
    """(where, record) pairs: "line N" for JSONL, "entry N" for a JSON list."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not valid JSON: {err}") from None
        yield from ((f"entry {n}", record) for n, record in enumerate(records, 1))
        return
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield f"line {number}", json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}, line {number}: not valid JSON: {err}") from None


def _from_financebench_record(record: dict[str, Any], table: CompanyTable) -> DocumentMeta:
    meta = parse_filename(_text(record, "doc_name"), table)
    if record.get("company"):
        name = _text(record, "company")
        company = table.by_name(name)
        meta = _with_company(meta, company) if company else replace(meta, company=name)
    return replace(
        meta,
        doc_type=normalize_doc_type(record["doc_type"]) if record.get("doc_type") else meta.doc_type,
        fiscal_year=_year(record.get("doc_period")) or meta.fiscal_year,
        sector=record.get("gics_sector") or meta.sector,
    )


def _from_finrag_record(record: dict[str, Any], table: CompanyTable) -> DocumentMeta:
    unknown = set(record) - _FINRAG_KEYS
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)}; known: {sorted(_FINRAG_KEYS)}")
    doc_id, name = doc_id_for(_text(record, "doc_id")), _text(record, "company")
    doc_type = normalize_doc_type(_text(record, "doc_type"))
    ticker = record.get("ticker") or None
    if ticker is not None and not isinstance(ticker, str):
        raise ValueError(f"ticker must be a string, got {ticker!r}")
    aliases = record.get("aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise ValueError(f"aliases must be a list of strings, got {aliases!r}")

    company = _learn_company(table, name, ticker, aliases, record.get("fiscal_year_end"))

    quarter = record.get("fiscal_quarter")
    if quarter is not None and quarter not in (1, 2, 3, 4):
        raise ValueError(f"fiscal_quarter must be 1-4, got {quarter!r}")
    meta = DocumentMeta(
        doc_id=doc_id,
        company=company.name if company else name,
        doc_type=doc_type,
        fiscal_year=_year(record.get("fiscal_year")),
        fiscal_quarter=quarter,
        ticker=ticker.upper() if ticker else (company.ticker if company else None),
        aliases=aliases or (list(company.aliases) if company else []),
        period_end=_iso_date(record.get("period_end"), doc_id),
        filing_date=_iso_date(record.get("filing_date"), doc_id),
        sector=record.get("sector"),
        collections=check_collections(record["collections"]) if record.get("collections") else [],
    )
    if meta.fiscal_year is None and meta.period_end:
        # The fiscal year holding the period end: a 10-Q's quarter end falls inside a year
        # that has not ended yet (the last year *ended* by then is the one before).
        fye = company.fiscal_year_end if company else None
        year, quarter = fiscal_period(date.fromisoformat(meta.period_end), fye,
                                      bool(company and company.week_based))
        meta.fiscal_year = year
        if meta.fiscal_quarter is None and doc_type in ("10-Q", "earnings"):
            meta.fiscal_quarter = quarter
    elif meta.fiscal_year is None and meta.filing_date:
        in_progress = doc_type not in _ANNUAL
        meta.fiscal_year = fiscal_year_for(meta.filing_date, company, in_progress=in_progress)
    return meta


def _learn_company(
    table: CompanyTable, name: str, ticker: str | None, aliases: list[str], fiscal_year_end: str | None
) -> Company | None:
    """The table's company for a sidecar line, after adding what the line says about it."""
    company = table.by_name(name) or (ticker and table.by_ticker(ticker)) or None
    if not (ticker or aliases or fiscal_year_end):
        return company
    if company is None:
        return table.add(name=name, ticker=ticker, aliases=aliases, fiscal_year_end=fiscal_year_end)
    # Known company: a ticker the line gives may be a former one, so it is added, not made primary.
    new_names = [n for n in (name, *aliases) if table.by_name(n) is None]
    return table.add(key=company.key, tickers=[ticker] if ticker else [], aliases=new_names,
                     fiscal_year_end=fiscal_year_end)


# --- helpers -------------------------------------------------------------------------------


def _with_company(meta: DocumentMeta, company: Company | None) -> DocumentMeta:
    if company is None:
        return meta
    return replace(meta, company=company.name, ticker=company.ticker, aliases=list(company.aliases))


def _nominal_end(year: int, month: int, day: int) -> date:
    return date(year, month, min(day, calendar.monthrange(year, month)[1]))  # 02-29 in other years


def _iso_date(value: Any, doc_id: str) -> str | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(str(value)).isoformat()
    except ValueError:
        raise ValueError(f"{doc_id}: {value!r} is not a date (YYYY-MM-DD)") from None


def _year(value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not str(value).isdigit() or not 1900 <= int(value) <= 2200:
        raise ValueError(f"{value!r} is not a year")
    return int(value)


def _text(record: dict[str, Any], key: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"missing or empty {key!r}")
    return value.strip()
