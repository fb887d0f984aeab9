"""The unit a question asks its answer in, and a value written in it.

"in USD millions", "Answer in USD billions", "in units of percents", "round your answer to two
decimal places": the stored value stays exact; only the answer's wording follows the request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SCALES = {"thousands": 1e3, "millions": 1e6, "billions": 1e9}
_SCALE = re.compile(r"\b(?:in\s+)?(?:units\s+of\s+)?(?:usd|us\s*\$|\$|dollars)\s*(thousands|millions|billions)\b"
                    r"|\bin\s+(?:usd\s+|\$\s*)?(thousands|millions|billions)\b", re.I)
_PERCENT = re.compile(r"\b(?:in\s+(?:units\s+of\s+)?|as\s+a\s+)(?:percents?|percentages?)\b|\(\s*in\s*%\s*\)",
                      re.I)
_DECIMALS = re.compile(r"\bround(?:ed)?\s+(?:\w+\s+){0,3}?to\s+(?:the\s+)?(one|two|three|four|\d)"
                       r"\s+decimal", re.I)
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4}


@dataclass(frozen=True)
class UnitRequest:
    scale: float | None = None  # 1e6 = "in USD millions"
    percent: bool = False
    decimals: int | None = None

    @property
    def given(self) -> bool:
        return self.scale is not None or self.percent or self.decimals is not None


def read_request(question: str) -> UnitRequest:
    m = _SCALE.search(question)
    scale = _SCALES[(m.group(1) or m.group(2)).casefold()] if m else None
    d = _DECIMALS.search(question)
    decimals = None
    if d:
        word = d.group(1).casefold()
        decimals = int(word) if word.isdigit() else _WORDS[word]
    return UnitRequest(scale, bool(_PERCENT.search(question)), decimals)


def in_requested_unit(value: float, unit: str, request: UnitRequest,
                      display: str | None = None) -> str | None:
    """The value as the question asked for it, or None when it asked for nothing that applies
    (the default wording is used then)."""
    sign = "-" if value < 0 else ""
    v = abs(value)
    if unit == "USD" and request.scale:
        word = {1e3: "thousand", 1e6: "million", 1e9: "billion"}[request.scale]
        decimals = request.decimals if request.decimals is not None else (
            2 if request.scale == 1e9 else (0 if float(v / request.scale).is_integer() else 2))
        return f"{sign}${v / request.scale:,.{decimals}f} {word}"
    if unit == "pure" and (request.percent or request.decimals is not None):
        if request.percent or (display == "percent" and request.decimals is None):
            decimals = 1 if request.decimals is None else request.decimals
            return f"{sign}{v * 100:.{decimals}f}%"
        return f"{sign}{v:.{request.decimals}f}"
    if unit == "USD/shares" and request.decimals is not None:
        return f"{sign}${v:.{request.decimals}f} per share"
    return None
