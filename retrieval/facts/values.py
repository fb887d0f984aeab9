"""A value the facts answer with, and a whole answer from the facts: what each figure names
(concept, period on the company's fiscal calendar, filing, link, derivation)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from finrag.retrieval.facts.concepts import Metric

TABLE_PREFIX = "table:"  # concept of a line read from a PDF's statement table: table:<metric key>


def table_concept(metric: Metric) -> str:
    return TABLE_PREFIX + metric.key


def table_source(source: str) -> tuple[str | None, int | None]:
    """(doc_id, page) of a fact read from a statement table ("table:<doc_id>#p<N>")."""
    if not source.startswith(TABLE_PREFIX):
        return None, None
    doc, _, page = source[len(TABLE_PREFIX):].partition("#p")
    return doc, int(page) if page.isdigit() else None


@dataclass
class FactValue:
    company: str
    ticker: str | None
    cik: str
    metric: str
    label: str
    concept: str
    value: float
    unit: str
    period: str  # FY | Q | instant
    fiscal_year: int
    fiscal_quarter: int | None
    start: str | None
    end: str
    form: str
    accession: str | None
    filed: str
    url: str | None
    derived: bool = False
    formula: str | None = None
    first_filed: dict[str, Any] | None = None
    doc_id: str | None = None  # a value read from a PDF's statement table: its document and page
    page: int | None = None
    first_year: int | None = None  # a value over fiscal years (a mean, a CAGR): the first one

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def period_label(self) -> str:
        if self.first_year is not None:
            return f"FY{self.first_year}–FY{self.fiscal_year}"
        if self.period == "FY":
            return f"FY{self.fiscal_year} (year ended {self.end})"
        if self.period == "Q":
            return f"Q{self.fiscal_quarter} FY{self.fiscal_year} (quarter ended {self.end})"
        when = "end of " + (f"FY{self.fiscal_year}" if self.fiscal_quarter == 4
                            else f"Q{self.fiscal_quarter} FY{self.fiscal_year}")
        return f"as of {self.end} ({when})"


@dataclass
class FactsResult:
    route: str
    text: str
    values: list[FactValue] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # what was asked and is not in the facts
    requested: int = 0
    verdicts: list[str] = field(default_factory=list)  # the judged lines the text opens with
