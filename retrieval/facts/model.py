"""One XBRL fact as finrag keeps it, whatever file it was read from."""

from __future__ import annotations

from dataclasses import dataclass


class FactsError(ValueError):
    """A facts file that cannot be read (malformed JSON, not a companyfacts file, no facts)."""


@dataclass(frozen=True)
class Fact:
    cik: str  # 10 digits
    concept: str  # taxonomy-prefixed: "us-gaap:Revenues"
    unit: str  # "USD", "USD/shares", "shares", "pure"
    end: str  # ISO date: the instant, or the last day of the period
    value: float
    start: str | None = None  # ISO date; None for an instant (a balance-sheet value)
    form: str | None = None  # the filing that reported it: 10-K, 10-Q, 10-K/A, 8-K, …
    accession: str | None = None  # 0001045810-24-000029
    filed: str | None = None  # ISO date the filing was filed
    filing_fy: int | None = None  # the filing's own fiscal focus, as SEC tags it
    filing_fp: str | None = None  # FY, Q1, Q2, Q3
    dimensions: tuple[tuple[str, str], ...] = ()  # (axis, member); () = consolidated
    decimals: int | None = None  # -6: rounded to millions; None: exact or unknown
    source: str = ""  # "companyfacts" or "ixbrl:<doc_id>"

    @property
    def dimensions_key(self) -> str:
        return ";".join(f"{axis}={member}" for axis, member in sorted(self.dimensions))


def edgar_url(cik: str | None, accession: str | None) -> str | None:
    """The filing's index page on SEC EDGAR, built from CIK and accession number."""
    if not cik or not accession or not cik.isdigit():  # "KEY:3M": a company known without a CIK
        return None
    return (f"https://www.sec.gov/Archives/edgar/data/{int(cik)}/"
            f"{accession.replace('-', '')}/{accession}-index.htm")
