"""Direction words from the numbers: "improving", "declined", "grew", "stable", "positive".

A question that asks which way a metric went ("Does Adobe have an improving operating margin
as of FY2022?", "Has the quick ratio improved or declined between FY2023 and FY2022?", "Did
Pfizer grow its PP&E between FY20 and FY21?") or whether it is positive gets its verdict from
the values the facts hold, never from the model:

    ask = read_trend(question)           # None: the question asks no direction
    ask.periods(periods)                 # the asked periods, with the comparison period added
    verdict(ask, metric, values)         # "No: operating margin declined from 36.8% …"

"Improving" reads by the metric's ``better`` side (lower is better for days outstanding, the
cash conversion cycle, leverage); "grew"/"increased" read literally. "Stable" holds when no
period-to-period change exceeds the tolerance the question states ("not fluctuating more than
roughly 2%"), else the convention in ``retrieval/data/rules_of_thumb.yaml``, which the answer
names. A missing period is said, and nothing is guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

RULES_YAML = Path(__file__).parents[1] / "data" / "rules_of_thumb.yaml"

_UP = r"improv\w*|grow\w*|grew|growth|increas\w*|ris(?:e|en|ing)|rose|expand\w*|higher"
_DOWN = r"declin\w*|deteriorat\w*|worsen\w*|decreas\w*|f[ae]ll\w*|drop\w*|reduc\w*|shr[iu]nk\w*|lower"
_DIRECTION = re.compile(rf"\b(?P<up>{_UP})\b|\b(?P<down>{_DOWN})\b", re.I)
_STABLE = re.compile(r"\b(?:stable|steady|consistent\w*|fluctuat\w*)\b", re.I)
_SIGN = re.compile(r"\b(?P<sign>positive|negative)\b", re.I)
_YES_NO = re.compile(r"^\W*(?:is|are|was|were|does|do|did|has|have|had|can|could|will|would)\b",
                     re.I)
_EITHER = re.compile(rf"\b(?:{_UP})\s+or\s+(?:{_DOWN})\b|\b(?:{_DOWN})\s+or\s+(?:{_UP})\b", re.I)
_TOLERANCE = re.compile(r"(?:more\s+than|over|beyond|within|exceed\w*)\s+(?:roughly\s+|about\s+|"
                        r"approximately\s+|~\s*)?(\d+(?:\.\d+)?)\s*(%|percent|percentage\s+points?|"
                        r"pp|bps|basis\s+points)", re.I)
_FUTURE = re.compile(r"\b(?:expect\w*|forecast\w*|guid\w*|outlook|project\w*|will)\b", re.I)
_EXISTS = re.compile(r"^\W*(?:is|are|was|were)\s+there\b", re.I)
_DENOMINATOR = re.compile(r"(?:percent(?:age)?|%|share|proportion|fraction|ratio)\s+of\s+(?:the\s+|its\s+)?$"
                          r"|\b(?:relative|compared)\s+to\s+$|\bper\s+$", re.I)
_NEAR = 40  # characters either side of the metric's mention
_IMPROVE = re.compile(r"\b(?:improv\w*|deteriorat\w*|worsen\w*)\b", re.I)


@dataclass(frozen=True)
class TrendAsk:
    kind: str  # direction | stable | sign
    yes_no: bool  # a yes/no question: the verdict opens with Yes or No
    up: bool | None = None  # the direction the question names (direction); None for "either"
    better: bool = False  # "improving"/"worsening": read by the metric's better side
    positive: bool | None = None  # sign: asks "positive" (True) or "negative" (False)
    tolerance: tuple[float, str] | None = None  # stable: (value, "percent" | "points")

    def periods(self, periods: list[tuple[int, int | None]]) -> list[tuple[int, int | None]]:
        """The periods to read: a direction over one named period compares it with the one
        before (the same quarter a year earlier); stability reads at least three years."""
        if not periods:
            return periods
        year, quarter = periods[-1]
        if self.kind == "direction" and len(periods) == 1:
            return [(year - 1, quarter), (year, quarter)]
        if self.kind == "stable" and len(periods) < 3:
            return [(year - 2, quarter), (year - 1, quarter), (year, quarter)]
        return periods


def read_trend(question: str, near: tuple[int, int] | None = None) -> TrendAsk | None:
    """What direction, sign or stability the question asks of the metric named at ``near``
    (its span in the question): a yes/no question or an "improved or declined" one whose
    direction word stands within a few words of the metric. None when it asks none, or asks
    about the future (a forecast is not in the facts)."""
    text = question.split("If ")[0]  # "If the quick ratio is not relevant …" is not the ask
    yes_no = bool(_YES_NO.match(text))
    if _FUTURE.search(text) or not (yes_no or _EITHER.search(text)):
        return None
    if _EXISTS.match(text):  # "Were there any events that increased net income?"
        return None
    if near is not None:
        if _DENOMINATOR.search(question[max(0, near[0] - 30):near[0]]):
            return None  # "wages as a percent of net sales": the metric is not the subject
        text = text[max(0, near[0] - _NEAR):near[1] + _NEAR]
    if _STABLE.search(text):
        tol = _TOLERANCE.search(question)
        tolerance = None
        if tol:
            unit = tol.group(2).casefold()
            value = float(tol.group(1)) / (100 if unit in ("bps", "basis points") else 1)
            tolerance = (value, "percent" if unit in ("%", "percent") else "points")
        return TrendAsk("stable", yes_no, tolerance=tolerance)
    if _EITHER.search(text):
        return TrendAsk("direction", False, None, better=bool(_IMPROVE.search(text)))
    if m := _DIRECTION.search(text):
        return TrendAsk("direction", yes_no, m.group("up") is not None,
                        better=bool(_IMPROVE.search(m.group(0))))
    if yes_no and (m := _SIGN.search(text)):
        return TrendAsk("sign", True, positive=m.group("sign").casefold() == "positive")
    return None


@cache
def rules_of_thumb() -> dict:
    return yaml.safe_load(RULES_YAML.read_text(encoding="utf-8"))


def verdict(ask: TrendAsk, metric, values: list, shown) -> str | None:
    """The verdict sentence over ``values`` (one metric of one company, oldest first);
    ``shown(value)`` writes a value as the answer does. None when there is nothing to judge."""
    if not values:
        return None
    label = metric.label[0].lower() + metric.label[1:]
    when = [_when(v) for v in values]
    if ask.kind == "sign":
        v = values[-1]
        positive = v.value > 0
        yes = positive == ask.positive
        return (f"{'Yes' if yes else 'No'}: {label} was {'positive' if positive else 'negative' if v.value < 0 else 'zero'}"
                f", {shown(v)} in {when[-1]}.")
    if len(values) < 2:
        return (f"The direction cannot be told: only {when[0]} of {label} is in the facts "
                f"(the comparison period is missing).")
    if ask.kind == "stable":
        return _stable(ask, metric, label, values, when, shown)
    a, b = values[0], values[-1]
    change = b.value - a.value
    lower_better = metric.better == "lower"
    went_up = change > 0
    if change == 0:
        word = "was unchanged"
    elif ask.better:
        word = "improved" if went_up != lower_better else "declined"
    else:
        word = "increased" if went_up else "decreased"
    delta = _delta(a, b, metric)
    sentence = f"{label} {word} from {shown(a)} in {when[0]} to {shown(b)} in {when[-1]}{delta}"
    if lower_better and ask.better and change:
        sentence += " (lower is better for this measure)"
    if not ask.yes_no or ask.up is None:
        return sentence[0].upper() + sentence[1:] + "."
    if change == 0:
        return f"No: {sentence}."
    improved = went_up != lower_better if ask.better else went_up
    return f"{'Yes' if improved == ask.up else 'No'}: {sentence}."


def _stable(ask: TrendAsk, metric, label: str, values: list, when: list, shown) -> str:
    ratio = values[0].unit == "pure"
    if ask.tolerance:
        limit, unit = ask.tolerance
        source = "the tolerance the question states"
    else:
        rule = rules_of_thumb()["stable"]
        limit, unit = (rule["ratio_points"], "points") if ratio else (rule["amount_percent"],
                                                                      "percent")
        source = f"finrag's convention ({rule['source']})"
    changes = []
    for a, b in zip(values, values[1:]):
        if unit == "points" or (ratio and unit == "percent" and ask.tolerance):
            # a ratio's change in percentage points ("gross margin not fluctuating more than 2%")
            changes.append(abs(b.value - a.value) * (100 if ratio else 1))
        elif a.value:
            changes.append(abs(b.value - a.value) / abs(a.value) * 100)
        else:
            changes.append(float("inf"))
    biggest = max(changes)
    stable = biggest <= limit
    series = ", ".join(f"{shown(v)} ({w})" for v, w in zip(values, when))
    size = "percentage points" if (unit == "points" or ratio) else "%"
    head = ("Yes" if stable else "No") if ask.yes_no else ("Stable" if stable else "Not stable")
    return (f"{head}: {label} was {series}; the largest change from one period to the next was "
            f"{biggest:.1f} {size}, {'within' if stable else 'more than'} {limit:g} {size} "
            f"({source}).")


def _delta(a, b, metric) -> str:
    change = b.value - a.value
    if a.unit == "pure" and metric.display != "number":
        return f" ({change * 100:+.1f} percentage points)"
    if a.value:
        return f" ({change / abs(a.value) * 100:+.1f}%)"
    return ""


def _when(v) -> str:
    quarter = v.period == "Q" or (v.period == "instant" and v.fiscal_quarter not in (None, 4))
    return f"Q{v.fiscal_quarter} FY{v.fiscal_year}" if quarter else f"FY{v.fiscal_year}"
