"""Embedded demo corpus: look-alike 10-K and 10-Q PDFs for four fictional companies.

A fresh machine with no data and no network can still run the finrag demo. This module writes a
small, deterministic set of SEC-style filings. The companies are invented, and their documents are
deliberately hard to tell apart:

* every filing follows the same section template and shares most boilerplate wording;
* two companies (Lumenfield Software and Brightquarry Software) sell nearly the same product,
  so their filings differ mainly in names and figures;
* Harlow & Finch Stores has a fiscal year ending January 31 ("fiscal 2024" ended January 31,
  2024, so its first quarter of fiscal 2025 ended April 30, 2024);
* Quillon Flow Technologies was called Quillon Pump & Valve Company until March 2023, and its
  fiscal 2022 report still carries the old name.

This is the setting in which chunk retrieval pulls the wrong company's text, which is the
"cross-document chunk confusion" that finrag is built to handle.

Files written to ``out_dir``:

* ``<KEY>_<YEAR>_10K.pdf`` and ``<KEY>_<YEAR>Q<N>_10Q.pdf`` (the FinanceBench file-name convention);
* ``documents.jsonl``: one metadata record per PDF (the ``DocumentMeta`` fields plus
  ``fiscal_year_end``);
* ``facts.json``: figures known by construction, with the exact sentence or table row and the
  1-based page it is printed on;
* ``questions.jsonl``: demo questions, including look-alike pairs that have different answers;
* ``manifest.json``: seed, generator version and file hashes, so that a complete corpus is reused.

Figures come from ``random.Random`` seeded with strings, which is stable across runs and unaffected
by PYTHONHASHSEED. The PDF dates are fixed to the filing date and no file ID is written, so the
same seed gives the same bytes.

Usage: ``python -m retrieval.demo_corpus OUT_DIR [--seed N] [--force]``.
"""

from __future__ import annotations

import argparse
import calendar
import hashlib
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

import pymupdf

GENERATOR_VERSION = 1
MANIFEST_NAME = "manifest.json"
METADATA_NAME = "documents.jsonl"
FACTS_NAME = "facts.json"
QUESTIONS_NAME = "questions.jsonl"

FISCAL_YEARS = (2022, 2023, 2024)
# (company key, fiscal year, fiscal quarter) of the quarterly reports in the corpus.
QUARTERLY_FILINGS = (("LUMENFIELD", 2024, 2), ("HARLOWFINCH", 2025, 1))


# --------------------------------------------------------------------------------------------
# Companies
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Company:
    """A fictional registrant. Financial ratios are the centre of the seeded ranges."""

    key: str  # FinanceBench-style file-name key: uppercase letters only
    name: str
    short: str
    ticker: str
    sector: str
    industry: str  # "software" | "retail" | "industrial": selects the wording pools
    exchange: str
    fye_month: int  # the fiscal year ends on the last day of this month
    state: str
    hq: str
    hq_city: str
    phone: str
    domain: str
    founded: int
    ein: str
    file_number: str
    auditor: str
    ceo: str
    cfo: str
    products: tuple[str, str, str]
    base_revenue: int  # USD millions, the year before the first report
    growth: tuple[float, float]
    gross_margin: float
    rd_ratio: float
    sga_ratio: float
    tax_rate: float
    diluted_shares: float  # millions
    former_name: str | None = None
    renamed_on: date | None = None

    def legal_name(self, on: date) -> str:
        """The registrant's name as printed in a filing made on ``on``."""
        if self.former_name and self.renamed_on and on < self.renamed_on:
            return self.former_name
        return self.name

    @property
    def aliases(self) -> list[str]:
        names = [self.former_name] if self.former_name else []
        return names + [self.short]


COMPANIES = (
    Company(
        key="LUMENFIELD", name="Lumenfield Software, Inc.", short="Lumenfield", ticker="LMFD",
        sector="Information Technology", industry="software",
        exchange="Nasdaq Global Select Market", fye_month=12, state="Delaware",
        hq="500 Harbor View Drive, Suite 1200, San Mateo, California 94404",
        hq_city="San Mateo, California", phone="(650) 555-0142", domain="lumenfield.com",
        founded=2009, ein="27-4419083", file_number="001-39142", auditor="Marston Kell LLP",
        ceo="Dana Whitcombe", cfo="Arjun Pillai",
        products=("Lumen Plan", "Lumen Close", "Lumen Insight"),
        base_revenue=2840, growth=(0.07, 0.15), gross_margin=0.735, rd_ratio=0.215,
        sga_ratio=0.345, tax_rate=0.21, diluted_shares=148.6,
    ),
    Company(
        key="BRIGHTQUARRY", name="Brightquarry Software, Inc.", short="Brightquarry",
        ticker="BQRY", sector="Information Technology", industry="software",
        exchange="Nasdaq Global Select Market", fye_month=12, state="Delaware",
        hq="2200 Riverside Parkway, Suite 800, Austin, Texas 78741",
        hq_city="Austin, Texas", phone="(512) 555-0187", domain="brightquarry.com",
        founded=2011, ein="45-2280671", file_number="001-39377", auditor="Aldous & Reyes LLP",
        ceo="Marisol Okafor", cfo="Peter Lindqvist",
        products=("Quarry Plan", "Quarry Close", "Quarry Insight"),
        base_revenue=2610, growth=(0.09, 0.18), gross_margin=0.725, rd_ratio=0.23,
        sga_ratio=0.35, tax_rate=0.20, diluted_shares=132.2,
    ),
    Company(
        key="HARLOWFINCH", name="Harlow & Finch Stores, Inc.", short="Harlow & Finch",
        ticker="HFST", sector="Consumer Discretionary", industry="retail",
        exchange="New York Stock Exchange", fye_month=1, state="Delaware",
        hq="1400 Commerce Boulevard, Columbus, Ohio 43219", hq_city="Columbus, Ohio",
        phone="(614) 555-0119", domain="harlowfinch.com", founded=1987, ein="31-1187420",
        file_number="001-11483", auditor="Marston Kell LLP", ceo="Graham Ashdown",
        cfo="Lena Horvath", products=("Harlow & Finch Home", "Finch Kitchen", "Ashby Lane"),
        base_revenue=9350, growth=(-0.03, 0.06), gross_margin=0.352, rd_ratio=0.006,
        sga_ratio=0.255, tax_rate=0.245, diluted_shares=61.8,
    ),
    Company(
        key="QUILLON", name="Quillon Flow Technologies, Inc.", short="Quillon", ticker="QUIL",
        sector="Industrials", industry="industrial", exchange="New York Stock Exchange",
        fye_month=12, state="Pennsylvania", hq="700 Foundry Street, Pittsburgh, Pennsylvania 15222",
        hq_city="Pittsburgh, Pennsylvania", phone="(412) 555-0163", domain="quillon.com",
        founded=1954, ein="25-0661937", file_number="001-04218", auditor="Aldous & Reyes LLP",
        ceo="Howard Brennan", cfo="Yvonne Castellanos",
        products=("Quillon centrifugal pumps", "Tessel control valves", "FlowSight instruments"),
        base_revenue=5180, growth=(0.02, 0.09), gross_margin=0.355, rd_ratio=0.032,
        sga_ratio=0.178, tax_rate=0.225, diluted_shares=88.4,
        former_name="Quillon Pump & Valve Company", renamed_on=date(2023, 3, 14),
    ),
)
COMPANY_BY_KEY = {c.key: c for c in COMPANIES}

# Per-industry operating profile: staff per USD million of revenue, share of staff abroad,
# cash / capex as a share of revenue, revolving credit facility, seasonality of quarterly revenue.
PROFILES: dict[str, dict[str, Any]] = {
    "software": {"staff": 1.55, "intl": (28, 34), "cash": (0.30, 0.45), "capex": (0.015, 0.025),
                 "revolver": 750, "quarters": (0.236, 0.246, 0.254, 0.264)},
    "retail": {"staff": 3.3, "intl": (2, 4), "cash": (0.05, 0.09), "capex": (0.03, 0.04),
               "revolver": 1000, "quarters": (0.221, 0.232, 0.238, 0.309)},
    "industrial": {"staff": 2.7, "intl": (45, 52), "cash": (0.07, 0.11), "capex": (0.025, 0.035),
                   "revolver": 1250, "quarters": (0.238, 0.252, 0.247, 0.263)},
}


# --------------------------------------------------------------------------------------------
# Calendar
# --------------------------------------------------------------------------------------------


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def fiscal_year_end(company: Company, fiscal_year: int) -> date:
    """Fiscal years are named after the calendar year in which they end."""
    return _month_end(fiscal_year, company.fye_month)


def fiscal_quarter_end(company: Company, fiscal_year: int, quarter: int) -> date:
    index = fiscal_year * 12 + company.fye_month - 1 - 12 + 3 * quarter
    year, month0 = divmod(index, 12)
    return _month_end(year, month0 + 1)


def _weekday_on_or_after(day: date) -> date:
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return day


def _long_date(day: date) -> str:
    return f"{day:%B} {day.day}, {day.year}"


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IncomeStatement:
    """USD millions, except shares (millions) and per-share amounts (USD)."""

    revenue: int
    cost_of_revenue: int
    research_development: int
    sga: int
    other_income: int
    income_tax: int
    basic_shares: float
    diluted_shares: float

    @property
    def gross_profit(self) -> int:
        return self.revenue - self.cost_of_revenue

    @property
    def operating_expenses(self) -> int:
        return self.research_development + self.sga

    @property
    def operating_income(self) -> int:
        return self.gross_profit - self.operating_expenses

    @property
    def pretax_income(self) -> int:
        return self.operating_income + self.other_income

    @property
    def net_income(self) -> int:
        return self.pretax_income - self.income_tax

    @property
    def basic_eps(self) -> float:
        return round(self.net_income / self.basic_shares, 2)

    @property
    def diluted_eps(self) -> float:
        return round(self.net_income / self.diluted_shares, 2)

    @property
    def gross_margin(self) -> float:
        return 100 * self.gross_profit / self.revenue

    @property
    def operating_margin(self) -> float:
        return 100 * self.operating_income / self.revenue

    @property
    def tax_rate(self) -> float:
        return 100 * self.income_tax / self.pretax_income


def _statement(company: Company, revenue: int, diluted: float, rng: random.Random) -> IncomeStatement:
    cost = round(revenue * (1 - company.gross_margin + rng.uniform(-0.012, 0.012)))
    rd = round(revenue * company.rd_ratio * rng.uniform(0.95, 1.05))
    sga = round(revenue * company.sga_ratio * rng.uniform(0.96, 1.04))
    other = round(revenue * rng.uniform(-0.006, 0.010))
    pretax = revenue - cost - rd - sga + other
    tax = round(pretax * (company.tax_rate + rng.uniform(-0.02, 0.02)))
    basic = round(diluted * (1 - rng.uniform(0.008, 0.02)), 1)
    return IncomeStatement(revenue, cost, rd, sga, other, tax, basic, diluted)


def _growth(rng: random.Random, bounds: tuple[float, float]) -> float:
    """A growth rate within ``bounds`` but never so small that "increased 0%" would be printed."""
    while True:
        rate = rng.uniform(*bounds)
        if abs(rate) >= 0.015:
            return rate


def annual_statements(company: Company, seed: int) -> dict[int, IncomeStatement]:
    """Statements for every fiscal year a filing mentions, one year either side of the reports."""
    rng = random.Random(f"{seed}:{company.key}:annual")
    revenue = company.base_revenue * rng.uniform(0.96, 1.04)
    shares = company.diluted_shares
    statements = {}
    for year in range(FISCAL_YEARS[0] - 1, FISCAL_YEARS[-1] + 2):
        if statements:
            revenue *= 1 + _growth(rng, company.growth)
            shares *= 1 + rng.uniform(-0.02, 0.012)
        statements[year] = _statement(company, round(revenue), round(shares, 1), rng)
    return statements


def quarter_statement(company: Company, annual: IncomeStatement, fiscal_year: int, quarter: int,
                      seed: int) -> IncomeStatement:
    rng = random.Random(f"{seed}:{company.key}:{fiscal_year}Q{quarter}")
    share = PROFILES[company.industry]["quarters"][quarter - 1] * rng.uniform(0.985, 1.015)
    return _statement(company, round(annual.revenue * share), annual.diluted_shares, rng)


def _operating_data(company: Company, stmt: IncomeStatement, period: str, seed: int) -> dict[str, Any]:
    """Non-GAAP and balance-sheet figures used in the narrative (not recorded as facts)."""
    rng = random.Random(f"{seed}:{company.key}:{period}:operating")
    profile = PROFILES[company.industry]
    rev = stmt.revenue
    data: dict[str, Any] = {
        "employees": int(round(rev * profile["staff"] * rng.uniform(0.97, 1.03), -1)),
        "intl_pct": rng.randint(*profile["intl"]),
        "cash": round(rev * rng.uniform(*profile["cash"])),
        "op_cash": round(stmt.net_income * rng.uniform(1.2, 1.6)),
        "capex": round(rev * rng.uniform(*profile["capex"])),
        "buyback": int(round(stmt.net_income * rng.uniform(0.3, 0.7), -1)),
        "patents": rng.randint(40, 75) if company.industry == "software" else rng.randint(380, 520),
        "holders": rng.randint(90, 900),
    }
    if company.industry == "software":
        data.update(customers=int(round(rev * rng.uniform(1.55, 1.75), -1)),
                    big_customers=round(rev * rng.uniform(0.28, 0.33)),
                    arr=round(rev * rng.uniform(1.06, 1.10)), nrr=rng.randint(108, 118),
                    countries=rng.randint(55, 70), sub_pct=rng.randint(88, 92))
    elif company.industry == "retail":
        data.update(stores=rng.randint(596, 624), states=rng.randint(41, 44),
                    new_stores=rng.randint(8, 19), closed_stores=rng.randint(5, 14),
                    ecom_pct=round(rng.uniform(27.0, 33.0), 1), members=round(rng.uniform(10.5, 12.5), 1),
                    vendors=round(rng.randint(1250, 1550), -1), dividend=f"{rng.uniform(0.9, 1.1):.2f}")
    else:
        orders = round(rev * rng.uniform(0.97, 1.08))
        data.update(orders=orders, book_to_bill=f"{orders / rev:.2f}",
                    backlog=round(rev * rng.uniform(0.38, 0.46)), aftermarket_pct=rng.randint(33, 38),
                    plants=rng.randint(24, 29), plant_countries=rng.randint(10, 12),
                    debt=int(round(rev * rng.uniform(0.2, 0.26), -1)), dividend=f"{rng.uniform(1.3, 1.6):.2f}")
    return data


# --------------------------------------------------------------------------------------------
# Number formatting
# --------------------------------------------------------------------------------------------


def _usd(millions: int) -> str:
    return f"${millions:,}"


