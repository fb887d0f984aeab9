"""Seeded income statements and operating data of each filing, and how figures are printed."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from finrag.serving.cli.demo_corpus.companies import FISCAL_YEARS, PROFILES, Company


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
