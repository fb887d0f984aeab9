"""Fiscal periods: read from question text, and placed on a company's fiscal calendar.

``read_periods`` finds the fiscal years, quarters and dates a question names ("FY2018", "FY18",
"Q2'2023", "2021 Q1", "second fiscal quarter of 2023", "fiscal year ended January 31, 2024",
"dated 1st July 2022", "August 2023"); ``fiscal_period`` says which fiscal year and quarter a
calendar date falls in for a company.

finrag names a fiscal year after the calendar year it ends in (``retrieval.ingest.metadata``): a year
ending 31 January 2023 is FY2023. A 52/53-week year ends within 3 days of its nominal end, so a
day up to 3 days past the nominal end still belongs to the year that is closing.
"""

from __future__ import annotations

import calendar
import math
import re
from dataclasses import dataclass, field
from datetime import date, timedelta

_WEEK_SLACK = timedelta(days=3)

_MONTHS = {m: i for i, names in enumerate(
    [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
     ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
     ("october", "oct"), ("november", "nov"), ("december", "dec")], start=1) for m in names}
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4,
             "4th": 4}


def year_end_parts(fiscal_year_end: str | None) -> tuple[int, int]:
    """(month, day) of a "MM-DD" fiscal-year end; 31 December when unknown."""
    month, day = map(int, (fiscal_year_end or "12-31").split("-"))
    return month, day


def nominal_end(fiscal_year: int, fiscal_year_end: str | None) -> date:
    """The nominal last day of a fiscal year ("02-29" becomes the 28th in other years)."""
    month, day = year_end_parts(fiscal_year_end)
    return date(fiscal_year, month, min(day, calendar.monthrange(fiscal_year, month)[1]))