def _cell(value: int, dollar: bool = False) -> str:
    """A statement cell: thousands separators, parentheses for negatives, optional dollar sign."""
    text = f"{abs(value):,}"
    text = f"({text})" if value < 0 else text
    return f"${text}" if dollar else text


def _pct(value: float) -> str:
    return f"{abs(value):.1f}%" if abs(value) < 1 else f"{round(abs(value))}%"


def _change(cur: float, prev: float) -> tuple[str, str]:
    """("increased" | "decreased", "8%") for the change from ``prev`` to ``cur``."""
    rate = 100 * (cur - prev) / prev
    return ("increased" if rate >= 0 else "decreased"), _pct(rate)


# --------------------------------------------------------------------------------------------
# Document model and layout
# --------------------------------------------------------------------------------------------

PAGE_W, PAGE_H = 612, 792
LEFT, RIGHT, TOP, BOTTOM = 54, 558, 60, 740
CONTENT_W = RIGHT - LEFT
FOOTER_Y = 764
TABLE_COLS = (LEFT, 318, 438, RIGHT)  # x positions of the vertical rules
ROW_H = 14.0


@dataclass(frozen=True)
class Style:
    font: str  # a PDF base-14 font name as pymupdf spells it
    size: float
    leading: float
    before: float = 0.0
    after: float = 6.0
    align: str = "left"
    keep_with_next: bool = False


STYLES = {
    "body": Style("tiro", 9.5, 11.3, 0, 4.5),
    "risk": Style("tibi", 9.5, 11.3, 3, 2, keep_with_next=True),
    "part": Style("tibo", 12, 15, 10, 6, "center", keep_with_next=True),
    "item": Style("tibo", 11, 14, 8, 4, keep_with_next=True),
    "sub": Style("tibo", 9.5, 11.3, 4, 2, keep_with_next=True),
    "caption": Style("tibo", 10, 12.4, 6, 2, "center", keep_with_next=True),
    "caption_note": Style("tiit", 9, 11, 0, 5, "center", keep_with_next=True),
    "cover": Style("tiro", 10, 12.4, 0, 3, "center"),
    "cover_bold": Style("tibo", 10.5, 13, 4, 3, "center"),
    "cover_form": Style("tibo", 16, 20, 6, 6, "center"),
    "cover_name": Style("tibo", 18, 22, 12, 2, "center"),
    "cover_note": Style("tiit", 8.5, 10.5, 0, 8, "center"),
    "cover_text": Style("tiro", 9, 11, 0, 5),
    "toc_title": Style("tibo", 12, 15, 0, 10, "center"),
    "toc_part": Style("tibo", 10, 13, 6, 2),
}


@dataclass
class Fact:
    metric: str
    value: int | float
    unit: str
    text: str
    fiscal_year: int
    fiscal_quarter: int | None
    source: str  # "text" (a narrative sentence) or "table" (a statement row)
    page: int = 0


@dataclass(eq=False)
class Text:
    text: str
    style: str = "body"
    facts: list[Fact] = field(default_factory=list)
    page: int = 0


@dataclass(eq=False)
class TocEntry:
    label: str
    title: str
    target: Text


@dataclass(eq=False)
class StatementTable:
    header: tuple[str, str, str]
    rows: list[tuple[str, str, str]]
    facts: list[Fact] = field(default_factory=list)
    page: int = 0

    @property
    def height(self) -> float:
        return ROW_H * (1 + len(self.rows))


class PageBreak:
    pass


Block = Text | TocEntry | StatementTable | PageBreak


@lru_cache(maxsize=None)
def _unit_width(text: str, font: str) -> float:
    return pymupdf.get_text_length(text, fontname=font, fontsize=1)


def _width(text: str, font: str, size: float) -> float:
    words = text.split(" ")
    return size * (sum(_unit_width(w, font) for w in words) + _unit_width(" ", font) * (len(words) - 1))


@lru_cache(maxsize=None)
def _wrap(text: str, font: str, size: float, width: float) -> tuple[str, ...]:
    lines: list[str] = []
    current: list[str] = []
    used = 0.0
    space = _unit_width(" ", font) * size
    for word in text.split():
        word_w = _unit_width(word, font) * size
        if current and used + space + word_w > width:
            lines.append(" ".join(current))
            current, used = [], 0.0
        used += (space if current else 0.0) + word_w
        current.append(word)
    if current:
        lines.append(" ".join(current))
    return tuple(lines)


TOC_TITLE_X = LEFT + 54
TOC_TITLE_W = CONTENT_W - 54 - 36


