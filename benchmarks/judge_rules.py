"""Deterministic checks the judge applies before asking its LLM.

A small local LLM is a poor judge of two things a rule settles reliably: whether an answer
declines to answer, and whether a short numeric reference figure appears in the answer. So
``rule_verdict`` decides those cases and leaves every other answer to the LLM:

- **refusal** — the answer says at once (in its first ``REFUSAL_WITHIN`` characters) that it
  cannot answer (``REFUSAL``: "not provided", "does not include", "unable to", "I'm sorry",
  "we would need", …) and none of the reference's figures appears in it: label refusal,
  score 1.
- **figures** (short references only, at most ``SHORT_WORDS`` words, with at least one figure
  that is not a year; answers with at most ``MAX_ANSWER_FIGURES`` figures, list numbering
  aside):
  every reference figure appears in the answer → correct, score 9; the answer states figures
  but none of them matches any reference figure → incorrect, score 2. Otherwise: no verdict.

Two figures match when they are equal up to 1% relative or the candidate's own rounding (half a
unit of its last written digit, when that is at most 5% of the figure), at any power of 1,000 (units: $1,577 = $1.577 billion when
the reference is in millions) and as a fraction or a percentage (0.654 = 65.4%). Years
(1990–2035 written without decimals) are not figures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SHORT_WORDS = 12
RULES_VERSION = 1

REFUSAL = re.compile(
    r"\b(?:not (?:found|available|provided|disclosed|specified|included|given|stated)"
    r"|(?:does|do|did) not (?:provide|include|contain|specify|disclose|state|give)"
    r"|(?:do not|don't) have (?:access|the (?:specific |necessary |required )?(?:information|data))"
    r"|cannot (?:be )?(?:determine|answer|find|provide|calculate|compute)d?"
    r"|can't (?:determine|answer|find|provide|calculate)|unable to|i'm sorry|i am sorry"
    r"|no (?:specific )?(?:information|data) (?:is|was|on|about|regarding)"
    r"|insufficient (?:information|data)|as of my last (?:update|knowledge)"
    r"|(?:we|you) would need|(?:need|requires?) (?:more|additional|further) "
    r"(?:information|data|documents?|context)|is not possible to (?:determine|answer|calculate))",
    re.IGNORECASE)
REFUSAL_WITHIN = 300  # characters: a refusal says so at once

_NUMBER = re.compile(r"(?<![\w.])[-−]?\(?\$?\s?((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)")
_LIST_MARKER = re.compile(r"(?m)^\s*\d{1,2}[.)]\s")
MAX_ANSWER_FIGURES = 8  # an answer listing more figures matches a reference one by chance


@dataclass(frozen=True)
class Figure:
    value: float
    decimals: int  # digits written after the point: the precision of the figure as written


def figures(text: str) -> list[Figure]:
    """The numbers written in ``text``, years left out."""
    out = []
    for m in _NUMBER.finditer(_LIST_MARKER.sub(" ", text or "")):
        raw = m.group(1).replace(",", "")
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        value = float(raw)
        if decimals == 0 and 1990 <= value <= 2035 and "," not in m.group(1):
            continue  # a year
        sign = -1.0 if m.group(0).lstrip().startswith(("-", "−", "(")) else 1.0
        out.append(Figure(sign * value, decimals))
    return out


def _close(ref: float, cand: Figure) -> bool:
    half_unit = 0.5 * 10 ** -cand.decimals
    for scale in (1.0, 1e3, 1e-3, 1e6, 1e-6, 1e9, 1e-9, 100.0, 0.01):
        target = abs(ref * scale)
        if target == 0:
            if cand.value == 0:
                return True
            continue
        # the candidate's own rounding counts only when it loses at most 5% of the figure
        tolerance = max(0.01 * target, half_unit if half_unit <= 0.05 * target else 0.0)
        if abs(abs(cand.value) - target) <= tolerance:
            return True
    return False


def matches(ref: Figure, answer_figures: list[Figure]) -> bool:
    return any(_close(ref.value, f) for f in answer_figures)


@dataclass
class RuleVerdict:
    score: int
    label: str
    reason: str


def rule_verdict(gold: str, answer: str) -> RuleVerdict | None:
    """A verdict when a rule settles the case (see the module docstring), else None."""
    gold, answer = (gold or "").strip(), (answer or "").strip()
    ref, cand = figures(gold), figures(answer)
    found = [r for r in ref if matches(r, cand)]
    if not answer or (REFUSAL.search(answer[:REFUSAL_WITHIN]) and not found):
        return RuleVerdict(1, "refusal", "rule: the answer declines and gives no reference "
                                         "figure")
    if ref and len(gold.split()) <= SHORT_WORDS and len(cand) <= MAX_ANSWER_FIGURES:
        if len(found) == len(ref):
            return RuleVerdict(9, "correct", "rule: every reference figure is in the answer")
        if cand and not found:
            return RuleVerdict(2, "incorrect", "rule: the answer's figures differ from the "
                                               "reference")
    return None