def fiscal_period(day: date, fiscal_year_end: str | None, week_based: bool = False) -> tuple[int, int]:
    """(fiscal year, fiscal quarter 1-4) that contains ``day``.

    >>> fiscal_period(date(2022, 8, 15), "01-31")   # a January year end: Aug 2022 is in FY2023
    (2023, 3)
    """
    slack = _WEEK_SLACK if week_based else timedelta(0)
    year = day.year
    while nominal_end(year, fiscal_year_end) + slack < day:
        year += 1
    while nominal_end(year - 1, fiscal_year_end) + slack >= day:
        year -= 1
    start = nominal_end(year - 1, fiscal_year_end) + timedelta(days=1)
    if week_based:  # 13-week quarters: counted in days, so a quarter ending 3 August is Q2
        days = (day - start).days + 1
        return year, min(4, max(1, math.ceil((days - 3) / 91.31)))
    months_in = (day.year * 12 + day.month) - (start.year * 12 + start.month)
    return year, min(4, max(1, months_in // 3 + 1))


def fiscal_year_of_calendar_year(year: int, fiscal_year_end: str | None) -> int:
    """The fiscal year that holds most of calendar ``year`` (FY ending Jan 2023 for 2022)."""
    month, _ = year_end_parts(fiscal_year_end)
    return year + 1 if month < 6 else year


def end_from_period(period_end: str | None) -> str | None:
    """The "MM-DD" of an annual filing's period end, used when the company table has none."""
    if not period_end:
        return None
    try:
        day = date.fromisoformat(period_end)
    except ValueError:
        return None
    return f"{day.month:02d}-{day.day:02d}"


def date_period(d: DateMention, fye: str | None, week_based: bool = False) -> tuple[int, int | None]:
    """The (fiscal year, quarter) a date of a question stands for; quarter None for a year end."""
    year, quarter = fiscal_period(d.day, fye, week_based)
    at_year_end = abs((d.day - nominal_end(year, fye)).days) <= (3 if week_based else 0)
    if d.role == "year_end" or (at_year_end and d.precision == "day" and d.months in (None, 12)):
        return year, None
    if d.months in (6, 9):
        return year, d.months // 3
    return year, quarter


def is_quarter_end(day: date, fye: str | None, week_based: bool = False) -> bool:
    """Whether a day is (within a 13-week drift of) the end of one of the fiscal quarters."""
    month, dom = year_end_parts(fye)
    for k in range(4):
        m = (month - 1 + 3 * k) % 12 + 1
        for year in (day.year - 1, day.year, day.year + 1):
            last = calendar.monthrange(year, m)[1]
            end = date(year, m, last if dom >= 28 and not week_based else min(dom, last))
            if abs((day - end).days) <= (6 if week_based else 0):  # 13-week quarters drift
                return True
    return False


# --- reading periods from text -------------------------------------------------------------------


@dataclass
class DateMention:
    day: date
    precision: str  # "day" | "month"
    role: str  # "date" | "year_end" (fiscal year ended …) | "period_end" (quarter/months ended …)
    months: int | None = None  # "six months ended …" -> 6
    dated: bool = False  # "dated"/"filed" next to it: the date of a filing


@dataclass
class Periods:
    periods: list[tuple[int | None, int | None]] = field(default_factory=list)  # (FY, quarter)
    calendar_years: list[int] = field(default_factory=list)
    dates: list[DateMention] = field(default_factory=list)


_Y4 = r"(?:19[89]\d|20\d\d)"
_YR = rf"(?:{_Y4}|\d{{2}})"
_FYP = r"(?:FY|fiscal(?:\s+year)?)\s*['’]?\s*"  # "FY", "FY'", "fiscal", "fiscal year"
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")"


def _year(text: str) -> int:
    value = int(text)
    return value if value >= 100 else (1900 + value if value > 50 else 2000 + value)


class _Text:
    """The question with matched spans blanked out, so a year is read only once."""

    def __init__(self, text: str):
        self.text = text

    def take(self, pattern: str, flags: int = re.I):
        for m in list(re.finditer(pattern, self.text, flags)):
            if self.text[m.start():m.end()].strip():
                yield m
                self.text = self.text[:m.start()] + " " * (m.end() - m.start()) + self.text[m.end():]


def _dates(t: _Text) -> list[DateMention]:
    out: list[DateMention] = []
    patterns = (
        (rf"\b({_Y4})-(\d\d)-(\d\d)\b", "ymd"),
        (rf"\b(\d{{1,2}})/(\d{{1,2}})/({_Y4})\b", "mdy"),
        (rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+({_Y4})\b", "Mdy"),
        (rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\.?,?\s+({_Y4})\b", "dMy"),
        (rf"\b({_MONTH})\.?,?\s+(?:of\s+)?({_Y4})\b", "My"),
    )
    for pattern, shape in patterns:
        for m in t.take(pattern):
            g = m.groups()
            try:
                if shape == "ymd":
                    day, precision = date(int(g[0]), int(g[1]), int(g[2])), "day"
                elif shape == "mdy":
                    day, precision = date(int(g[2]), int(g[0]), int(g[1])), "day"
                elif shape == "Mdy":
                    day, precision = date(int(g[2]), _MONTHS[g[0].casefold()], int(g[1])), "day"
                elif shape == "dMy":
                    day, precision = date(int(g[2]), _MONTHS[g[1].casefold()], int(g[0])), "day"
                else:
                    day, precision = date(int(g[1]), _MONTHS[g[0].casefold()], 15), "month"
            except ValueError:
                continue
            before = t.text[max(0, m.start() - 40):m.start()].casefold()
            role, months = "date", None
            if re.search(r"(?:fiscal\s+)?year\s+end(?:ed|ing)?\s*(?:on\s+)?$", before):
                role = "year_end"
            elif found := re.search(r"(quarter|(three|six|nine|twelve|3|6|9|12)\s+months?|period)"
                                    r"\s+end(?:ed|ing)?\s*(?:on\s+)?$", before):
                role = "period_end"
                count = found.group(2)
                if found.group(1) == "quarter":
                    months = 3
                elif count:
                    months = {"three": 3, "six": 6, "nine": 9, "twelve": 12}.get(count) or int(count)
            dated = bool(re.search(r"\b(?:dated|filed|announced|released)\s*(?:on\s+)?$", before))
            out.append(DateMention(day, precision, role, months, dated))
    return out


def _quarters(t: _Text) -> list[tuple[int | None, int]]:
    """(fiscal year or None, quarter) pairs."""
    out: list[tuple[int | None, int]] = []
    q_then_year = (
        rf"\bQ([1-4])\s*(?:of\s+)?(?:the\s+)?(?:{_FYP}({_YR})|['’]\s*({_YR})|({_Y4}))(?!\d)",
        rf"\b([1-4])Q\s*['’]?\s*({_YR})\b",
    )
    for pattern in q_then_year:
        for m in t.take(pattern):
            q, *years = m.groups()
            out.append((_year(next(y for y in years if y)), int(q)))
    for m in t.take(rf"\b(?:{_FYP}({_YR})|({_Y4}))\s*[-/]?\s*Q([1-4])\b"):
        out.append((_year(m.group(1) or m.group(2)), int(m.group(3))))
    ordinal = "|".join(_ORDINALS)
    for m in t.take(rf"\b({ordinal})\s+(?:fiscal\s+)?quarter\b(?:\s+(?:of\s+)?(?:the\s+)?"
                    rf"(?:{_FYP}({_YR})|({_Y4})))?"):
        year = m.group(2) or m.group(3)
        out.append((_year(year) if year else None, _ORDINALS[m.group(1).casefold()]))
    for m in t.take(rf"\b(?:(H1|first\s+half)|(H2|second\s+half))\b(?:\s+(?:of\s+)?(?:the\s+)?"
                    rf"(?:{_FYP}({_YR})|({_Y4})))?"):
        year = m.group(3) or m.group(4)
        out.append((_year(year) if year else None, 2 if m.group(1) else 4))
    for m in t.take(r"\bQ([1-4])\b"):
        out.append((None, int(m.group(1))))
    return out


def _years(t: _Text) -> tuple[list[int], list[int]]:
    """Fiscal years (FY2018, FY18, fiscal 2022, bare 2022; ranges filled in) and calendar years."""
    calendar_years = [_year(m.group(1)) for m in
                      t.take(rf"\b(?:calendar(?:\s+year)?|CY)\s*['’]?\s*({_YR})\b")]
    found: list[tuple[int, int, int]] = []  # (start, end, year)
    for m in t.take(rf"\b{_FYP}({_YR})\b"):
        found.append((m.start(), m.end(), _year(m.group(1))))
    for m in t.take(rf"(?<![\w$.,/])({_Y4})(?![\w%]|[.,]\d)"):
        if not re.search(r"\b(?:due|matur\w*|until|by)\s*$", t.text[:m.start()], re.I):
            found.append((m.start(), m.end(), int(m.group(1))))  # not "notes due 2029"
    found.sort()
    years = [y for _, _, y in found]
    for (_, end, a), (start, _, b) in zip(found, found[1:]):
        between = t.text[end:start]
        if a < b <= a + 10 and re.fullmatch(r"\s*(?:-|–|—|to|through|thru)\s*", between, re.I):
            years += range(a + 1, b)
    return list(dict.fromkeys(years)), calendar_years


def read_periods(text: str) -> Periods:
    """Fiscal years and quarters (a quarter with no year of its own takes the years named),
    calendar years and dates written in ``text``; each piece of text is read once."""
    t = _Text(text)
    dates = _dates(t)
    quarters = _quarters(t)
    years, calendar_years = _years(t)
    periods: list[tuple[int | None, int | None]] = [p for p in quarters if p[0] is not None]
    loose = [q for y, q in quarters if y is None]
    if loose and years:  # "Q4 revenue in 2023"
        periods += [(y, q) for y in years for q in loose]
    else:
        periods += [(None, q) for q in loose]
        periods += [(y, None) for y in years]
    return Periods(list(dict.fromkeys(periods)), calendar_years, dates)


def quarter_ending(day: date, fiscal_year: int, fye: str | None) -> int:
    """Which fiscal quarter (1-4) of ``fiscal_year`` closes on ``day``, a quarter end.

    Counted in days from the year's start, so a 52/53-week quarter that ends a few days into
    the next month (Apple's Q1 ending 30 December) is not taken for the next quarter."""
    start = nominal_end(fiscal_year - 1, fye)
    return min(4, max(1, round((day - start).days / 91.31)))


# --- SEC business days ----------------------------------------------------------------------------


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The n-th given weekday of a month (n = -1: the last)."""
    if n > 0:
        first = date(year, month, 1)
        return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
    last = date(year, month, calendar.monthrange(year, month)[1])
    return last - timedelta(days=(last.weekday() - weekday) % 7)


def _observed(day: date) -> date:
    return day + timedelta(days=1) if day.weekday() == 6 else \
        day - timedelta(days=1) if day.weekday() == 5 else day


def federal_holidays(year: int) -> set[date]:
    """US federal holidays (as observed), the days EDGAR does not accept filings besides weekends."""
    mon, thu = 0, 3
    days = {
        _observed(date(year, 1, 1)), _nth_weekday(year, 1, mon, 3), _nth_weekday(year, 2, mon, 3),
        _nth_weekday(year, 5, mon, -1), _observed(date(year, 7, 4)), _nth_weekday(year, 9, mon, 1),
        _nth_weekday(year, 10, mon, 2), _observed(date(year, 11, 11)),
        _nth_weekday(year, 11, thu, 4), _observed(date(year, 12, 25)),
    }
    if year >= 2021:
        days.add(_observed(date(year, 6, 19)))  # Juneteenth, from 2021
    return days


def is_business_day(day: date) -> bool:
    return day.weekday() < 5 and day not in federal_holidays(day.year) \
        and day not in federal_holidays(day.year + 1)  # 1 January observed on 31 December


def business_days_after(event: date, filed: date) -> int | None:
    """How many business days after ``event`` a filing was made (0 on the day itself or on a
    weekend or holiday right after it); None when it was filed before the event. An 8-K is due
    within four business days of the event it reports."""
    if filed < event:
        return None
    count, day = 0, event
    while day < filed:
        day += timedelta(days=1)
        count += is_business_day(day)
    return count
