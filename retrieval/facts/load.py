"""Facts files into the store: companyfacts JSON, and the inline XBRL of HTML filings.

A file already stored with the same sha256 is skipped; a changed one replaces its facts. The
company comes from the company table by CIK (then by name); one the table does not know is
learned, with a fiscal calendar read from its own annual facts.
"""

from __future__ import annotations

from pathlib import Path

from finrag.retrieval.routing.companies import Company, CompanyTable
from finrag.retrieval.facts.companyfacts import read_companyfacts
from finrag.retrieval.facts.ixbrl import read_inline_facts
from finrag.retrieval.facts.model import Fact, FactsError
from finrag.retrieval.facts.store import FactStore, infer_calendar


def company_for(table: CompanyTable, cik: str, name: str, facts: list[Fact],
                fiscal_year_end: str | None = None) -> Company:
    known = next((c for c in table.all() if c.cik == cik), None) or (
        table.by_name(name) if name else None)
    if known is not None and known.cik == cik and known.fiscal_year_end:
        return known
    fye, week_based = infer_calendar(facts)
    values = {"cik": cik, "fiscal_year_end": (known.fiscal_year_end if known else None)
              or fiscal_year_end or fye}
    if known is None or not known.fiscal_year_end:
        values["week_based"] = week_based
    if known is not None:
        return table.add(key=known.key, **values)
    if not name:
        raise FactsError(f"CIK {cik}: no company name in the file and none in the company table")
    return table.add(name=_title(name), **values)


def load_companyfacts(store: FactStore, path: Path, sha256: str,
                      table: CompanyTable) -> tuple[str, int | None]:
    """(source, facts added), or (source, None) when this very file is stored already."""
    info, facts = read_companyfacts(path)
    source = f"companyfacts:{info['cik']}"
    if store.source_sha(source) == sha256:
        return source, None
    company = company_for(table, info["cik"], info["entity_name"], facts)
    return source, store.add(source, sha256, company, facts)


def load_inline(store: FactStore, path: Path, doc_id: str, sha256: str,
                table: CompanyTable) -> tuple[str, int | None]:
    """The inline XBRL facts of an HTML filing; (source, 0) when it has none. The accession and
    filing date, which the HTML does not state, come from the companyfacts rows of the same
    filing (form and fiscal focus) when those are stored."""
    source = f"ixbrl:{doc_id}"
    if store.source_sha(source) == sha256:
        return source, None
    try:
        info, facts = read_inline_facts(path, source=source)
    except FactsError:
        return source, 0  # an HTML filing without inline XBRL (an old one, an exhibit)
    if not info.get("cik"):
        return source, 0
    accession, filed = store.filing_of(info["cik"], info.get("form"), info.get("fiscal_year"),
                                       info.get("fiscal_period"))
    best: dict[tuple, Fact] = {}
    for f in facts:  # the same figure in a table and, rounded, in the prose: keep the precise one
        key = (f.concept, f.unit, f.start, f.end, f.dimensions_key)
        if key not in best or _precision(f) > _precision(best[key]):
            best[key] = f
    facts = [Fact(**{**f.__dict__, "accession": accession, "filed": filed}) for f in best.values()]
    company = company_for(table, info["cik"], info.get("entity_name") or "", facts,
                          info.get("fiscal_year_end"))
    return source, store.add(source, sha256, company, facts)


def _precision(f: Fact) -> float:
    return float("inf") if f.decimals is None else f.decimals


def _title(name: str) -> str:
    """"NVIDIA CORP" -> "Nvidia Corp": an upper-case entity name read as a company name."""
    return name.title() if name.isupper() else name