class _Layout:
    """Places blocks on pages. Each page is a list of drawing operations for ``_paint``.

    Headings stay with what follows them; paragraphs that carry facts are never split, so
    every fact sentence lies on one page; other paragraphs may break across pages.
    """

    def __init__(self) -> None:
        self.pages: list[list[tuple]] = []
        self._new_page()

    def _new_page(self) -> None:
        self.pages.append([])
        self.y = float(TOP)

    @property
    def _page_empty(self) -> bool:
        return not self.pages[-1]

    def run(self, blocks: list[Block]) -> list[list[tuple]]:
        for i, block in enumerate(blocks):
            if isinstance(block, PageBreak):
                if not self._page_empty:
                    self._new_page()
            elif isinstance(block, StatementTable):
                self._table(block)
            elif isinstance(block, TocEntry):
                self._toc(block)
            else:
                self._text(blocks, i)
        return self.pages

    def _lines(self, block: Text) -> tuple[str, ...]:
        style = STYLES[block.style]
        return _wrap(block.text, style.font, style.size, CONTENT_W)

    def _splittable(self, block: Text) -> bool:
        """Plain paragraphs of four or more lines may break, leaving two or more lines each side."""
        return not block.facts and not STYLES[block.style].keep_with_next and len(self._lines(block)) >= 4

    def _lead(self, blocks: list[Block], i: int) -> float:
        """Height that must fit on a page for block ``i`` to start there."""
        if i >= len(blocks):
            return 0.0
        block = blocks[i]
        if isinstance(block, StatementTable):
            return block.height
        if not isinstance(block, Text):
            return 0.0
        style = STYLES[block.style]
        lines = len(self._lines(block))
        height = style.before + style.leading * (min(lines, 2) if self._splittable(block) else lines)
        return height + (style.after + self._lead(blocks, i + 1) if style.keep_with_next else 0.0)

    def _text(self, blocks: list[Block], i: int) -> None:
        block = blocks[i]
        style = STYLES[block.style]
        lines = self._lines(block)
        take = len(lines)  # lines that go on the current page
        if not self._page_empty:
            needed = len(lines) * style.leading
            if style.keep_with_next:
                needed += style.after + self._lead(blocks, i + 1)
            room = BOTTOM - self.y - style.before
            fit = int(room // style.leading)
            if needed > room:
                if self._splittable(block) and fit >= 2:
                    take = min(fit, len(lines) - 2)
                else:
                    self._new_page()
        if not self._page_empty:
            self.y += style.before
        block.page = len(self.pages)
        top, segment = self.y, []
        for n, line in enumerate(lines):
            if n == take or self.y + style.leading > BOTTOM:
                if block.facts:
                    raise ValueError(f"paragraph with facts is taller than a page: {block.text[:60]}")
                self._emit(segment, top, style)
                self._new_page()
                top, segment = self.y, []
            segment.append(line)
            self.y += style.leading
        self._emit(segment, top, style)
        self.y += style.after

    def _emit(self, lines: list[str], top: float, style: Style) -> None:
        """One drawing operation per run of left-aligned lines, one per centred line."""
        if style.align != "center":
            if lines:
                self.pages[-1].append(("text", LEFT, top + style.size, tuple(lines), style.font, style.size,
                                       style.leading))
            return
        for k, line in enumerate(lines):
            x = LEFT + (CONTENT_W - _width(line, style.font, style.size)) / 2
            self.pages[-1].append(("text", x, top + style.size + k * style.leading, (line,), style.font,
                                   style.size, style.leading))

    def _table(self, table: StatementTable) -> None:
        if self.y + table.height > BOTTOM and not self._page_empty:
            self._new_page()
        table.page = len(self.pages)
        self.pages[-1].append(("table", table, self.y))
        self.y += table.height + 12

    def _toc(self, entry: TocEntry) -> None:
        lines = _wrap(entry.title, "tiro", 10, TOC_TITLE_W)
        if self.y + 13 * len(lines) > BOTTOM:
            raise ValueError("table of contents does not fit on one page")
        if entry.label:
            self.pages[-1].append(("text", LEFT, self.y + 10, (entry.label,), "tiro", 10, 13))
        self.pages[-1].append(("text", TOC_TITLE_X, self.y + 10, lines, "tiro", 10, 13))
        self.y += 13 * len(lines)
        self.pages[-1].append(("pageref", entry.target, self.y - 3))
        self.y += 2


def _draw_table(shape: pymupdf.Shape, table: StatementTable, top: float) -> None:
    """A fully ruled grid (so ``find_tables`` sees it), shaded header, right-aligned figures."""
    bottom = top + table.height
    shape.draw_rect(pymupdf.Rect(LEFT, top, RIGHT, top + ROW_H))
    shape.finish(color=None, fill=(0.88, 0.88, 0.88), width=0)
    for row in range(len(table.rows) + 2):
        y = top + row * ROW_H
        shape.draw_line((LEFT, y), (RIGHT, y))
    for x in TABLE_COLS:
        shape.draw_line((x, top), (x, bottom))
    shape.finish(color=(0, 0, 0), width=0.6)
    for r, cells in enumerate([table.header, *table.rows]):
        baseline = top + r * ROW_H + 10.2
        font = "tibo" if r == 0 else "tiro"
        for c, text in enumerate(cells):
            if c == 0:
                x = TABLE_COLS[0] + 4
            else:
                x = TABLE_COLS[c + 1] - 4 - _width(text, font, 9)
            shape.insert_text((x, baseline), text, fontname=font, fontsize=9)


def _paint(pages: list[list[tuple]], metadata: dict[str, str]) -> bytes:
    """Draw the laid-out pages. One shape per page, committed once, keeps this fast."""
    doc = pymupdf.open()
    for number, operations in enumerate(pages, start=1):
        page = doc.new_page(width=PAGE_W, height=PAGE_H)
        shape = page.new_shape()
        for op in operations:
            if op[0] == "text":
                _, x, y, lines, font, size, leading = op
                shape.insert_text((x, y), list(lines), fontname=font, fontsize=size, lineheight=leading / size)
            elif op[0] == "table":
                _draw_table(shape, op[1], op[2])
            else:  # "pageref": the target's page number, right-aligned
                number_text = str(op[1].page)
                shape.insert_text((RIGHT - _width(number_text, "tiro", 10), op[2]), number_text,
                                  fontname="tiro", fontsize=10)
        if number > 1:
            label = str(number)
            shape.insert_text(((PAGE_W - _width(label, "tiro", 9)) / 2, FOOTER_Y), label,
                              fontname="tiro", fontsize=9)
        shape.commit()
    doc.set_metadata(metadata)
    data = doc.tobytes(garbage=3, deflate=True, no_new_id=True)
    doc.close()
    return data


# --------------------------------------------------------------------------------------------
# Wording
# --------------------------------------------------------------------------------------------
# Each entry is a tuple of variants; a filing picks one with its own seeded RNG, so filings share
# wording without being identical. Placeholders are filled from the filing's context.

COMMON: dict[str, tuple[str, ...]] = {
    "fls": (
        "This {report} contains forward-looking statements within the meaning of Section 27A of the "
        "Securities Act of 1933, as amended, and Section 21E of the Securities Exchange Act of 1934, as "
        "amended (the \"Exchange Act\"). All statements other than statements of historical fact are "
        "forward-looking statements, including statements regarding our future results of operations "
        "and financial position, business strategy, expected demand for our products, planned "
        "investments, and the plans and objectives of management for future operations. Words such as "
        "\"anticipate,\" \"believe,\" \"continue,\" \"could,\" \"estimate,\" \"expect,\" \"intend,\" \"may,\" "
        "\"plan,\" \"project,\" \"should\" and \"will\" are intended to identify forward-looking statements, "
        "although not all forward-looking statements contain these words.",
        "Statements in this {report} that are not historical facts are forward-looking statements within "
        "the meaning of the Private Securities Litigation Reform Act of 1995. These statements relate to, "
        "among other things, our expectations about revenue, margins, operating expenses, capital "
        "allocation, the demand environment and the effect of economic conditions on our customers. "
        "Forward-looking statements can often be identified by terms such as \"aim,\" \"anticipate,\" "
        "\"believe,\" \"estimate,\" \"expect,\" \"forecast,\" \"intend,\" \"outlook,\" \"plan,\" \"target\" and "
        "similar expressions.",
    ),
    "fls_risk": (
        "Forward-looking statements are based on management's current expectations and assumptions and "
        "are subject to risks and uncertainties that could cause actual results to differ materially, "
        "including those described in {risk_ref}, \"Risk Factors.\" You should not place undue reliance on "
        "forward-looking statements, which speak only as of the date of this report. Except as required "
        "by law, {short} undertakes no obligation to update any forward-looking statement to reflect "
        "events or circumstances after the date of this report.",
        "Actual results may differ materially from those expressed or implied by forward-looking "
        "statements because of the risks and uncertainties described in {risk_ref}, \"Risk Factors,\" and "
        "elsewhere in this report. Forward-looking statements reflect our views only as of the date they "
        "are made, and we assume no obligation to revise or update them, whether as a result of new "
        "information, future events or otherwise, except as required by law.",
    ),
    "fiscal_note": (
        "Our fiscal year ends on {fye_month_day}. Unless otherwise stated, references to fiscal {fy}, "
        "fiscal {fy_prev} and fiscal {fy_prev2} refer to the fiscal years ended {fy_end}, {fy_prev_end} "
        "and {fy_prev2_end}, respectively. Amounts in this report are in millions of U.S. dollars unless "
        "otherwise noted, and percentages are calculated from the underlying whole-dollar amounts.",
        "{short} reports on a fiscal year ending {fye_month_day}. In this report, \"fiscal {fy}\" means "
        "the fiscal year ended {fy_end}, \"fiscal {fy_prev}\" means the fiscal year ended {fy_prev_end} "
        "and \"fiscal {fy_prev2}\" means the fiscal year ended {fy_prev2_end}.",
    ),
    "human_capital": (
        "We believe that our success depends on our ability to attract, develop and retain talented "
        "people. We conduct an employee engagement survey each year and review the results with the "
        "Compensation Committee of our Board of Directors. Our compensation programs combine "
        "competitive base pay with annual incentives and, for many employees, equity awards.",
        "Attracting and retaining skilled employees is central to our strategy. The Compensation "
        "Committee of our Board of Directors oversees our human capital programs, including talent "
        "development, succession planning, pay and benefits. We measure employee engagement through an "
        "annual survey.",
    ),
    "available_info": (
        "Our website address is www.{domain}. Our Annual Reports on Form 10-K, Quarterly Reports on "
        "Form 10-Q, Current Reports on Form 8-K and amendments to those reports are available free of "
        "charge on our website as soon as reasonably practicable after we file them with the Securities "
        "and Exchange Commission (the \"SEC\"), and at www.sec.gov. Information on our website is not "
        "incorporated by reference into this report.",
    ),
    "risk_intro": (
        "Investing in our common stock involves a high degree of risk. You should carefully consider "
        "the risks and uncertainties described below, together with the other information in this "
        "{report}, including our consolidated financial statements and related notes, before making an "
        "investment decision. The risks described below are not the only ones we face; additional risks "
        "that we do not currently know about or that we currently believe to be immaterial may also "
        "impair our business.",
        "Our business, financial condition and results of operations are subject to a number of risks. "
        "The following discussion describes the risks that we believe are material to {short} and to "
        "holders of our common stock. These risks should be read together with Management's Discussion "
        "and Analysis of Financial Condition and Results of Operations and the consolidated financial "
        "statements and related notes in this {report}.",
    ),
    "cyber_program": (
        "Risk management and strategy. We maintain a cybersecurity program designed to identify, assess "
        "and manage material risks from cybersecurity threats. The program is integrated into our "
        "enterprise risk management process and is aligned with the NIST Cybersecurity Framework. It "
        "includes vulnerability management, security awareness training, penetration tests performed by "
        "third parties, assessments of the security practices of significant vendors, and an incident "
        "response plan that we test through tabletop exercises. As of the date of this report, we are "
        "not aware of any cybersecurity incident that has materially affected, or is reasonably likely "
        "to materially affect, our business strategy, results of operations or financial condition.",
    ),
    "cyber_governance": (
        "Governance. Our Chief Information Security Officer, who has more than twenty years of "
        "experience in information security, leads the program and reports to our Chief Financial "
        "Officer. The Audit Committee of our Board of Directors oversees risks from cybersecurity "
        "threats and receives reports from the Chief Information Security Officer at least quarterly, "
        "including on significant incidents, the results of assessments and the status of remediation "
        "efforts. The full Board receives an update on the program at least annually.",
        "Governance. Our cybersecurity program is led by our Chief Information Security Officer, who "
        "has held senior security roles at several public companies and reports to our Chief Financial "
        "Officer. Management reports on cybersecurity risk to the Audit Committee of the Board of "
        "Directors each quarter and to the full Board at least once a year, and significant incidents "
        "are escalated to the Audit Committee chair under our incident response plan.",
    ),
    "legal": (
        "From time to time we are involved in legal proceedings and claims arising in the ordinary "
        "course of business, including matters relating to commercial contracts, intellectual property, "
        "employment and product liability. Although the outcome of these matters cannot be predicted "
        "with certainty, we do not believe that the resolution of any pending matter will have a "
        "material adverse effect on our financial position, results of operations or cash flows.",
        "We are subject to various legal proceedings, claims and regulatory inquiries that arise in the "
        "ordinary course of our business. We record accruals for loss contingencies when it is probable "
        "that a liability has been incurred and the amount can be reasonably estimated. We do not "
        "believe that any currently pending proceeding will have a material adverse effect on our "
        "business, financial condition or results of operations.",
    ),
    "market": (
        "Our common stock is listed on the {exchange} under the symbol \"{ticker}.\" As of {record_date}, "
        "there were approximately {holders} holders of record of our common stock. Because many of our "
        "shares are held by brokers and other institutions on behalf of stockholders, we are unable to "
        "estimate the total number of beneficial owners represented by these holders of record.",
    ),
    "repurchases": (
        "Our Board of Directors has authorized a program to repurchase shares of our common stock in "
        "the open market or in privately negotiated transactions. During fiscal {fy}, we repurchased "
        "shares for an aggregate of {buyback} million. The timing and amount of repurchases depend on "
        "market conditions, our cash position and other considerations, and the program may be "
        "suspended or discontinued at any time.",
    ),
    "results_intro": (
        "The following discussion compares our results for fiscal {fy} with fiscal {fy_prev}. A "
        "discussion of fiscal {fy_prev} compared with fiscal {fy_prev2} is included in Part II, Item 7 of "
        "our Annual Report on Form 10-K for fiscal {fy_prev}.",
        "This section discusses our results of operations for fiscal {fy} compared with fiscal {fy_prev}. "
        "For a comparison of fiscal {fy_prev} with fiscal {fy_prev2}, see Item 7 of our Annual Report on "
        "Form 10-K for the fiscal year ended {fy_prev_end}.",
    ),
    "liquidity_outlook": (
        "We believe that our existing cash, cash equivalents and marketable securities, together with "
        "cash provided by operations and amounts available under our revolving credit facility, will be "
        "sufficient to meet our working capital, capital expenditure and other liquidity requirements "
        "for at least the next twelve months and for the foreseeable future thereafter.",
        "Our principal sources of liquidity are cash generated from operations, our cash and "
        "investment balances and our revolving credit facility. We expect these sources to be adequate "
        "to fund our operations, planned capital expenditures, share repurchases and other commitments "
        "over the next twelve months and beyond.",
    ),
    "critical_intro": (
        "The preparation of financial statements in conformity with U.S. generally accepted accounting "
        "principles (\"GAAP\") requires management to make estimates and assumptions that affect the "
        "reported amounts of assets, liabilities, revenue and expenses. We base our estimates on "
        "historical experience and on other assumptions that we believe are reasonable, and actual "
        "results may differ from these estimates. The estimates described below are those that we "
        "believe require the most significant judgment.",
    ),
    "critical_taxes": (
        "Income taxes. We are subject to income taxes in the United States and in foreign "
        "jurisdictions, and significant judgment is required in determining our worldwide provision "
        "for income taxes, evaluating uncertain tax positions and assessing whether deferred tax assets "
        "will be realized. We recognize the tax benefit of an uncertain position only if it is more "
        "likely than not to be sustained on examination by the taxing authorities.",
    ),
    "fx_risk": (
        "Foreign currency risk. A portion of our revenue and operating expenses is denominated in "
        "currencies other than the U.S. dollar, principally the euro, the British pound and the Canadian "
        "dollar. We enter into foreign currency forward contracts from time to time to reduce the "
        "effect of exchange rate changes on certain balance sheet exposures. A hypothetical 10% change "
        "in foreign currency exchange rates would not have had a material effect on our operating "
        "income for fiscal {fy}.",
        "Foreign currency exchange risk. Our international subsidiaries generally use their local "
        "currency as their functional currency, and we are therefore exposed to changes in exchange "
        "rates when we translate their results into U.S. dollars. We do not currently hedge this "
        "translation exposure. We estimate that a 10% adverse change in exchange rates would not have "
        "had a material effect on our results of operations for fiscal {fy}.",
    ),
    "statements_intro": (
        "The following consolidated statements of operations have been audited by {auditor}, our "
        "independent registered public accounting firm.",
    ),
    "note_basis": (
        "{name} and its wholly owned subsidiaries (collectively, \"{short}\" or the \"Company\") prepare "
        "consolidated financial statements in accordance with GAAP. All intercompany balances and "
        "transactions have been eliminated in consolidation. Certain prior-year amounts have been "
        "reclassified to conform to the current-year presentation.",
        "The consolidated financial statements include the accounts of {name} and its wholly owned "
        "subsidiaries and have been prepared in accordance with GAAP. Intercompany transactions and "
        "balances have been eliminated. Preparing financial statements requires management to make "
        "estimates and assumptions that affect the amounts reported, and actual results could differ.",
    ),
    "note_eps": (
        "Basic net income per share is computed by dividing net income by the weighted-average number "
        "of shares of common stock outstanding during the period. Diluted net income per share also "
        "reflects the potential dilution from stock options, restricted stock units and shares issuable "
        "under our employee stock purchase plan, computed using the treasury stock method. "
        "Weighted-average diluted shares outstanding were {dil_shares} million in {cur_label}, compared "
        "with {dil_shares_prev} million in {prev_label}.",
    ),
    "controls": (
        "Evaluation of disclosure controls and procedures. Our management, with the participation of "
        "our Chief Executive Officer and Chief Financial Officer, evaluated the effectiveness of our "
        "disclosure controls and procedures, as defined in Rules 13a-15(e) and 15d-15(e) under the "
        "Exchange Act, as of the end of the period covered by this report. Based on that evaluation, "
        "our Chief Executive Officer and Chief Financial Officer concluded that our disclosure controls "
        "and procedures were effective at the reasonable assurance level as of {period_end}.",
    ),
    "icfr": (
        "Management's annual report on internal control over financial reporting. Management is "
        "responsible for establishing and maintaining adequate internal control over financial "
        "reporting. Under the supervision of our Chief Executive Officer and Chief Financial Officer, "
        "management assessed the effectiveness of our internal control over financial reporting as of "
        "{period_end} based on the criteria in Internal Control - Integrated Framework (2013) issued by "
        "the Committee of Sponsoring Organizations of the Treadway Commission, and concluded that it was "
        "effective. {auditor} has issued an attestation report on the effectiveness of our internal "
        "control over financial reporting.",
    ),
    "controls_change": (
        "Changes in internal control over financial reporting. There were no changes in our internal "
        "control over financial reporting during the quarter ended {period_end} that have materially "
        "affected, or are reasonably likely to materially affect, our internal control over financial "
        "reporting.",
    ),
    "trading_plans": (
        "During the three months ended {period_end}, none of our directors or officers adopted or "
        "terminated a \"Rule 10b5-1 trading arrangement\" or a \"non-Rule 10b5-1 trading arrangement,\" as "
        "those terms are defined in Item 408 of Regulation S-K.",
    ),
    "proxy": (
        "The information required by this item is incorporated by reference to our definitive proxy "
        "statement for the {proxy_year} Annual Meeting of Stockholders, which we expect to file with the "
        "SEC within 120 days after the end of fiscal {fy}.",
    ),
    "proxy_short": (
        "Incorporated by reference to our proxy statement for the {proxy_year} Annual Meeting of "
        "Stockholders.",
        "The information required by this item is incorporated by reference to our {proxy_year} proxy "
        "statement.",
    ),
    "code_of_conduct": (
        "Our Code of Business Conduct and Ethics applies to all directors, officers and employees and "
        "is available on our website, where we will also disclose any amendment or waiver.",
    ),
    "exhibits": (
        "Financial statement schedules have been omitted because they are not required or the "
        "information is shown in the financial statements or notes. Exhibits: Exhibit 3.1, Restated "
        "Certificate of Incorporation; Exhibit "
        "3.2, Amended and Restated Bylaws; Exhibit 10.1, Credit "
        "Agreement among {name}, the lenders party thereto and the administrative agent; Exhibit 10.2, "
        "{equity_plan}; Exhibit 21.1, Subsidiaries of the Registrant; Exhibit 23.1, Consent of {auditor}; "
        "Exhibits 31.1 and 31.2, Certifications pursuant to Rule 13a-14(a); Exhibit 32.1, Certification "
        "pursuant to 18 U.S.C. Section 1350; Exhibit 101, Inline XBRL documents.",
    ),
    "signatures": (
        "Pursuant to the requirements of Section 13 or 15(d) of the Securities Exchange Act of 1934, "
        "the registrant has duly caused this report to be signed on its behalf by the undersigned, "
        "thereunto duly authorized. Registrant: {name} By: /s/ {ceo_name}, Chief Executive Officer; "
        "/s/ {cfo_name}, Chief Financial Officer. Date: {filing_date}.",
    ),
}

RISK_CLOSERS = (
    "Any of these developments could adversely affect our business, financial condition and results "
    "of operations.",
    "If any of these risks were to occur, our revenue, operating results and cash flows could be "
    "materially harmed.",
    "As a result, our results of operations could fluctuate significantly, and the trading price of "
    "our common stock could decline.",
    "These factors could have a material adverse effect on our business and financial results.",
)

COMMON_RISKS: dict[str, tuple[str, str]] = {
    "macro": (
        "Adverse macroeconomic conditions, including inflation and higher interest rates, could reduce "
        "demand for our products and increase our costs.",
        "Our results depend on the level of spending by our customers, which is affected by general "
        "economic conditions in the United States and abroad. Periods of elevated inflation, rising "
        "interest rates, reduced access to credit, bank failures, geopolitical conflict or recession "
        "fears have in the past caused, and may in the future cause, customers to delay or reduce "
        "purchases. At the same time, inflation in wages, freight, materials and services has increased "
        "our costs, and we may not be able to offset these increases through pricing or productivity.",
    ),
    "international": (
        "Our international operations subject us to additional risks, including fluctuations in "
        "foreign currency exchange rates.",
        "We generate a portion of our revenue outside the United States and have operations and "
        "employees in several countries. International operations expose us to currency fluctuations, "
        "differing legal and regulatory requirements, trade restrictions and sanctions, potentially "
        "adverse tax consequences, difficulties in staffing and managing foreign operations, and "
        "political and economic instability. A stronger U.S. dollar reduces the dollar value of revenue "
        "that we earn in other currencies.",
    ),
    "cyber": (
        "A cyberattack or other security incident could disrupt our operations, compromise "
        "confidential information and damage our reputation.",
        "We rely on information technology systems to process transactions, manage our operations and "
        "report our financial results, and we store confidential information about our customers, "
        "employees and business partners. Threat actors, including organized criminal groups and "
        "nation-state actors, regularly attempt to gain unauthorized access to systems like ours "
        "through ransomware, phishing and the exploitation of software vulnerabilities, including "
        "vulnerabilities in products supplied by our vendors. Although we maintain security controls "
        "and incident response plans, these measures may not prevent or detect every incident, and the "
        "costs of investigating and remediating an incident, notifying affected parties and responding "
        "to litigation or regulatory inquiries could be significant.",
    ),
    "personnel": (
        "We depend on our senior management team and on our ability to attract and retain qualified "
        "personnel.",
        "Our success depends on the continued service of our executive officers and other key "
        "employees, including {ceo_name}, our Chief Executive Officer. The loss of one or more key "
        "employees could disrupt our operations, and competition for experienced engineers, sales "
        "personnel and managers is intense. If we are unable to hire, train and retain qualified "
        "personnel, or if our compensation costs increase significantly to do so, our ability to "
        "execute our strategy could be impaired.",
    ),
    "tax": (
        "Changes in tax laws, or unanticipated tax liabilities, could adversely affect our effective tax "
        "rate and results of operations.",
        "We are subject to income and other taxes in the United States and in foreign jurisdictions. "
        "Our effective tax rate could be affected by changes in the mix of earnings among jurisdictions "
        "with different statutory rates, changes in the valuation of deferred tax assets, the outcome of "
        "tax examinations and changes in tax laws, including the global minimum tax under the OECD "
        "Pillar Two framework and the requirement to capitalize and amortize research and "
        "experimental expenditures.",
    ),
    "controls": (
        "If we fail to maintain effective internal control over financial reporting, investors could "
        "lose confidence in the accuracy of our financial statements.",
        "Section 404 of the Sarbanes-Oxley Act requires us to evaluate and report on our internal "
        "control over financial reporting and requires our independent registered public accounting "
        "firm to attest to its effectiveness. Designing and maintaining effective controls requires "
        "significant resources, particularly as we implement new systems and integrate acquired "
        "businesses. If we identify a material weakness, we could be required to restate prior period "
        "financial statements, and the market price of our common stock could decline.",
    ),
    "debt": (
        "Our credit agreement contains restrictive covenants, and we may not be able to obtain "
        "additional financing on favorable terms.",
        "We are party to a revolving credit agreement that provides for borrowings of up to {revolver} "
        "million. The agreement contains covenants that limit our ability to incur additional "
        "indebtedness, create liens, make certain investments and pay dividends, and it requires us to "
        "maintain a maximum leverage ratio. A breach of these covenants could result in an event of "
        "default that permits the lenders to accelerate any outstanding borrowings. Higher interest "
        "rates have also increased the cost of borrowing, and future financing may not be available "
        "when needed or on acceptable terms.",
    ),
    "stock": (
        "The market price of our common stock has been and may continue to be volatile.",
        "The trading price of our common stock may fluctuate significantly in response to our quarterly "
        "results, changes in financial estimates by securities analysts, announcements by us or our "
        "competitors, changes in the valuation of comparable companies, sales of shares by insiders and "
        "general market conditions. Securities class action litigation has often followed periods of "
        "volatility in the market price of a company's securities, and such litigation could result in "
        "substantial costs and divert management's attention.",
    ),
}

RISK_GROUPS = (
    ("Risks Related to Our Business and Industry", ("industry", "macro", "international")),
    ("Risks Related to Technology and Cybersecurity", ("cyber",)),
    ("Risks Related to Our Workforce, Taxes and Legal Matters", ("personnel", "tax", "controls")),
    ("Risks Related to Our Indebtedness and Common Stock", ("debt", "stock")),
)

SOFTWARE: dict[str, Any] = {
    "overview": (
        "{name} (\"{short},\" the \"Company,\" \"we,\" \"us\" or \"our\") provides cloud-based software that "
        "helps finance teams plan, close and analyze the performance of their organizations. Our platform "
        "brings budgeting, forecasting, financial close, consolidation and reporting into a single "
        "subscription service that customers access through a web browser and mobile applications. We "
        "were incorporated in {state} in {founded} and are headquartered in {hq_city}.",
        "{name} (together with its subsidiaries, \"{short},\" \"we\" or \"our\") is a provider of "
        "subscription software for the office of the chief financial officer. Customers use our cloud "
        "platform to build budgets and forecasts, manage the monthly close, consolidate results across "
        "legal entities and report to management and boards. The Company was incorporated in {state} in "
        "{founded}, and our principal executive offices are located in {hq_city}.",
    ),
    "strategy": (
        "Our strategy is to expand within our existing customer base, win new customers in the "
        "mid-market and enterprise segments, and extend the platform into adjacent finance workflows. "
        "We sell multi-year subscriptions that are typically invoiced annually in advance, which gives "
        "us visibility into future revenue. In fiscal {fy} we continued to invest in product "
        "development, with a particular focus on forecasting features that use machine learning to "
        "suggest drivers and flag anomalies in plans.",
        "We grow by adding new customers, by selling additional products and seats to existing "
        "customers, and by expanding internationally. Subscriptions are generally sold for terms of one "
        "to three years and billed annually in advance. During fiscal {fy}, our product investments "
        "concentrated on predictive forecasting, automated account reconciliation and embedded "
        "analytics, and we expanded our partner ecosystem of systems integrators.",
    ),
    "business_outline": (
        ("Our Platform", ("product1", "product2", "product3")),
        ("Customers", ("customers",)),
        ("Competition", ("competition",)),
        ("Seasonality", ("seasonality",)),
        ("Intellectual Property", ("ip",)),
        ("Government Regulation", ("regulation",)),
    ),
    "product1": (
        "{p1} supports budgeting, rolling forecasts, workforce and capital planning, and scenario "
        "modeling. Finance teams use {p1} to replace spreadsheet-based processes with a governed model "
        "that business owners can update directly, and to compare plans with actual results as soon as "
        "the books are closed.",
        "{p1} is our planning product. It enables customers to build driver-based budgets and rolling "
        "forecasts, model headcount and capital expenditures, and evaluate alternative scenarios, with "
        "audit trails and approval workflows that satisfy the controls of public companies.",
    ),
    "product2": (
        "{p2} automates the financial close, including account reconciliations, intercompany "
        "eliminations, journal entry workflow and consolidation across currencies and legal entities. "
        "Customers use {p2} to shorten the close and to document controls for their auditors.",
        "{p2} manages the period-end close. It matches transactions, prepares account reconciliations, "
        "routes journal entries for approval and consolidates subsidiaries that report in different "
        "currencies, giving controllers a single view of close status.",
    ),
    "product3": (
        "{p3} provides dashboards, management reporting and board-ready packages drawn from the same "
        "data as plans and actual results, so that variances can be traced back to the underlying "
        "transactions.",
        "{p3} delivers reporting and analytics, including management dashboards, narrative variance "
        "analysis and packages for boards and lenders, using the data maintained in our planning and "
        "close products.",
    ),
    "customers": (
        "As of {period_end}, we had approximately {customers} customers in more than {countries} "
        "countries, including {big_customers} customers that each contributed more than $100,000 of "
        "annual recurring revenue. Our customers operate in a wide range of industries, including "
        "technology, healthcare, financial services, manufacturing and the public sector. No single "
        "customer accounted for more than 10% of our revenue in fiscal {fy}, {fy_prev} or {fy_prev2}.",
    ),
    "competition": (
        "The market for financial planning and close software is highly competitive and fragmented. We "
        "compete with large enterprise resource planning vendors that offer planning modules, with "
        "specialized cloud planning and close providers, and with spreadsheets and internally developed "
        "tools. The principal competitive factors in our market include breadth of functionality, ease "
        "of use, speed of implementation, scalability, integration with source systems, total cost of "
        "ownership and brand reputation. We believe we compete favorably on these factors.",
    ),
    "seasonality": (
        "We typically sign a higher proportion of new subscriptions and renewals in the fourth quarter "
        "of our fiscal year, reflecting the budget cycles of our customers. Because subscription "
        "revenue is recognized ratably over the contract term, this seasonality is reflected more "
        "strongly in billings and remaining performance obligations than in revenue.",
    ),
    "ip": (
        "We rely on a combination of copyright, trademark, trade secret and patent laws, "
        "confidentiality procedures and contractual restrictions to protect our intellectual property. "
        "As of {period_end}, we held {patents} issued U.S. patents and had additional applications "
        "pending. {short}, {p1}, {p2} and {p3} are trademarks of {name} or its subsidiaries.",
    ),
    "regulation": (
        "Our business is subject to laws and regulations concerning data privacy and security, "
        "including the EU General Data Protection Regulation and the California Consumer Privacy Act, "
        "as well as export controls and anti-corruption laws. We host customer data with third-party "
        "cloud providers in the United States, Europe and Australia and maintain SOC 1, SOC 2 and "
        "ISO 27001 certifications.",
    ),
    "workforce": (
        "As of {period_end}, we had approximately {employees} full-time employees, approximately "
        "{intl_pct}% of whom were located outside the United States. None of our employees in the "
        "United States is represented by a labor union, and we consider our relations with our "
        "employees to be good.",
    ),
    "properties": (
        "Our corporate headquarters is located in {hq_city}, where we lease office space under a lease "
        "that expires in {lease_end}. We also lease offices in North America, Europe and the "
        "Asia-Pacific region for sales, support and research and development. We believe that our "
        "facilities are adequate for our current needs and that suitable additional space will be "
        "available as needed.",
    ),
    "dividends": (
        "We have never declared or paid cash dividends on our common stock and do not anticipate paying "
        "cash dividends in the foreseeable future.",
    ),
    "mdna_overview": (
        "{short} provides a cloud-based platform for financial planning, close management and "
        "analytics. We generate revenue primarily from subscriptions, which accounted for approximately "
        "{sub_pct}% of total revenue in fiscal {fy}, and from professional services related to "
        "implementation and training. Our operating model emphasizes durable subscription growth and "
        "improving operating margins.",
        "We sell subscriptions to our cloud platform, together with implementation and training "
        "services. Subscription revenue represented approximately {sub_pct}% of total revenue in fiscal "
        "{fy}. Demand for our products is driven by the replacement of spreadsheets and legacy "
        "on-premises tools, and our results depend on new customer wins, renewals and expansion.",
    ),
    "key_metrics": (
        "We monitor annual recurring revenue (\"ARR\"), the number of customers contributing more than "
        "$100,000 of ARR, and dollar-based net revenue retention. ARR was {arr} million as of "
        "{period_end}. We had {big_customers} customers with ARR greater than $100,000, and our "
        "dollar-based net revenue retention rate was {nrr}%.",
        "Key metrics. As of {period_end}, ARR, which we define as the annualized value of subscription "
        "contracts in effect at the end of the period, was {arr} million, and dollar-based net revenue "
        "retention was {nrr}%. Customers contributing more than $100,000 of ARR numbered "
        "{big_customers}.",
    ),
    "revenue_up": (
        "The increase was driven primarily by growth in subscription revenue from new customers and "
        "expansion within our existing customer base, partially offset by lower professional services "
        "revenue as more implementations were delivered by partners.",
        "Growth reflected new customer additions, sales of additional products and seats to existing "
        "customers and price increases on renewals, partially offset by a decline in professional "
        "services revenue.",
    ),
    "revenue_down": (
        "The decrease reflected longer sales cycles and lower expansion within our existing customer "
        "base, as customers scrutinized software spending.",
    ),
    "margin_up": (
        "The improvement reflected the growing share of subscription revenue and lower hosting costs "
        "per customer following the migration of workloads to newer cloud infrastructure.",
    ),
    "margin_down": (
        "The decline reflected higher hosting costs and the amortization of capitalized software "
        "development costs, partially offset by the growing share of subscription revenue.",
    ),
    "rd_driver": (
        "The change reflected additional engineering headcount focused on forecasting and analytics "
        "features and higher stock-based compensation.",
        "The change was driven by investment in engineering personnel and in machine learning "
        "capabilities for our planning products.",
    ),
    "sga_driver": (
        "The change reflected investment in sales capacity and marketing programs, partially offset by "
        "efficiencies in general and administrative functions.",
        "The change was driven by higher sales commissions and marketing events, partially offset by "
        "lower facilities costs.",
    ),
    "critical": (
        "Revenue recognition. We recognize subscription revenue ratably over the contract term "
        "beginning on the date the platform is made available to the customer. For contracts with "
        "multiple performance obligations, we allocate the transaction price based on relative "
        "standalone selling prices, which requires judgment when services are not sold separately.",
        "Capitalized software development costs. We capitalize certain costs of developing software "
        "for our cloud platform during the application development stage and amortize them over an "
        "estimated useful life of three years. Judgment is required in determining when a project "
        "reaches the application development stage and in estimating its useful life.",
    ),
    "interest_risk": (
        "Interest rate risk. Our cash equivalents and marketable securities consist primarily of money "
        "market funds, U.S. Treasury securities and high-grade corporate bonds. A hypothetical 100 "
        "basis point change in interest rates would not have had a material effect on the fair value of "
        "our investment portfolio as of {period_end}. We had no borrowings outstanding under our "
        "revolving credit facility.",
    ),
    "revenue_policy": (
        "Revenue recognition. We derive revenue from subscriptions to our cloud platform and from "
        "professional services. Subscription revenue is recognized ratably over the contract term, "
        "generally one to three years, beginning when the service is made available. Professional "
        "services are recognized as the services are performed.",
    ),
    "equity_plan": "Amended and Restated Equity Incentive Plan",
}

RETAIL: dict[str, Any] = {
    "overview": (
        "{name} (\"{short},\" the \"Company,\" \"we\" or \"our\") is a specialty retailer of home "
        "furnishings, kitchenware, bedding and decor. As of {period_end}, we operated {stores} stores in "
        "{states} states and sold merchandise through our website, www.{domain}, and our mobile "
        "application. The Company was founded in {founded} and is headquartered in {hq_city}.",
        "{name} (collectively with its subsidiaries, \"{short},\" \"we\" or \"our\") sells home furnishings, "
        "kitchen and dining products, bedding and seasonal decor through {stores} stores in {states} "
        "states and through our e-commerce channels. We were founded in {founded} and our principal "
        "executive offices are located in {hq_city}.",
    ),
    "strategy": (
        "Our strategy is to offer distinctive, well-priced merchandise for the home, much of it under "
        "our own brands, in an inspiring store environment supported by convenient digital shopping. "
        "Our private-label brands {p2} and {p3} represent a growing share of sales and carry higher "
        "gross margins than national brands. In fiscal {fy} we continued to remodel stores, expand "
        "same-day fulfillment and invest in our loyalty program.",
        "We aim to be the destination for customers furnishing and refreshing their homes. Our "
        "priorities are to grow our owned brands, including {p2} and {p3}, to connect our stores and "
        "digital channels through services such as buy online, pick up in store, and to improve "
        "productivity in our supply chain.",
    ),
    "business_outline": (
        ("Merchandise", ("merchandise",)),
        ("Stores and E-commerce", ("stores_text",)),
        ("Customers and Marketing", ("customers",)),
        ("Sourcing and Distribution", ("sourcing",)),
        ("Competition", ("competition",)),
        ("Seasonality", ("seasonality",)),
        ("Trademarks", ("ip",)),
        ("Government Regulation", ("regulation",)),
    ),
    "merchandise": (
        "Our assortment spans furniture, bedding and bath, kitchen and dining, and decor and seasonal "
        "merchandise. Kitchen and dining, sold primarily under our {p2} brand, is our largest category, "
        "followed by bedding and bath. Owned brands, including {p1}, {p2} and {p3}, accounted for a "
        "majority of net sales in fiscal {fy}.",
        "We organize our merchandise into four categories: furniture; bedding and bath; kitchen and "
        "dining; and decor and seasonal. Our design teams develop products for our owned brands, "
        "including {p2} and {p3}, which we source from manufacturers to our specifications.",
    ),
    "stores_text": (
        "Our stores average approximately 24,000 square feet and are located primarily in suburban "
        "shopping centers and lifestyle centers. During fiscal {fy}, we opened {new_stores} stores and "
        "closed {closed_stores}. E-commerce sales, including orders picked up in our stores, represented "
        "{ecom_pct}% of net sales in fiscal {fy}.",
    ),
    "customers": (
        "Our loyalty program, Finch Rewards, had approximately {members} million active members as of "
        "{period_end}, and members accounted for most of our sales. We reach customers through our "
        "catalog, email, social media, digital advertising and our store associates, who offer design "
        "advice and in-home consultations.",
    ),
    "sourcing": (
        "We purchase merchandise from approximately {vendors} vendors, and a significant portion of our "
        "products is manufactured in Asia, primarily in China, Vietnam and India. Merchandise is "
        "distributed to stores and customers through three regional distribution centers and a network "
        "of third-party carriers.",
        "Our products are sourced from approximately {vendors} vendors in the United States and abroad, "
        "with most owned-brand merchandise produced in Asia. We operate three distribution centers that "
        "replenish our stores and fulfill e-commerce orders, supplemented by third-party logistics "
        "providers during peak periods.",
    ),
    "competition": (
        "The home furnishings market is highly competitive. We compete with department stores, mass "
        "merchants, warehouse clubs, home improvement retailers, specialty retailers and online "
        "marketplaces. We compete on the basis of design, quality, price, assortment, customer service "
        "and the convenience of our stores and digital channels.",
    ),
    "seasonality": (
        "Our business is seasonal, with a higher share of sales and a significantly higher share of "
        "operating income in the fourth fiscal quarter, which includes the holiday selling season from "
        "November through January. Working capital requirements peak in the third quarter as we build "
        "inventory for the holidays.",
    ),
    "ip": (
        "We own registered trademarks for {p1}, {p2}, {p3} and other brand names and logos, which we "
        "consider valuable to our business, and we protect these trademarks in the United States and in "
        "the countries where our products are manufactured.",
    ),
    "regulation": (
        "We are subject to laws and regulations relating to consumer protection, product safety, "
        "including the rules of the U.S. Consumer Product Safety Commission, imports and customs duties, "
        "advertising, data privacy, wage and hour practices and the accessibility of our stores and "
        "digital channels.",
    ),
    "workforce": (
        "As of {period_end}, we had approximately {employees} employees, of whom a majority worked part "
        "time in our stores. Staffing increases during the holiday season. None of our employees is "
        "represented by a labor union, and we consider our employee relations to be good.",
    ),
    "properties": (
        "We lease substantially all of our {stores} store locations under operating leases with initial "
        "terms generally of ten years and renewal options. We own our headquarters campus in {hq_city} "
        "and two of our three distribution centers. We believe our properties are suitable and adequate "
        "for our operations.",
    ),
    "dividends": (
        "We paid quarterly cash dividends totaling ${dividend} per share in fiscal {fy}. Future "
        "dividends are subject to the approval of our Board of Directors and will depend on our "
        "earnings, financial condition and capital requirements.",
    ),
    "mdna_overview": (
        "{short} is a specialty retailer of products for the home. Our results depend on consumer "
        "spending on home goods, which is influenced by housing turnover, household formation, interest "
        "rates and consumer confidence. Management evaluates performance using comparable sales, gross "
        "margin, operating margin and inventory turnover.",
        "We sell home furnishings, kitchenware and decor through stores and e-commerce. Demand in our "
        "categories is sensitive to the housing market and to discretionary spending, and our results "
        "are seasonal, with the largest share of sales and income in the fourth quarter.",
    ),
    "key_metrics": (
        "Comparable sales include sales from stores open for at least fourteen months and from our "
        "digital channels. In fiscal {fy}, {comp_phrase}. E-commerce sales represented {ecom_pct}% of "
        "net sales. We ended the year with {stores} stores.",
        "Key metrics. In fiscal {fy}, {comp_phrase}, and e-commerce sales were {ecom_pct}% of net sales. "
        "We opened {new_stores} stores and closed {closed_stores} during the year.",
    ),
    "revenue_up": (
        "The increase reflected higher comparable sales, led by the kitchen and dining and bedding "
        "categories, and sales from new stores, partially offset by store closures.",
        "Growth was driven by higher transaction counts in stores and online and by new stores, "
        "partially offset by lower average ticket in furniture.",
    ),
    "revenue_down": (
        "The decrease reflected lower comparable sales as customers reduced discretionary purchases of "
        "furniture and decor, partially offset by growth in kitchen and dining.",
        "The decline was driven by lower traffic in our stores and lower average ticket in furniture, "
        "partially offset by sales from new stores.",
    ),
    "margin_up": (
        "The improvement reflected lower inbound freight costs, a higher share of owned-brand "
        "merchandise and fewer promotional markdowns.",
    ),
    "margin_down": (
        "The decline reflected higher promotional markdowns to clear seasonal inventory and higher "
        "occupancy costs, partially offset by lower freight costs.",
    ),
    "rd_driver": (
        "Research and development consists of product design and development for our owned brands; "
        "the change reflected additional design personnel.",
    ),
    "sga_driver": (
        "The change reflected store payroll, marketing and investments in technology, partially offset "
        "by lower incentive compensation.",
        "The change was driven by wage rate increases in stores and distribution centers and higher "
        "digital marketing spending.",
    ),
    "critical": (
        "Inventory valuation. Merchandise inventories are stated at the lower of cost or net realizable "
        "value using the weighted-average cost method. We record reserves for estimated markdowns and "
        "for shrinkage between physical counts, which requires judgment about future demand, "
        "promotional activity and historical shrink rates.",
        "Impairment of store assets. We review store-level long-lived assets, including operating lease "
        "right-of-use assets, for impairment when events indicate that their carrying amounts may not be "
        "recoverable. Estimates of future store cash flows require judgment about sales growth, gross "
        "margin and operating costs.",
    ),
    "interest_risk": (
        "Interest rate risk. Borrowings under our revolving credit facility bear interest at variable "
        "rates. We had no borrowings outstanding as of {period_end}, and a hypothetical 100 basis point "
        "change in interest rates would not have had a material effect on our interest income or "
        "expense.",
    ),
    "revenue_policy": (
        "Revenue recognition. We recognize revenue from store sales at the point of sale and from "
        "e-commerce orders when the merchandise is delivered to or picked up by the customer. Revenue "
        "is recorded net of estimated returns, and revenue from gift cards is recognized when the cards "
        "are redeemed.",
    ),
    "equity_plan": "Long-Term Incentive Plan",
}

INDUSTRIAL: dict[str, Any] = {
    "overview": (
        "{name} (\"{short},\" the \"Company,\" \"we\" or \"our\") designs, manufactures and services pumps, "
        "valves and flow-measurement instruments used to move and control liquids and gases in water, "
        "energy, chemical and general industrial applications. The Company was founded in {founded} and "
        "is headquartered in {hq_city}.",
        "{name} (together with its subsidiaries, \"{short},\" \"we\" or \"our\") is a global manufacturer of "
        "flow-control equipment, including pumps, control valves and instrumentation, together with the "
        "aftermarket parts and services that keep them running. We were founded in {founded}, and our "
        "principal executive offices are located in {hq_city}.",
    ),
    "strategy": (
        "Our strategy is to grow in attractive end markets such as water infrastructure and energy "
        "transition, to expand our aftermarket and digital monitoring services, and to improve margins "
        "through pricing discipline and our lean operating system. In fiscal {fy} we continued to "
        "consolidate manufacturing facilities and to invest in products that reduce energy consumption.",
        "We focus on engineered products in which reliability and efficiency matter to our customers, "
        "on a growing installed base that generates aftermarket revenue, and on operational excellence. "
        "During fiscal {fy} we launched new energy-efficient pump models and expanded the FlowSight "
        "remote monitoring service.",
    ),
    "rename": (
        "On {renamed_on}, we changed our corporate name from {former} to {name} to reflect the "
        "broader flow-control and instrumentation portfolio that we have built. Our common stock "
        "continues to trade on the {exchange} under the symbol \"{ticker}.\"",
    ),
    "business_outline": (
        ("Segments and Products", ("segments", "product1", "product2")),
        ("Customers and End Markets", ("customers",)),
        ("Backlog", ("backlog_text",)),
        ("Raw Materials", ("materials",)),
        ("Competition", ("competition",)),
        ("Seasonality", ("seasonality",)),
        ("Intellectual Property", ("ip",)),
        ("Environmental and Other Regulation", ("regulation",)),
    ),
    "segments": (
        "We report two segments. Fluid Handling designs and manufactures {p1} and related aftermarket "
        "parts. Flow Control designs and manufactures {p2} and {p3}. Aftermarket parts and services "
        "accounted for approximately {aftermarket_pct}% of revenue in fiscal {fy}.",
    ),
    "product1": (
        "{p1} include centrifugal, positive-displacement and submersible pumps used in municipal water "
        "and wastewater systems, oil and gas production, chemical processing and industrial plants. "
        "Many of our pumps are engineered to customer specifications and have service lives of twenty "
        "years or more.",
    ),
    "product2": (
        "{p2} regulate the flow and pressure of liquids and gases in process plants, pipelines and "
        "power generation facilities. {p3} measure flow, pressure and level and transmit data to "
        "control systems and to our cloud-based monitoring service.",
        "Our Flow Control segment sells {p2}, actuators and positioners, together with {p3}, which "
        "measure flow rates and detect leaks and equipment wear, enabling predictive maintenance.",
    ),
    "customers": (
        "We sell to municipalities, engineering and construction firms, original equipment "
        "manufacturers and end users in the water and wastewater, energy, chemical and general "
        "industrial markets, both directly and through independent distributors. No single customer "
        "accounted for more than 10% of our revenue in fiscal {fy}.",
    ),
    "backlog_text": (
        "Backlog, which consists of firm orders that have not yet been shipped, was {backlog} million "
        "as of {period_end}. We expect to ship approximately 85% of this backlog within the next twelve "
        "months. Orders were {orders} million in fiscal {fy}, for a book-to-bill ratio of "
        "{book_to_bill}.",
    ),
    "materials": (
        "The principal raw materials we use are carbon and stainless steel, iron and specialty alloy "
        "castings, and electronic components. We purchase these materials from multiple suppliers and "
        "generally have not experienced significant shortages, although lead times and prices for "
        "castings and electronic components increased in recent years.",
    ),
    "competition": (
        "Our markets are competitive and include large multinational manufacturers as well as regional "
        "companies and specialists. We compete on the basis of product performance and reliability, "
        "energy efficiency, application engineering, delivery times, the breadth of our aftermarket "
        "service network and price.",
    ),
    "seasonality": (
        "Our business is moderately seasonal. Revenue is typically highest in the fourth quarter, when "
        "customers complete capital projects before year end, and lowest in the first quarter.",
    ),
    "ip": (
        "We hold approximately {patents} patents worldwide and numerous trademarks, including {short}, "
        "Tessel and FlowSight. While we consider our intellectual property important, we do not believe "
        "that the loss of any single patent or trademark would materially affect our business.",
    ),
    "regulation": (
        "Our operations are subject to environmental, health and safety laws, including laws governing "
        "air emissions, wastewater discharges and the handling and disposal of hazardous materials. We "
        "are also subject to export control and sanctions regulations. We do not expect compliance "
        "costs to have a material effect on our capital expenditures or results of operations.",
    ),
    "workforce": (
        "As of {period_end}, we had approximately {employees} employees, approximately {intl_pct}% of "
        "whom were located outside the United States. Approximately 20% of our employees are covered by "
        "collective bargaining agreements or works councils, and we consider our employee relations to "
        "be good.",
    ),
    "properties": (
        "We operate {plants} manufacturing facilities in {plant_countries} countries, as well as service "
        "centers and sales offices. Our principal manufacturing facilities are located in Pennsylvania, "
        "Texas, Germany, Italy and China. We own our headquarters in {hq_city}. We believe our "
        "facilities are suitable and adequate for our current needs.",
    ),
    "dividends": (
        "We paid quarterly cash dividends totaling ${dividend} per share in fiscal {fy}. Our Board of "
        "Directors reviews the dividend each quarter, and future dividends will depend on our earnings, "
        "cash flows and financial condition.",
    ),
    "mdna_overview": (
        "{short} is a manufacturer of pumps, valves and flow instruments. Demand for our products is "
        "tied to capital and maintenance spending in the water, energy, chemical and general industrial "
        "markets. We measure performance using orders, backlog, organic revenue growth, segment "
        "operating margin and free cash flow.",
        "We design and manufacture flow-control equipment and provide aftermarket parts and services. "
        "Our results are influenced by industrial production, infrastructure investment and energy "
        "prices, and by our ability to offset material and labor inflation through pricing.",
    ),
    "key_metrics": (
        "Orders were {orders} million in fiscal {fy}, and the book-to-bill ratio was {book_to_bill}. "
        "Backlog at {period_end} was {backlog} million. Aftermarket revenue represented approximately "
        "{aftermarket_pct}% of total revenue.",
        "Key metrics. Orders in fiscal {fy} totaled {orders} million, a book-to-bill ratio of "
        "{book_to_bill}, and backlog at year end was {backlog} million.",
    ),
    "revenue_up": (
        "The increase was driven by higher shipments in our Flow Control segment, pricing actions "
        "implemented to offset cost inflation and growth in aftermarket services.",
        "Growth reflected price realization, higher volume in water and wastewater and energy markets, "
        "and growth in aftermarket parts, partially offset by unfavorable foreign currency translation.",
    ),
    "revenue_down": (
        "The decrease reflected lower project shipments in the chemical market and unfavorable foreign "
        "currency translation, partially offset by pricing.",
    ),
    "margin_up": (
        "The improvement reflected price realization, a favorable mix of aftermarket revenue and "
        "productivity from facility consolidations.",
    ),
    "margin_down": (
        "The decline reflected higher costs for castings and labor and an unfavorable mix of large "
        "project shipments, partially offset by pricing.",
    ),
    "rd_driver": (
        "The change reflected development of energy-efficient pump designs and FlowSight monitoring "
        "features.",
    ),
    "sga_driver": (
        "The change reflected higher compensation costs and investment in our aftermarket sales "
        "organization, partially offset by restructuring savings.",
        "The change was driven by wage inflation and higher selling costs associated with increased "
        "volume.",
    ),
    "critical": (
        "Revenue recognition for engineered products. For certain engineered-to-order contracts, we "
        "recognize revenue over time using the ratio of costs incurred to total estimated costs. "
        "Estimating total contract costs requires judgment about labor productivity, material costs and "
        "the timing of completion.",
        "Goodwill. We test goodwill for impairment annually in the fourth quarter, or more frequently if "
        "indicators are present, by comparing the fair value of each reporting unit with its carrying "
        "amount. Fair value is estimated using discounted cash flows, which depend on assumptions about "
        "revenue growth, margins and discount rates.",
    ),
    "interest_risk": (
        "Interest rate risk. As of {period_end}, we had {debt} million of debt outstanding, of which a "
        "portion bears interest at floating rates. A hypothetical 100 basis point increase in interest "
        "rates would have increased our annual interest expense by less than $5 million.",
    ),
    "revenue_policy": (
        "Revenue recognition. We recognize revenue for standard products and aftermarket parts when "
        "control transfers to the customer, generally on shipment, and for certain engineered-to-order "
        "contracts over time as work is performed. Service revenue is recognized as services are "
        "rendered.",
    ),
    "equity_plan": "Omnibus Incentive Plan",
}

INDUSTRY_RISKS: dict[str, tuple[tuple[str, str], ...]] = {
    "software": (
        ("If we are unable to attract new customers and expand sales to existing customers, our revenue "
         "growth would be harmed.",
         "Our future growth depends on our ability to sell subscriptions to new customers and to expand "
         "the use of our platform by existing customers. The decision to adopt a new planning or close "
         "system often involves many stakeholders and a lengthy evaluation, and customers may delay "
         "purchases during periods of budget pressure. If our sales and marketing efforts do not "
         "generate sufficient demand, our revenue growth would slow."),
        ("Our customers may not renew their subscriptions or may reduce the number of users or products "
         "they purchase.",
         "Our customers have no obligation to renew their subscriptions after the initial term, and "
         "renewal rates may decline because of dissatisfaction with our products, pricing, competition, "
         "reductions in customer headcount or budgets, or acquisitions of customers by companies that "
         "use other software. Because we recognize subscription revenue ratably, the effect of lower "
         "renewals may not be fully reflected in our results until future periods."),
        ("We rely on third-party cloud infrastructure providers, and any disruption of their services "
         "could interrupt the delivery of our platform.",
         "We host our platform with third-party cloud providers. Any outage, capacity constraint or "
         "security breach affecting these providers, or any change in their pricing or terms, could "
         "interrupt access to our platform, require service credits and damage our reputation with "
         "customers that depend on our products for their financial close and reporting."),
        ("The markets in which we compete are intensely competitive, and larger companies may bundle "
         "planning and close functionality with their other products.",
         "Some of our competitors have substantially greater financial, technical and marketing "
         "resources, larger customer bases and broader product offerings, and may bundle competing "
         "functionality with their enterprise resource planning systems at little or no additional "
         "cost. Competitive pressure could result in price reductions, fewer customer orders and lower "
         "gross margins."),
    ),
    "retail": (
        ("Our results depend on consumer discretionary spending, which may decline during periods of "
         "economic uncertainty.",
         "Purchases of home furnishings and decor are discretionary and are affected by consumer "
         "confidence, employment, wage growth, housing turnover, mortgage rates and the availability of "
         "consumer credit. A decline in discretionary spending, or a shift in spending from goods to "
         "services, could reduce our sales and require us to take markdowns."),
        ("Our business is highly seasonal, and lower-than-expected sales during the holiday season would "
         "have a disproportionate effect on our results.",
         "We generate a significant share of our net sales and most of our operating income in the "
         "fourth fiscal quarter. Unfavorable weather, competitive promotions, shipping delays or weak "
         "consumer demand during the holiday season could leave us with excess inventory and reduce our "
         "full-year results."),
        ("We depend on foreign manufacturers, and disruptions in international trade, shipping costs or "
         "tariffs could increase our costs.",
         "Most of our owned-brand merchandise is manufactured outside the United States. Tariffs, trade "
         "restrictions, port congestion, higher ocean freight rates, currency fluctuations and "
         "political instability in sourcing countries could delay deliveries and increase the cost of "
         "our merchandise."),
        ("If we fail to manage inventory effectively, we may be required to take markdowns that reduce "
         "our gross margin.",
         "We purchase merchandise months in advance of the selling season based on our forecasts of "
         "customer demand. If demand is lower than expected, or if we misjudge trends in home design, we "
         "may need to sell excess inventory at reduced prices; if demand is higher, we may lose sales."),
    ),
    "industrial": (
        ("Demand for our products depends on capital spending in cyclical end markets.",
         "A substantial portion of our revenue comes from customers in the energy, chemical and general "
         "industrial markets, whose capital spending is cyclical and sensitive to commodity prices, "
         "interest rates and economic growth. Municipal water spending depends on public budgets and "
         "infrastructure funding. Declines in spending in these markets could reduce our orders and "
         "revenue."),
        ("Increases in the cost or disruptions in the supply of steel, castings and electronic "
         "components could reduce our margins.",
         "We depend on suppliers for steel, alloy castings and electronic components, some of which are "
         "available from a limited number of sources. Price increases that we cannot pass on to "
         "customers, or supply interruptions that delay our shipments, could reduce our margins and "
         "damage customer relationships."),
        ("Our backlog may not be indicative of future revenue, and orders may be delayed or cancelled.",
         "Backlog consists of orders that we expect to ship in future periods, but customers may delay or "
         "cancel orders, particularly for large projects, and the timing of shipments may shift between "
         "periods. Fixed-price contracts for engineered products also expose us to cost overruns."),
        ("We are exposed to product liability, warranty and environmental claims.",
         "Our products are used in demanding applications where failures can cause property damage, "
         "environmental releases or personal injury, and we are subject to warranty and product "
         "liability claims. We are also subject to environmental laws at current and former "
         "manufacturing sites, and the cost of remediation could exceed our accruals."),
    ),
}

WORDING = {"software": SOFTWARE, "retail": RETAIL, "industrial": INDUSTRIAL}

# Long item titles of Regulation S-K, used by both forms.
MDNA = "Management's Discussion and Analysis of Financial Condition and Results of Operations"
MARKET_RISK = "Quantitative and Qualitative Disclosures About Market Risk"
ITEM_5 = ("Market for Registrant's Common Equity, Related Stockholder Matters and Issuer Purchases of "
          "Equity Securities")
ITEM_9 = "Changes in and Disagreements with Accountants on Accounting and Financial Disclosure"
ITEM_9C = "Disclosure Regarding Foreign Jurisdictions that Prevent Inspections"
PART_III = (
    ("Item 10.", "Directors, Executive Officers and Corporate Governance"),
    ("Item 11.", "Executive Compensation"),
    ("Item 12.", "Security Ownership of Certain Beneficial Owners and Management and Related Stockholder "
                 "Matters"),
    ("Item 13.", "Certain Relationships and Related Transactions, and Director Independence"),
    ("Item 14.", "Principal Accountant Fees and Services"),
)

QUARTER_WORDS = {1: "first", 2: "second", 3: "third", 4: "fourth"}


# --------------------------------------------------------------------------------------------
# Filings
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Filing:
    company: Company
    doc_type: str  # "10-K" | "10-Q"
    fiscal_year: int
    fiscal_quarter: int | None
    period_end: date
    filing_date: date

    @property
    def doc_id(self) -> str:
        if self.fiscal_quarter:
            return f"{self.company.key}_{self.fiscal_year}Q{self.fiscal_quarter}_10Q"
        return f"{self.company.key}_{self.fiscal_year}_10K"

    @property
    def legal_name(self) -> str:
        return self.company.legal_name(self.filing_date)

    def metadata(self) -> dict[str, Any]:
        c = self.company
        return {
            "doc_id": self.doc_id, "company": c.name, "ticker": c.ticker, "aliases": c.aliases,
            "doc_type": self.doc_type, "fiscal_year": self.fiscal_year,
            "fiscal_quarter": self.fiscal_quarter, "period_end": self.period_end.isoformat(),
            "filing_date": self.filing_date.isoformat(), "sector": c.sector,
            "fiscal_year_end": f"{c.fye_month:02d}-{calendar.monthrange(2001, c.fye_month)[1]:02d}",
        }


def plan_filings(seed: int) -> list[Filing]:
    filings = []
    for company in COMPANIES:
        rng = random.Random(f"{seed}:{company.key}:filing-dates")
        for year in FISCAL_YEARS:
            end = fiscal_year_end(company, year)
            filed = _weekday_on_or_after(end + timedelta(days=rng.randint(44, 57)))
            filings.append(Filing(company, "10-K", year, None, end, filed))
    for key, year, quarter in QUARTERLY_FILINGS:
        company = COMPANY_BY_KEY[key]
        end = fiscal_quarter_end(company, year, quarter)
        filed = _weekday_on_or_after(end + timedelta(days=random.Random(f"{seed}:{key}:q").randint(32, 39)))
        filings.append(Filing(company, "10-Q", year, quarter, end, filed))
    return sorted(filings, key=lambda f: f.doc_id)


class _Writer:
    """Builds the blocks of one filing, picking wording variants with the filing's own RNG."""

    def __init__(self, filing: Filing, cur: IncomeStatement, prev: IncomeStatement,
                 ctx: dict[str, Any], rng: random.Random) -> None:
        self.filing = filing
        self.cur, self.prev = cur, prev
        self.ctx = ctx
        self.rng = rng
        self.words = WORDING[filing.company.industry]
        self.blocks: list[Block] = []
        self.toc: list[Block] = []

    # -- primitives ---------------------------------------------------------------------------
    def fill(self, template: str) -> str:
        return template.format_map(self.ctx)

    def pick(self, variants: tuple[str, ...] | str) -> str:
        return self.fill(variants if isinstance(variants, str) else self.rng.choice(variants))

    def add(self, text: str, style: str = "body", facts: list[Fact] | None = None) -> Text:
        block = Text(text, style, facts or [])
        self.blocks.append(block)
        return block

    def para(self, key: str, pool: dict[str, Any] | None = None) -> None:
        self.add(self.pick((pool or self.words)[key]))

    def part(self, title: str) -> None:
        self.add(title, "part")
        self.toc.append(Text(title, "toc_part"))

    def item(self, label: str, title: str) -> None:
        block = self.add(f"{label} {title}".strip(), "item")
        self.toc.append(TocEntry(label, title, block))

    def fact(self, metric: str, value: int | float, text: str, source: str = "text") -> Fact:
        unit = "USD" if metric.endswith("eps") else "USD millions"
        return Fact(metric, value, unit, text, self.filing.fiscal_year, self.filing.fiscal_quarter, source)

    # -- shared sections ----------------------------------------------------------------------
    def forward_looking(self) -> None:
        self.add("SPECIAL NOTE REGARDING FORWARD-LOOKING STATEMENTS", "sub")
        self.para("fls", COMMON)
        self.para("fls_risk", COMMON)

    def risk_factors(self) -> None:
        self.para("risk_intro", COMMON)
        for heading, keys in RISK_GROUPS:
            self.add(heading, "sub")
            for key in keys:
                risks = INDUSTRY_RISKS[self.filing.company.industry] if key == "industry" else (COMMON_RISKS[key],)
                for title, body in risks:
                    self.add(self.fill(title), "risk")
                    closer = self.rng.choice(RISK_CLOSERS) if self.rng.random() < 0.5 else ""
                    self.add(f"{self.fill(body)} {closer}".strip())

    def income_table(self, header: tuple[str, str, str]) -> None:
        cur, prev = self.cur, self.prev
        rows = [
            ("Revenue", _cell(cur.revenue, True), _cell(prev.revenue, True), "revenue", cur.revenue),
            ("Cost of revenue", _cell(cur.cost_of_revenue), _cell(prev.cost_of_revenue),
             "cost of revenue", cur.cost_of_revenue),
            ("Gross profit", _cell(cur.gross_profit), _cell(prev.gross_profit), "gross profit", cur.gross_profit),
            ("Research and development", _cell(cur.research_development), _cell(prev.research_development),
             "research and development", cur.research_development),
            ("Selling, general and administrative", _cell(cur.sga), _cell(prev.sga),
             "selling, general and administrative", cur.sga),
            ("Total operating expenses", _cell(cur.operating_expenses), _cell(prev.operating_expenses), "", 0),
            ("Operating income", _cell(cur.operating_income), _cell(prev.operating_income),
             "operating income", cur.operating_income),
            ("Other income (expense), net", _cell(cur.other_income), _cell(prev.other_income), "", 0),
            ("Income before income taxes", _cell(cur.pretax_income), _cell(prev.pretax_income), "", 0),
            ("Provision for income taxes", _cell(cur.income_tax), _cell(prev.income_tax), "", 0),
            ("Net income", _cell(cur.net_income, True), _cell(prev.net_income, True), "net income", cur.net_income),
            ("Basic net income per share", f"${cur.basic_eps:.2f}", f"${prev.basic_eps:.2f}", "", 0),
            ("Diluted net income per share", f"${cur.diluted_eps:.2f}", f"${prev.diluted_eps:.2f}",
             "diluted eps", cur.diluted_eps),
            ("Basic weighted-average shares", f"{cur.basic_shares:.1f}", f"{prev.basic_shares:.1f}", "", 0),
            ("Diluted weighted-average shares", f"{cur.diluted_shares:.1f}", f"{prev.diluted_shares:.1f}", "", 0),
        ]
        facts = [self.fact(metric, value, " ".join(r[:3]), "table") for *r, metric, value in rows if metric]
        self.blocks.append(StatementTable(header, [tuple(r[:3]) for r in rows], facts))

    def results(self, cur_label: str, prev_label: str) -> None:
        """The narrative comparison of the two periods; each figure sentence becomes a fact."""
        cur, prev, pick = self.cur, self.prev, self.rng.choice
        direction, rate = _change(cur.revenue, prev.revenue)
        revenue = pick((
            f"Total revenue {direction} {rate} to {_usd(cur.revenue)} million in {cur_label}, compared "
            f"with {_usd(prev.revenue)} million in {prev_label}.",
            f"Total revenue for {cur_label} was {_usd(cur.revenue)} million, "
            f"{'an increase' if direction == 'increased' else 'a decrease'} of {rate} from "
            f"{_usd(prev.revenue)} million in {prev_label}.",
        ))
        driver = self.pick(self.words["revenue_up" if direction == "increased" else "revenue_down"])
        self.add("Revenue", "sub")
        self.add(f"{revenue} {driver}", facts=[self.fact("revenue", cur.revenue, revenue)])

        gross = (f"Gross profit was {_usd(cur.gross_profit)} million in {cur_label}, compared with "
                 f"{_usd(prev.gross_profit)} million in {prev_label}, and gross margin was "
                 f"{cur.gross_margin:.1f}% compared with {prev.gross_margin:.1f}%.")
        margin = self.pick(self.words["margin_up" if cur.gross_margin >= prev.gross_margin else "margin_down"])
        self.add("Cost of Revenue and Gross Margin", "sub")
        self.add(f"{gross} {margin}", facts=[self.fact("gross profit", cur.gross_profit, gross)])

        self.add("Operating Expenses", "sub")
        for metric, label, now, before, key in (
            ("research and development", "Research and development expense", cur.research_development,
             prev.research_development, "rd_driver"),
            ("selling, general and administrative", "Selling, general and administrative expense", cur.sga,
             prev.sga, "sga_driver"),
        ):
            sentence = (f"{label} was {_usd(now)} million, or {100 * now / cur.revenue:.1f}% of revenue, in "
                        f"{cur_label}, compared with {_usd(before)} million, or "
                        f"{100 * before / prev.revenue:.1f}% of revenue, in {prev_label}.")
            self.add(f"{sentence} {self.pick(self.words[key])}", facts=[self.fact(metric, now, sentence)])

        operating = (f"Operating income was {_usd(cur.operating_income)} million in {cur_label}, or "
                     f"{cur.operating_margin:.1f}% of revenue, compared with {_usd(prev.operating_income)} "
                     f"million, or {prev.operating_margin:.1f}% of revenue, in {prev_label}.")
        self.add("Operating Income", "sub")
        self.add(operating, facts=[self.fact("operating income", cur.operating_income, operating)])

        self.add("Other Income (Expense), Net and Income Taxes", "sub")
        other = "income" if cur.other_income >= 0 else "expense"
        self.add(f"Other {other}, net, was {_usd(abs(cur.other_income))} million in {cur_label}, consisting "
                 f"primarily of interest income on our cash and investments, net of interest expense and "
                 f"foreign exchange gains and losses. Our effective tax rate was {cur.tax_rate:.1f}% in "
                 f"{cur_label} compared with {prev.tax_rate:.1f}% in {prev_label}, reflecting changes in the "
                 f"geographic mix of earnings, research tax credits and excess tax benefits from "
                 f"stock-based compensation.")

        net = pick((
            f"Net income was {_usd(cur.net_income)} million, or ${cur.diluted_eps:.2f} per diluted share, in "
            f"{cur_label}, compared with {_usd(prev.net_income)} million, or ${prev.diluted_eps:.2f} per "
            f"diluted share, in {prev_label}.",
            f"In {cur_label}, net income was {_usd(cur.net_income)} million, or ${cur.diluted_eps:.2f} per "
            f"diluted share, compared with {_usd(prev.net_income)} million, or ${prev.diluted_eps:.2f} per "
            f"diluted share, in {prev_label}.",
        ))
        self.add("Net Income and Earnings per Share", "sub")
        self.add(net, facts=[self.fact("net income", cur.net_income, net),
                             self.fact("diluted eps", cur.diluted_eps, net)])

    def liquidity(self, period_words: str) -> None:
        c = self.ctx
        self.add("Liquidity and Capital Resources", "sub")
        self.add(self.fill(
            "As of {period_end}, we had cash, cash equivalents and marketable securities of {cash} million. "
            f"Net cash provided by operating activities was {{op_cash}} million in {period_words}, and "
            "capital expenditures were {capex} million, consisting primarily of investments in "
            "{capex_use}. We repurchased shares of our common stock for {buyback} million during the period."))
        self.add(self.fill(
            "We have a {revolver} million revolving credit facility that matures in {revolver_maturity}. "
            + ("Borrowings outstanding under our term loan and senior notes totaled {debt} million as of "
               "{period_end}, and we were in compliance with all covenants."
               if "debt" in c else
               "There were no borrowings outstanding under the facility as of {period_end}, and we were in "
               "compliance with all covenants.")))
        self.para("liquidity_outlook", COMMON)


def _context(filing: Filing, cur: IncomeStatement, prev: IncomeStatement, data: dict[str, Any],
             seed: int) -> dict[str, Any]:
    """Placeholder values for one filing's wording."""
    c = filing.company
    fy = filing.fiscal_year
    rng = random.Random(f"{seed}:{filing.doc_id}:context")
    ctx: dict[str, Any] = {
        "name": filing.legal_name, "short": c.short, "ticker": c.ticker, "exchange": c.exchange,
        "state": c.state, "hq_city": c.hq_city, "domain": c.domain, "founded": c.founded,
        "auditor": c.auditor, "ceo_name": c.ceo, "cfo_name": c.cfo,
        "p1": c.products[0], "p2": c.products[1], "p3": c.products[2],
        "fy": fy, "fy_prev": fy - 1, "fy_prev2": fy - 2,
        "fye_month_day": f"{fiscal_year_end(c, fy):%B} {fiscal_year_end(c, fy).day}",
        "fy_end": _long_date(fiscal_year_end(c, fy)), "fy_prev_end": _long_date(fiscal_year_end(c, fy - 1)),
        "fy_prev2_end": _long_date(fiscal_year_end(c, fy - 2)),
        "period_end": _long_date(filing.period_end), "filing_date": _long_date(filing.filing_date),
        "record_date": _long_date(filing.filing_date - timedelta(days=rng.randint(10, 20))),
        "proxy_year": filing.filing_date.year, "lease_end": fy + rng.randint(4, 9),
        "revolver": _usd(PROFILES[c.industry]["revolver"]), "revolver_maturity": fy + rng.randint(2, 5),
        "equity_plan": WORDING[c.industry]["equity_plan"],
        "capex_use": {"software": "data center equipment, capitalized software and office improvements",
                      "retail": "new stores, remodels, technology and distribution center automation",
                      "industrial": "manufacturing equipment, facility consolidation and information systems",
                      }[c.industry],
        "report": "Quarterly Report on Form 10-Q" if filing.fiscal_quarter else "Annual Report on Form 10-K",
        "risk_ref": "Part II, Item 1A" if filing.fiscal_quarter else "Part I, Item 1A",
        "dil_shares": f"{cur.diluted_shares:.1f}", "dil_shares_prev": f"{prev.diluted_shares:.1f}",
        "former": c.former_name or "", "renamed_on": _long_date(c.renamed_on) if c.renamed_on else "",
    }
    for key, value in data.items():
        if key in ("cash", "op_cash", "capex", "buyback", "arr", "orders", "backlog", "debt"):
            ctx[key] = _usd(int(value))
        elif isinstance(value, int):
            ctx[key] = f"{value:,}"
        else:
            ctx[key] = value
    if "stores" in data:
        comp = 100 * (cur.revenue - prev.revenue) / prev.revenue - rng.uniform(0.4, 1.4)
        ctx["comp_phrase"] = f"comparable sales {'increased' if comp >= 0 else 'decreased'} {abs(comp):.1f}%"
    return ctx


# -- 10-K --------------------------------------------------------------------------------------


def _ten_k_body(w: _Writer) -> None:
    f, words = w.filing, w.words
    fy = f.fiscal_year
    w.forward_looking()
    w.part("PART I")
    w.item("Item 1.", "Business")
    w.add("Overview", "sub")
    w.para("overview")
    if f.company.former_name and f.legal_name == f.company.name:
        w.para("rename")
    w.para("strategy")
    w.para("fiscal_note", COMMON)
    for heading, keys in words["business_outline"]:
        w.add(heading, "sub")
        for key in keys:
            w.para(key)
    w.add("Human Capital", "sub")
    w.para("workforce")
    w.para("human_capital", COMMON)
    w.add("Available Information", "sub")
    w.para("available_info", COMMON)

    w.item("Item 1A.", "Risk Factors")
    w.risk_factors()
    w.item("Item 1B.", "Unresolved Staff Comments")
    w.add("None.")
    w.item("Item 1C.", "Cybersecurity")
    w.para("cyber_program", COMMON)
    w.para("cyber_governance", COMMON)
    w.item("Item 2.", "Properties")
    w.para("properties")
    w.item("Item 3.", "Legal Proceedings")
    w.para("legal", COMMON)
    w.item("Item 4.", "Mine Safety Disclosures")
    w.add("Not applicable.")

    w.part("PART II")
    w.item("Item 5.", ITEM_5)
    w.para("market", COMMON)
    w.para("dividends")
    w.para("repurchases", COMMON)
    w.item("Item 6.", "[Reserved]")
    w.item("Item 7.", MDNA)
    w.add("Overview", "sub")
    w.para("mdna_overview")
    w.para("key_metrics")
    w.add("Results of Operations", "sub")
    w.para("results_intro", COMMON)
    w.results(f"fiscal {fy}", f"fiscal {fy - 1}")
    w.liquidity(f"fiscal {fy}")
    w.add("Critical Accounting Estimates", "sub")
    w.para("critical_intro", COMMON)
    for text in words["critical"]:
        w.add(w.fill(text))
    w.para("critical_taxes", COMMON)
    w.item("Item 7A.", MARKET_RISK)
    w.para("interest_risk")
    w.para("fx_risk", COMMON)

    w.item("Item 8.", "Financial Statements and Supplementary Data")
    w.para("statements_intro", COMMON)
    w.add(f"{f.legal_name.upper()} CONSOLIDATED STATEMENTS OF OPERATIONS", "caption")
    w.add(f"(In millions, except per share data; fiscal years ended {w.ctx['fye_month_day']})", "caption_note")
    w.income_table(("(In millions, except per share data)", f"Fiscal {fy}", f"Fiscal {fy - 1}"))
    _notes(w, f"fiscal {fy}", f"fiscal {fy - 1}", annual=True)

    w.item("Item 9.", ITEM_9)
    w.add("None.")
    w.item("Item 9A.", "Controls and Procedures")
    w.para("controls", COMMON)
    w.para("icfr", COMMON)
    w.para("controls_change", COMMON)
    w.item("Item 9B.", "Other Information")
    w.para("trading_plans", COMMON)
    w.item("Item 9C.", ITEM_9C)
    w.add("Not applicable.")

    w.part("PART III")
    for label, title in PART_III:
        w.item(label, title)
        if label == "Item 10.":
            w.para("proxy", COMMON)
            w.para("code_of_conduct", COMMON)
        else:
            w.para("proxy_short", COMMON)
    w.part("PART IV")
    w.item("Item 15.", "Exhibits and Financial Statement Schedules")
    w.para("exhibits", COMMON)
    w.item("Item 16.", "Form 10-K Summary")
    w.add("None.")
    w.item("", "Signatures")
    w.para("signatures", COMMON)


def _notes(w: _Writer, cur_label: str, prev_label: str, annual: bool) -> None:
    w.ctx.update(cur_label=cur_label, prev_label=prev_label)
    cur, prev = w.cur, w.prev
    w.add("Notes to Consolidated Financial Statements" if annual else
          "Notes to Condensed Consolidated Financial Statements (Unaudited)", "sub")
    w.add("Note 1. Description of Business and Basis of Presentation", "sub")
    w.para("note_basis", COMMON)
    if not annual:
        w.add(w.fill(
            "These unaudited interim financial statements should be read in conjunction with the audited "
            "consolidated financial statements in our Annual Report on Form 10-K for the fiscal year ended "
            "{fy_prev_end}. In the opinion of management, they include all adjustments necessary for a fair "
            "statement of the results for the interim period. Results for the {qlabel} are not necessarily "
            "indicative of the results to be expected for the fiscal year ending {fy_end}."))
    w.add("Note 2. Revenue", "sub")
    w.para("revenue_policy")
    w.add("Note 3. Income Taxes", "sub")
    w.add(f"The provision for income taxes was {_usd(cur.income_tax)} million in {cur_label} and "
          f"{_usd(prev.income_tax)} million in {prev_label}, representing effective tax rates of "
          f"{cur.tax_rate:.1f}% and {prev.tax_rate:.1f}%, respectively. The effective tax rate differs "
          f"from the U.S. federal statutory rate of 21% primarily because of state income taxes, the "
          f"foreign rate differential, research tax credits and excess tax benefits from stock-based "
          f"compensation.")
    w.add("Note 4. Net Income per Share", "sub")
    w.para("note_eps", COMMON)


SECTION_13 = "PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934"


def _ten_k_cover(w: _Writer) -> list[Block]:
    f, c, ctx = w.filing, w.filing.company, w.ctx
    midyear = fiscal_quarter_end(c, f.fiscal_year, 2)
    shares = round(w.cur.basic_shares * 1e6 * w.rng.uniform(0.985, 1.0))
    market_value = w.cur.diluted_eps * w.rng.uniform(22, 34) * w.cur.basic_shares / 1000
    a_year_before = c.legal_name(f.filing_date - timedelta(days=366))
    renamed_since_last = f.legal_name != a_year_before
    blocks = [
        Text("UNITED STATES", "cover_bold"), Text("SECURITIES AND EXCHANGE COMMISSION", "cover_bold"),
        Text("Washington, D.C. 20549", "cover"), Text("FORM 10-K", "cover_form"),
        Text(f"[X] ANNUAL REPORT {SECTION_13}", "cover"),
        Text(f"Annual Report on Form 10-K for the fiscal year ended {ctx['period_end']}", "cover_bold"),
        Text("OR", "cover"),
        Text(f"[ ] TRANSITION REPORT {SECTION_13}", "cover"),
        Text(f"Commission File Number {c.file_number}", "cover"),
        Text(f.legal_name, "cover_name"),
        Text("(Exact name of registrant as specified in its charter)", "cover_note"),
    ]
    if renamed_since_last:
        blocks += [Text(a_year_before, "cover"), Text("(Former name, if changed since last report)", "cover_note")]
    blocks += [
        Text(f"{c.state} | I.R.S. Employer Identification No. {c.ein}", "cover"),
        Text("(State or other jurisdiction of incorporation or organization)", "cover_note"),
        Text(c.hq, "cover"), Text("(Address of principal executive offices, including zip code)", "cover_note"),
        Text(f"Registrant's telephone number, including area code: {c.phone}", "cover"),
        Text("Securities registered pursuant to Section 12(b) of the Act:", "cover_bold"),
        Text(f"Title of each class: Common Stock, par value $0.01 per share | Trading symbol: {c.ticker} | "
             f"Name of each exchange on which registered: {c.exchange}", "cover"),
        Text("Indicate by check mark if the registrant is a well-known seasoned issuer, as defined in Rule "
             "405 of the Securities Act. Yes [X] No [ ]. Indicate by check mark whether the registrant (1) "
             "has filed all reports required to be filed by Section 13 or 15(d) of the Securities Exchange "
             "Act of 1934 during the preceding 12 months and (2) has been subject to such filing "
             "requirements for the past 90 days. Yes [X] No [ ]. Large accelerated filer [X] Accelerated "
             "filer [ ] Non-accelerated filer [ ] Smaller reporting company [ ] Emerging growth company [ ]. "
             "Indicate by check mark whether the registrant is a shell company. Yes [ ] No [X].", "cover_text"),
        Text(f"The aggregate market value of the registrant's common stock held by non-affiliates, based on "
             f"the closing price on {_long_date(midyear)}, the last business day of the registrant's most "
             f"recently completed second fiscal quarter, was approximately ${market_value:.1f} billion. As "
             f"of {ctx['record_date']}, the registrant had {shares:,} shares of common stock outstanding.",
             "cover_text"),
        Text("DOCUMENTS INCORPORATED BY REFERENCE", "cover_bold"),
        Text(f"Portions of the registrant's definitive proxy statement for its {ctx['proxy_year']} Annual "
             f"Meeting of Stockholders are incorporated by reference into Part III of this Annual Report on "
             f"Form 10-K.", "cover_text"),
    ]
    return blocks


# -- 10-Q --------------------------------------------------------------------------------------


def _ten_q_body(w: _Writer) -> None:
    f = w.filing
    cur_label, prev_label = w.ctx["qlabel"], w.ctx["qlabel_prev"]
    w.forward_looking()
    w.part("PART I - FINANCIAL INFORMATION")
    w.item("Item 1.", "Financial Statements")
    w.add(f"{f.legal_name.upper()} CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS", "caption")
    w.add(f"(Unaudited; in millions, except per share data; three months ended {w.ctx['period_end']} "
          f"and {w.ctx['prev_period_end']})", "caption_note")
    q = f.fiscal_quarter
    w.income_table(("(In millions, except per share data)", f"Q{q} fiscal {f.fiscal_year}",
                    f"Q{q} fiscal {f.fiscal_year - 1}"))
    _notes(w, cur_label, prev_label, annual=False)

    w.item("Item 2.", MDNA)
    w.add("Overview", "sub")
    w.para("mdna_overview")
    w.add(w.fill("Our fiscal year ends on {fye_month_day}. References to the {qlabel} are to the three "
                 "months ended {period_end}, and references to the {qlabel_prev} are to the three months "
                 "ended {prev_period_end}."))
    w.add("Results of Operations", "sub")
    w.results(cur_label, prev_label)
    w.liquidity(f"the {cur_label}")
    w.add("Critical Accounting Estimates", "sub")
    w.add(w.fill("There have been no material changes to our critical accounting estimates from those "
                 "described in our Annual Report on Form 10-K for the fiscal year ended {fy_prev_end}."))
    w.item("Item 3.", MARKET_RISK)
    w.add(w.fill("There have been no material changes in our market risk exposures from those described "
                 "in Part II, Item 7A of our Annual Report on Form 10-K for the fiscal year ended "
                 "{fy_prev_end}."))
    w.para("interest_risk")
    w.item("Item 4.", "Controls and Procedures")
    w.para("controls", COMMON)
    w.para("controls_change", COMMON)

    w.part("PART II - OTHER INFORMATION")
    w.item("Item 1.", "Legal Proceedings")
    w.para("legal", COMMON)
    w.item("Item 1A.", "Risk Factors")
    w.add(w.fill("The risk factors below supplement and update those described in Part I, Item 1A of our "
                 "Annual Report on Form 10-K for the fiscal year ended {fy_prev_end}. Except as described "
                 "below, there have been no material changes to those risk factors."))
    w.risk_factors()
    w.item("Item 2.", "Unregistered Sales of Equity Securities and Use of Proceeds")
    w.add(w.fill("During the {qlabel}, we repurchased shares of our common stock for {buyback} million "
                 "under our publicly announced repurchase program. We did not sell any unregistered equity "
                 "securities during the period."))
    w.item("Item 3.", "Defaults Upon Senior Securities")
    w.add("None.")
    w.item("Item 4.", "Mine Safety Disclosures")
    w.add("Not applicable.")
    w.item("Item 5.", "Other Information")
    w.para("trading_plans", COMMON)
    w.item("Item 6.", "Exhibits")
    w.add(w.fill("Exhibits 31.1 and 31.2, Certifications pursuant to Rule 13a-14(a); Exhibit 32.1, "
                 "Certification pursuant to 18 U.S.C. Section 1350; Exhibit 101, Inline XBRL documents; "
                 "Exhibit 104, Cover Page Interactive Data File."))
    w.item("", "Signatures")
    w.para("signatures", COMMON)


def _ten_q_cover(w: _Writer) -> list[Block]:
    f, c, ctx = w.filing, w.filing.company, w.ctx
    shares = round(w.cur.basic_shares * 1e6 * w.rng.uniform(0.985, 1.0))
    return [
        Text("UNITED STATES", "cover_bold"), Text("SECURITIES AND EXCHANGE COMMISSION", "cover_bold"),
        Text("Washington, D.C. 20549", "cover"), Text("FORM 10-Q", "cover_form"),
        Text(f"[X] QUARTERLY REPORT {SECTION_13}", "cover"),
        Text(f"Quarterly Report on Form 10-Q for the quarterly period ended {ctx['period_end']}", "cover_bold"),
        Text("OR", "cover"),
        Text(f"[ ] TRANSITION REPORT {SECTION_13}", "cover"),
        Text(f"Commission File Number {c.file_number}", "cover"),
        Text(f.legal_name, "cover_name"),
        Text("(Exact name of registrant as specified in its charter)", "cover_note"),
        Text(f"{c.state} | I.R.S. Employer Identification No. {c.ein}", "cover"),
        Text(c.hq, "cover"), Text("(Address of principal executive offices, including zip code)", "cover_note"),
        Text(f"Registrant's telephone number, including area code: {c.phone}", "cover"),
        Text(f"Title of each class: Common Stock, par value $0.01 per share | Trading symbol: {c.ticker} | "
             f"Name of each exchange on which registered: {c.exchange}", "cover"),
        Text("Indicate by check mark whether the registrant (1) has filed all reports required to be filed "
             "by Section 13 or 15(d) of the Securities Exchange Act of 1934 during the preceding 12 months "
             "and (2) has been subject to such filing requirements for the past 90 days. Yes [X] No [ ]. "
             "Large accelerated filer [X] Accelerated filer [ ] Non-accelerated filer [ ] Smaller reporting "
             "company [ ] Emerging growth company [ ].", "cover_text"),
        Text(f"As of {ctx['record_date']}, the registrant had {shares:,} shares of common stock outstanding.",
             "cover_text"),
    ]


# -- assembly ----------------------------------------------------------------------------------


def _toc_blocks(w: _Writer) -> list[Block]:
    return [Text("TABLE OF CONTENTS", "toc_title"), *w.toc]


def _compose(filing: Filing, annual: dict[int, IncomeStatement], seed: int) -> _Writer:
    c, fy, q = filing.company, filing.fiscal_year, filing.fiscal_quarter
    if q:
        cur = quarter_statement(c, annual[fy], fy, q, seed)
        prev = quarter_statement(c, annual[fy - 1], fy - 1, q, seed)
        period = f"{fy}Q{q}"
    else:
        cur, prev, period = annual[fy], annual[fy - 1], str(fy)
    data = _operating_data(c, cur, period, seed)
    ctx = _context(filing, cur, prev, data, seed)
    if q:
        ctx.update(qlabel=f"{QUARTER_WORDS[q]} quarter of fiscal {fy}",
                   qlabel_prev=f"{QUARTER_WORDS[q]} quarter of fiscal {fy - 1}",
                   prev_period_end=_long_date(fiscal_quarter_end(c, fy - 1, q)))
    w = _Writer(filing, cur, prev, ctx, random.Random(f"{seed}:{filing.doc_id}:wording"))
    if q:
        cover = _ten_q_cover(w)
        _ten_q_body(w)
    else:
        cover = _ten_k_cover(w)
        _ten_k_body(w)
    w.blocks = cover + [PageBreak()] + _toc_blocks(w) + [PageBreak()] + w.blocks
    return w


def render_filing(filing: Filing, annual: dict[int, IncomeStatement], seed: int) -> tuple[bytes, list[Fact], int]:
    """PDF bytes, the facts with their pages, and the page count of one filing."""
    w = _compose(filing, annual, seed)
    pages = _Layout().run(w.blocks)
    facts = []
    for block in w.blocks:
        for fact in getattr(block, "facts", []):
            fact.page = block.page
            facts.append(fact)
    stamp = f"D:{filing.filing_date:%Y%m%d}090000Z"
    title = (f"{filing.legal_name} Form {filing.doc_type} for the period ended {_long_date(filing.period_end)}")
    metadata = {"title": title, "author": filing.legal_name, "subject": f"Form {filing.doc_type}",
                "keywords": f"{filing.company.ticker}, {filing.doc_id}", "creator": "finrag demo corpus",
                "producer": "finrag demo corpus", "creationDate": stamp, "modDate": stamp}
    return _paint(pages, metadata), facts, len(pages)


# --------------------------------------------------------------------------------------------
# Questions
# --------------------------------------------------------------------------------------------

# (doc_id, metric, question, tags). Questions name companies as a user would, including the
# former name of the renamed company and the January fiscal year end of the retailer.
QUESTIONS = (
    ("LUMENFIELD_2023_10K", "revenue", "What was Lumenfield Software's total revenue in fiscal 2023?",
     ["look-alike"]),
    ("BRIGHTQUARRY_2023_10K", "revenue", "What was Brightquarry Software's total revenue in fiscal 2023?",
     ["look-alike"]),
    ("LUMENFIELD_2024_10K", "net income", "What was Lumenfield's net income in fiscal 2024?", ["look-alike"]),
    ("BRIGHTQUARRY_2024_10K", "net income", "What was Brightquarry's net income in fiscal 2024?", ["look-alike"]),
    ("LUMENFIELD_2022_10K", "diluted eps", "What were Lumenfield's diluted earnings per share for fiscal 2022?",
     ["look-alike"]),
    ("BRIGHTQUARRY_2022_10K", "diluted eps",
     "What were Brightquarry's diluted earnings per share for fiscal 2022?", ["look-alike"]),
    ("HARLOWFINCH_2024_10K", "revenue",
     "What was Harlow & Finch's total revenue for the fiscal year ended January 31, 2024?",
     ["non-december-fiscal-year"]),
    ("HARLOWFINCH_2023_10K", "operating income", "What was Harlow & Finch's operating income in fiscal 2023?",
     ["non-december-fiscal-year"]),
    ("QUILLON_2022_10K", "operating income",
     "What was Quillon Pump & Valve Company's operating income in fiscal 2022?", ["former-name"]),
    ("QUILLON_2024_10K", "gross profit", "What was Quillon Flow Technologies' gross profit in fiscal 2024?",
     ["renamed-company"]),
    ("LUMENFIELD_2024Q2_10Q", "revenue", "What was Lumenfield's revenue for the second quarter of fiscal 2024?",
     ["10-Q"]),
    ("HARLOWFINCH_2025Q1_10Q", "net income",
     "What was Harlow & Finch's net income for the quarter ended April 30, 2024 (the first quarter of "
     "fiscal 2025)?", ["10-Q", "non-december-fiscal-year"]),
)


def _answer(value: int | float, unit: str) -> str:
    return f"${value:.2f}" if unit == "USD" else f"{_usd(int(value))} million"


def build_questions(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for number, (doc_id, metric, question, tags) in enumerate(QUESTIONS, start=1):
        matching = [f for f in facts if f["doc_id"] == doc_id and f["metric"] == metric]
        narrative = next(f for f in matching if f["source"] == "text")
        out.append({
            "id": f"demo-{number:02d}", "question": question, "doc_id": doc_id,
            "answer": _answer(narrative["value"], narrative["unit"]), "value": narrative["value"],
            "unit": narrative["unit"], "evidence_page": narrative["page"],
            "evidence_pages": sorted({f["page"] for f in matching}), "tags": tags,
        })
    return out


# --------------------------------------------------------------------------------------------
# Corpus on disk
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DemoCorpus:
    out_dir: Path
    pdf_paths: list[Path]
    metadata_path: Path
    facts_path: Path
    questions_path: Path
    written: bool = True  # False when an existing complete corpus was reused


def _corpus(out: Path, doc_ids: list[str], written: bool) -> DemoCorpus:
    return DemoCorpus(out, sorted(out / f"{d}.pdf" for d in doc_ids), out / METADATA_NAME,
                      out / FACTS_NAME, out / QUESTIONS_NAME, written)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read_manifest(out: Path) -> dict[str, Any] | None:
    try:
        return json.loads((out / MANIFEST_NAME).read_text())
    except (OSError, ValueError):
        return None


def _is_complete(out: Path, seed: int, manifest: dict[str, Any] | None) -> bool:
    if not manifest or manifest.get("version") != GENERATOR_VERSION or manifest.get("seed") != seed:
        return False
    files = manifest.get("files", {})
    return bool(files) and all((out / name).is_file() and _sha256(out / name) == digest
                               for name, digest in files.items())


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def generate_demo_corpus(out_dir: str | Path, *, seed: int = 7, force: bool = False) -> DemoCorpus:
    """Write the demo corpus into ``out_dir`` (created if needed) and describe it.

    If ``out_dir`` already holds a complete corpus for ``seed`` (per its manifest, with matching
    file hashes), nothing is rewritten unless ``force`` is set.
    """
    out = Path(out_dir)
    filings = plan_filings(seed)
    doc_ids = [f.doc_id for f in filings]
    old_manifest = _read_manifest(out)
    if not force and _is_complete(out, seed, old_manifest):
        return _corpus(out, doc_ids, written=False)

    out.mkdir(parents=True, exist_ok=True)
    annual = {c.key: annual_statements(c, seed) for c in COMPANIES}
    files: dict[str, bytes] = {}
    facts: list[dict[str, Any]] = []
    for filing in filings:
        pdf, doc_facts, _ = render_filing(filing, annual[filing.company.key], seed)
        files[f"{filing.doc_id}.pdf"] = pdf
        c = filing.company
        facts += [{"doc_id": filing.doc_id, "company": c.name, "ticker": c.ticker,
                   "fiscal_year": fact.fiscal_year, "fiscal_quarter": fact.fiscal_quarter,
                   "metric": fact.metric, "value": fact.value, "unit": fact.unit, "text": fact.text,
                   "page": fact.page, "source": fact.source} for fact in doc_facts]
    files[METADATA_NAME] = _jsonl([f.metadata() for f in filings])
    files[FACTS_NAME] = (json.dumps(facts, indent=2) + "\n").encode()
    files[QUESTIONS_NAME] = _jsonl(build_questions(facts))

    for name, data in files.items():
        _write(out / name, data)
    for stale in set((old_manifest or {}).get("files", {})) - set(files):
        (out / stale).unlink(missing_ok=True)
    manifest = {"generator": "retrieval.demo_corpus", "version": GENERATOR_VERSION, "seed": seed,
                "files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())}}
    _write(out / MANIFEST_NAME, (json.dumps(manifest, indent=2) + "\n").encode())
    return _corpus(out, doc_ids, written=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m retrieval.demo_corpus", description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", help="directory to write the corpus into")
    parser.add_argument("--seed", type=int, default=7, help="seed for figures and wording (default 7)")
    parser.add_argument("--force", action="store_true", help="rewrite even if a complete corpus exists")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    corpus = generate_demo_corpus(args.out_dir, seed=args.seed, force=args.force)
    elapsed = time.perf_counter() - started
    verb = "wrote" if corpus.written else "already up to date:"
    print(f"{verb} demo corpus (seed {args.seed}) in {corpus.out_dir} [{elapsed:.2f} s]")
    for path in corpus.pdf_paths:
        with pymupdf.open(path) as doc:
            chars = sum(len(page.get_text()) for page in doc)
            print(f"  {path.name:<28} {doc.page_count:>3} pages {chars:>8,} chars")
    for path in (corpus.metadata_path, corpus.facts_path, corpus.questions_path):
        count = len(json.loads(path.read_text())) if path.suffix == ".json" else len(path.read_text().splitlines())
        print(f"  {path.name:<28} {count:>3} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
