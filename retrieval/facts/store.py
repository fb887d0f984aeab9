"""The facts table, in the index's SQLite beside the documents.

Every filed value is kept (a restated value and the one it replaced are two rows with their
own accession and filing date), and each under its source: two filings stating the same value
are two rows, so removing one filing leaves the other's; readers take the latest filed. A
company's row (name, key, calendar) is the first one stored for its CIK: a later file cannot
rename or re-calendar it. Each fact is placed on its
company's own fiscal calendar when it is stored: ``fiscal_year`` is named after the calendar
year the fiscal year ends in, ``fiscal_quarter`` is the quarter a period closes (None for a
full year), and ``period`` says what the value covers:

    FY       a full fiscal year (340-380 days)      Q      one quarter (80-100 days)
    H1/YTD9  six / nine months to date              instant  a balance at a quarter end
    other    any other span or date
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import date
from typing import Any, Iterable, Protocol

from finrag.retrieval.routing.calendars import fiscal_period, is_quarter_end, quarter_ending
from finrag.retrieval.routing.companies import Company
from finrag.retrieval.facts.model import Fact

_SCHEMA = """
CREATE TABLE IF NOT EXISTS fact_companies (
    cik TEXT PRIMARY KEY,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    ticker TEXT,
    fiscal_year_end TEXT NOT NULL,
    week_based INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS fact_files (
    source TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL,
    cik TEXT NOT NULL,
    facts INTEGER NOT NULL,
    ingested_at TEXT NOT NULL DEFAULT (datetime('now'))
);
"""
_FACTS = """
CREATE TABLE IF NOT EXISTS facts (
    id INTEGER PRIMARY KEY,
    cik TEXT NOT NULL,
    concept TEXT NOT NULL,
    unit TEXT NOT NULL,
    start TEXT NOT NULL,          -- '' for an instant
    end TEXT NOT NULL,
    value REAL NOT NULL,
    decimals INTEGER,
    form TEXT NOT NULL,
    accession TEXT NOT NULL,      -- '' when the file did not say
    filed TEXT NOT NULL,
    filing_fy INTEGER,
    filing_fp TEXT,
    dimensions TEXT NOT NULL,     -- '' = consolidated; else "axis=member;…"
    period TEXT NOT NULL,
    fiscal_year INTEGER,
    fiscal_quarter INTEGER,
    source TEXT NOT NULL,
    UNIQUE (cik, concept, unit, start, end, accession, dimensions, source)
)"""
_FACTS_INDEX = "CREATE INDEX IF NOT EXISTS facts_lookup ON facts(cik, concept, period, fiscal_year)"
_SCHEMA += f"{_FACTS};\n{_FACTS_INDEX};\n"


@dataclass(frozen=True)
class StoredFact:
    """A fact as read back: the filed values plus its place on the company's calendar."""

    cik: str
    concept: str
    unit: str
    start: str | None
    end: str
    value: float
    decimals: int | None
    form: str
    accession: str | None
    filed: str
    dimensions: str
    period: str
    fiscal_year: int | None
    fiscal_quarter: int | None
    source: str


@dataclass(frozen=True)
class FactCompany:
    cik: str
    key: str
    name: str
    ticker: str | None
    fiscal_year_end: str
    week_based: bool


def period_kind(start: str | None, end: str, fye: str, week_based: bool) -> str:
    end_day = date.fromisoformat(end)
    if not start:
        return "instant" if is_quarter_end(end_day, fye, week_based) else "other"
    days = (end_day - date.fromisoformat(start)).days
    for kind, low, high in (("Q", 80, 100), ("H1", 170, 195), ("YTD9", 260, 285),
                            ("FY", 340, 380)):
        if low <= days <= high:
            return kind
    return "other"


def place(start: str | None, end: str, fye: str, week_based: bool) -> tuple[str, int, int | None]:
    """(period kind, fiscal year, fiscal quarter closed) of a fact's dates."""
    kind = period_kind(start, end, fye, week_based)
    end_day = date.fromisoformat(end)
    year, _ = fiscal_period(end_day, fye, week_based)
    quarter = None if kind in ("FY", "other") else quarter_ending(end_day, year, fye)
    return kind, year, quarter


def infer_calendar(facts: Iterable[Fact]) -> tuple[str, bool]:
    """A company's fiscal year end ("MM-DD", week-based?) from the ends of its annual facts,
    for a company the table does not know: the commonest month, and whether the day moves."""
    ends = [date.fromisoformat(f.end) for f in facts
            if f.start and f.form and f.form.startswith("10-K")
            and 340 <= (date.fromisoformat(f.end) - date.fromisoformat(f.start)).days <= 380]
    if not ends:
        return "12-31", False
    middle = sorted(ends, key=lambda d: (d.month - 7) % 12 * 100 + d.day)[len(ends) // 2]
    week_based = len({(d.month, d.day) for d in ends}) > 1
    return f"{middle.month:02d}-{middle.day:02d}", week_based


class FactLookup(Protocol):
    """The facts store as the pipeline reads it: whether it holds facts, and a company."""

    available: bool

    def company(self, key: str) -> Any:
        ...


class FactStore(FactLookup):
    """The facts of an index. ``add`` replaces what an earlier ingest of the same source
    stored (re-ingest is idempotent); readers never see a half-written file."""

    def __init__(self, db: sqlite3.Connection | None, *, readonly: bool = False,
                 readable: frozenset[str] | None = None, public: bool = True):
        """``readable``: a caller's readable documents; then only their facts (statement tables,
        inline XBRL) are read, and SEC companyfacts (EDGAR's, public) only when ``public``.
        None: every fact. Reads only: the filter is in every query."""
        self.db = db
        if db is not None and not readonly:
            self.db.executescript(_SCHEMA)
            self._migrate()
        self.available = db is not None and self._has_table()
        self._scope, self._scope_args = "", []
        if readable is not None:
            # the document a source belongs to: 'table:DOC#part', 'ixbrl:DOC' -> DOC
            doc = ("substr(source, instr(source, ':') + 1, CASE instr(source, '#') WHEN 0 THEN "
                   "length(source) ELSE instr(source, '#') - instr(source, ':') - 1 END)")
            docs = sorted(readable)
            self._scope = (f" AND ((source LIKE 'companyfacts:%' AND ?) OR "
                           f"(source NOT LIKE 'companyfacts:%' AND {doc} IN "
                           f"({','.join('?' * len(docs))})))")
            self._scope_args = [int(public), *docs]

    def _has_table(self) -> bool:
        row = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='facts'").fetchone()
        return row is not None

    def _migrate(self) -> None:
        """Facts tables made before a fact's source was part of its key: rebuilt with it."""
        (sql,), = self.db.execute("SELECT sql FROM sqlite_master WHERE type='table' AND "
                                  "name='facts'")
        if "dimensions, source)" in sql:
            return
        columns = ("id, cik, concept, unit, start, end, value, decimals, form, accession, "
                   "filed, filing_fy, filing_fp, dimensions, period, fiscal_year, "
                   "fiscal_quarter, source")
        if not self.db.in_transaction:
            self.db.execute("BEGIN IMMEDIATE")  # the DDL too: all of it or none
        with self.db:
            self.db.execute("ALTER TABLE facts RENAME TO facts_before_sources")
            self.db.execute("DROP INDEX IF EXISTS facts_lookup")
            self.db.execute(_FACTS)
            self.db.execute(_FACTS_INDEX)
            self.db.execute(f"INSERT INTO facts ({columns}) SELECT {columns} "
                            "FROM facts_before_sources")
            self.db.execute("DROP TABLE facts_before_sources")

    # writing -------------------------------------------------------------------------
    def source_sha(self, source: str) -> str | None:
        if not self.available:
            return None
        row = self.db.execute("SELECT sha256 FROM fact_files WHERE source=?", (source,)).fetchone()
        return row[0] if row else None

    def add(self, source: str, sha256: str, company: Company, facts: list[Fact]) -> int:
        """Store one file's facts for ``company`` (its calendar places them; a company stored
        before under its CIK keeps its row and calendar); returns how many rows are new."""
        if not company.cik:
            raise ValueError(f"{company.name}: a company needs a CIK to hold facts")
        fye, week_based = company.fiscal_year_end or "12-31", company.week_based
        if recorded := self.recorded_company(company.cik):  # its facts stay on one calendar
            fye, week_based = recorded.fiscal_year_end, recorded.week_based
        rows = []
        for f in facts:
            try:
                kind, year, quarter = place(f.start, f.end, fye, week_based)
            except ValueError:
                continue  # a date that is not a date: nothing to place it on
            # a fact may name a part of the file ("table:<doc>#p12": the page it was read from)
            where = f.source if f.source.startswith(source + "#") else source
            rows.append((f.cik, f.concept, f.unit, f.start or "", f.end, f.value, f.decimals,
                         f.form or "", f.accession or "", f.filed or "", f.filing_fy,
                         f.filing_fp, f.dimensions_key, kind, year, quarter, where))
        with self.db:
            self.db.execute("DELETE FROM facts WHERE source=? OR substr(source, 1, ?)=?",
                            (source, len(source) + 1, source + "#"))
            self.db.execute(
                "INSERT OR IGNORE INTO fact_companies VALUES (?, ?, ?, ?, ?, ?)",
                (company.cik, company.key, company.name, company.ticker, fye, int(week_based)))
            before = self.db.total_changes
            self.db.executemany(
                "INSERT OR IGNORE INTO facts (cik, concept, unit, start, end, value, decimals, "
                "form, accession, filed, filing_fy, filing_fp, dimensions, period, fiscal_year, "
                "fiscal_quarter, source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
            added = self.db.total_changes - before
            self.db.execute("INSERT OR REPLACE INTO fact_files (source, sha256, cik, facts) "
                            "VALUES (?, ?, ?, ?)", (source, sha256, company.cik, added))
        return added

    def remove_sources(self, sources: list[str]) -> int:
        """Delete the facts stored from these sources (and their parts, ``source#…``);
        returns how many went."""
        if not self._has_table():
            return 0
        removed = 0
        with self.db:
            for source in sources:
                removed += self.db.execute(
                    "DELETE FROM facts WHERE source=? OR substr(source, 1, ?)=?",
                    (source, len(source) + 1, source + "#")).rowcount
                self.db.execute("DELETE FROM fact_files WHERE source=?", (source,))
        return removed

    def recorded_company(self, cik: str) -> FactCompany | None:
        """The company stored for a CIK, with or without facts (every caller's)."""
        if not self.available:
            return None
        row = self.db.execute("SELECT cik, key, name, ticker, fiscal_year_end, week_based FROM "
                              "fact_companies WHERE cik=?", (cik.zfill(10),)).fetchone()
        return FactCompany(*row[:5], bool(row[5])) if row else None

    # reading -------------------------------------------------------------------------
    def companies(self) -> list[FactCompany]:
        if not self.available:
            return []
        # a company learned from a filing whose statements held no fact has nothing to answer
        return [FactCompany(c, k, n, t, fye, bool(w)) for c, k, n, t, fye, w in
                self.db.execute("SELECT cik, key, name, ticker, fiscal_year_end, week_based "
                                "FROM fact_companies AS c WHERE EXISTS (SELECT 1 FROM facts "
                                f"WHERE facts.cik = c.cik{self._scope}) ORDER BY name",
                                self._scope_args)]

    def company(self, key_or_cik: str) -> FactCompany | None:
        return next((c for c in self.companies() if key_or_cik in (c.key, c.cik)), None)

    def lookup(self, cik: str, concepts: list[str], *, periods: tuple[str, ...],
               fiscal_years: list[int] | None = None, fiscal_quarter: int | None = None,
               consolidated: bool = True) -> list[StoredFact]:
        """Every filed value of ``concepts`` (taxonomy-prefixed) for the company, oldest filing
        first; only facts without dimensions unless ``consolidated=False``."""
        if not self.available or not concepts:
            return []
        sql = (f"SELECT cik, concept, unit, start, end, value, decimals, form, accession, filed, "
               f"dimensions, period, fiscal_year, fiscal_quarter, source FROM facts WHERE cik=? "
               f"AND concept IN ({','.join('?' * len(concepts))}) "
               f"AND period IN ({','.join('?' * len(periods))})")
        args: list[Any] = [cik, *concepts, *periods]
        if fiscal_years:
            sql += f" AND fiscal_year IN ({','.join('?' * len(fiscal_years))})"
            args += fiscal_years
        if fiscal_quarter is not None:
            sql += " AND fiscal_quarter=?"
            args.append(fiscal_quarter)
        if consolidated:
            sql += " AND dimensions=''"
        sql += self._scope + " ORDER BY filed, accession"
        args += self._scope_args
        return [StoredFact(r[0], r[1], r[2], r[3] or None, r[4], r[5], r[6], r[7], r[8] or None,
                           r[9], r[10], r[11], r[12], r[13], r[14])
                for r in self.db.execute(sql, args)]

    def filing_of(self, cik: str, form: str | None, fiscal_year: int | None,
                  fiscal_period: str | None) -> tuple[str | None, str | None]:
        """(accession, filing date) of a company's filing known by its form and fiscal focus
        (the first one filed: an amendment has its own form)."""
        if not self.available or not (form and fiscal_year and fiscal_period):
            return None, None
        row = self.db.execute(
            "SELECT accession, filed FROM facts WHERE cik=? AND form=? AND filing_fy=? AND "
            f"filing_fp=? AND accession!=''{self._scope} ORDER BY filed LIMIT 1",
            (cik, form, fiscal_year, fiscal_period, *self._scope_args)).fetchone()
        return (row[0], row[1]) if row else (None, None)

    def fiscal_years(self, cik: str) -> list[int]:
        if not self.available:
            return []
        return [y for (y,) in self.db.execute(
            f"SELECT DISTINCT fiscal_year FROM facts WHERE cik=? AND period='FY'{self._scope} "
            "ORDER BY fiscal_year", (cik, *self._scope_args))]

    def counts(self) -> dict[str, Any]:
        if not self.available:
            return {"facts": 0, "companies": 0, "files": 0}
        (facts,), = self.db.execute(f"SELECT count(*) FROM facts WHERE 1{self._scope}",
                                    self._scope_args)
        (files,), = self.db.execute(f"SELECT count(DISTINCT source) FROM facts WHERE 1"
                                    f"{self._scope}", self._scope_args) if self._scope else \
            self.db.execute("SELECT count(*) FROM fact_files")
        return {"facts": facts, "companies": len(self.companies()), "files": files}

