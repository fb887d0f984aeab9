"""How the facts' answers are worded: a value with its source, means and growth rates,
comparisons across companies, periods and numbers in words."""

from __future__ import annotations

from datetime import date

from finrag.retrieval.facts.concepts import Metric
from finrag.retrieval.facts.store import FactCompany
from finrag.retrieval.facts.units import UnitRequest, in_requested_unit
from finrag.retrieval.facts.values import FactValue

def describe(company: FactCompany, metric: Metric, found: list[FactValue], note: str,
              series: bool, request: UnitRequest | None = None) -> list[str]:
    if not found:
        return []
    head = f"{company.name} ({company.ticker})" if company.ticker else company.name
    lines = []
    for v in found:
        shown = (in_requested_unit(v.value, v.unit, request, metric.display) if request else None)
        line = (f"{head} {v.label.lower()}, {v.period_label}: "
                f"{shown or num(v.value, v.unit, display=metric.display)}")
        if v.derived:
            line += f" — derived, {v.formula}"
        if v.doc_id:  # read from a PDF's statement table: cite the page
            line += f" [{v.doc_id} p.{v.page}]" if v.page else f" [{v.doc_id}]"
        else:
            line += (f" [{v.concept}; {v.form} filed {v.filed}" + (f", {v.url}" if v.url else "")
                     + "]")
        if v.first_filed:
            line += (f" (restated: first filed as {num(v.first_filed['value'], v.unit)} in the "
                     f"{v.first_filed['form']} filed {v.first_filed['filed']})")
        lines.append(line + ".")
    if note:
        lines.append(f"({note})")
    if series and len(found) > 1:
        a, b = found[0], found[-1]
        change = b.value - a.value
        if a.unit == "pure":  # a ratio changes by percentage points
            lines.append(f"Change from {a.period_label.split(' (')[0]} to "
                         f"{b.period_label.split(' (')[0]}: {change * 100:+.1f} percentage points.")
            return lines
        pct = f" ({change / abs(a.value) * 100:+.1f}%)" if a.value else ""
        lines.append(f"Change from {a.period_label.split(' (')[0]} to {b.period_label.split(' (')[0]}: "
                     f"{num(change, a.unit, signed=True)}{pct}.")
    return lines


def source(v: FactValue) -> str:
    """Where an input of a formula was read: its page, or its filing."""
    if v.derived:
        return ""  # its own inputs are cited in its formula
    if v.doc_id:
        return f" [{v.doc_id} p.{v.page}]" if v.page else f" [{v.doc_id}]"
    return f" [{v.form} filed {v.filed}]"


def mean(found: list[FactValue], metric: Metric, display: str | None) -> FactValue:
    """The mean of a metric over the asked years ("the FY2018 - FY2020 3 year average")."""
    v = FactValue(**{**found[-1].to_dict(), "first_filed": None})
    v.value = sum(f.value for f in found) / len(found)
    v.derived = True
    v.label = f"{len(found)}-year average {metric.label[0].lower()}{metric.label[1:]}"
    v.start, v.first_year = found[0].start, found[0].fiscal_year
    span = f"FY{found[0].fiscal_year}–FY{found[-1].fiscal_year}"
    shown = display or metric.display
    if metric.kind != "ratio":
        v.formula = f"mean of {span}: " + "; ".join(
            f"FY{f.fiscal_year} = {num(f.value, f.unit, display=shown)}" for f in found)
        return v
    # each year's ratio from that year's lines, then their mean (not the summed lines' ratio)
    how = f" ({metric.formula} in each year)" if metric.formula else ""
    v.formula = f"the mean of each year's ratio{how}, {span}: " + "; ".join(
        f"FY{f.fiscal_year} = {num(f.value, f.unit, display=shown)} "
        f"({inputs(f, metric) or source(f).strip(' []')})" for f in found)
    return v


def inputs(v: FactValue, metric: Metric) -> str:
    """The inputs part of a formula value's statement ("capex FY2020 = $X [10-K filed …]")."""
    if not v.derived or not v.formula:
        return ""
    return v.formula.removeprefix(f"{metric.formula}: ")


def cagr_metric(metric: Metric, label: str) -> Metric:
    """How a compound annual growth rate of ``metric`` is written: a percentage."""
    return Metric(f"{metric.key}_cagr", label or f"Compound annual growth rate of "
                  f"{metric.label[0].lower()}{metric.label[1:]}", kind="ratio", display="percent")


def calendars_line(companies: list[FactCompany]) -> str:
    parts = [f"{c.name} ends its fiscal year around {month_day(c.fiscal_year_end)}"
             + (" (52/53-week years)" if c.week_based else "") for c in companies]
    return "Each company on its own fiscal calendar: " + "; ".join(parts) + "."


def comparison(values: list[FactValue]) -> list[str]:
    by_key: dict[tuple, list[FactValue]] = {}
    for v in values:
        by_key.setdefault((v.metric, v.fiscal_year, v.fiscal_quarter), []).append(v)
    lines = []
    for group in by_key.values():
        if len({v.cik for v in group}) < 2:
            continue
        ranked = sorted(group, key=lambda v: -v.value)
        top, low = ranked[0], ranked[-1]
        lines.append(f"{top.company}'s {top.label.lower()} was higher than {low.company}'s by "
                     f"{num(top.value - low.value, top.unit)}.")
    return lines


def not_in(companies: list[FactCompany]) -> str:
    """How a missing value is said: XBRL facts, or the lines read from a filing's statements
    (a company known by its key, with no CIK)."""
    xbrl = all(not c.cik.startswith("KEY:") for c in companies)
    return "Not in the XBRL facts: " if xbrl else "Not in the facts read from the filings: "


def same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def month_day(mm_dd: str) -> str:
    month, day = map(int, mm_dd.split("-"))
    return date(2001, month, min(day, 28 if month == 2 else day)).strftime("%-d %B")


def period_words(year: int, quarter: int | None) -> str:
    return f"Q{quarter} FY{year}" if quarter else f"FY{year}"


def day_after(iso: str) -> str:
    return date.fromordinal(date.fromisoformat(iso).toordinal() + 1).isoformat()


def num(value: float, unit: str, signed: bool = False, display: str | None = None) -> str:
    """Money in millions as filings print it ($60,922 million), EPS in dollars, shares in
    millions; the sign leads."""
    sign = "-" if value < 0 else ("+" if signed and value > 0 else "")
    v = abs(value)
    if unit == "USD/shares":
        return f"{sign}${v:,.2f} per share"
    if unit == "shares":
        return f"{sign}{v / 1e6:,.1f} million shares" if v >= 1e6 else f"{sign}{v:,.0f} shares"
    if unit == "USD":
        if v >= 1e6:
            return f"{sign}${v / 1e6:,.0f} million" if v >= 1e8 else f"{sign}${v / 1e6:,.1f} million"
        return f"{sign}${v:,.0f}"
    if unit == "pure" and display == "number":  # days, turnover, a ratio of two balances
        return f"{sign}{v:,.2f}"
    if unit == "pure":  # a ratio
        return f"{sign}{v * 100:.1f}%"
    return f"{sign}{v:,.4g} {unit}"

