"""The four fictional registrants, their operating profiles and fiscal calendars."""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

FISCAL_YEARS = (2022, 2023, 2024)
# (company key, fiscal year, fiscal quarter) of the quarterly reports in the corpus.
QUARTERLY_FILINGS = (("LUMENFIELD", 2024, 2), ("HARLOWFINCH", 2025, 1))


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
