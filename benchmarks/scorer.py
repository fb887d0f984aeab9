"""The deterministic FinanceBench scorer: a label for every answer a rule can settle.

``score(gold, answer)`` returns a ``Verdict`` (label correct / incorrect / refusal, a 1..10
score and the rule that decided) or ``None`` when no rule applies; the LLM judge
(``benchmarks.judge``) takes only those. The rules were written on the human-labelled answers
of the ``tune`` questions (``benchmarks.splits``) and are calibrated on the ``test`` questions.

Kinds of reference (gold) answer:

- **numeric**: at most ``SHORT_WORDS`` words with at least one figure ("$1577.00", "30.8%",
  "AMCOR's Adj. EBITDA was $2,018mn in FY 2023"). Every reference figure in the answer →
  correct; the answer states figures and none matches a reference figure → incorrect.
- **yes/no**: the reference starts with Yes or No. An answer that starts with the other word
  → incorrect; the same word, and no figure of the reference contradicted → correct.
- anything else (explanations, lists, names): no rule; the LLM judge decides.

Before these, an answer that declines (``REFUSAL`` within its first ``REFUSAL_WITHIN``
characters), is empty or says nothing but citation tags and page references
(``says_nothing``), and gives no reference figure is a refusal.

Figures: numbers with their sign (a minus or parentheses), currency, scale word (thousand, k,
million, mn, m, billion, bn, b, trillion) and percent sign. Years (1990–2035 written bare),
list numbers, dates (``June 30, 2023``) and citation tags (``[DOC p.N]``) are not figures.
Two figures match when, after scale words, they are equal within ``TOLERANCE`` (1%) of the
reference, within the reference's own rounding (half a unit of its last written digit), or
within the candidate's rounding when that is at most 5% of the reference; a figure without a scale word may stand at
any power of 1,000 when the other has one (the question fixes the unit: "$1,577 million" =
"$1.577 billion" = 1577, but 11.2 is not 0.0112),
and a percentage matches the same ratio as a fraction (65.4% = 0.654). Signs are compared
only when both figures carry one explicitly.

Scores on the HDRR paper's 1..10 rubric for the rule-decided answers: correct 10 (every
reference figure, or the reference's yes/no with no figure contradicted), incorrect 2,
refusal 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

VERSION = 5  # bump on any change of a rule: reports' config hashes and the calibration a
# quality report cites carry it (rule verdicts are computed afresh, never cached)
SHORT_WORDS = 14
TOLERANCE = 0.01
REFUSAL_WITHIN = 400
MAX_ANSWER_FIGURES = 12  # an answer listing more figures matches a reference one by chance

REFUSAL = re.compile(
    r"\b(?:not (?:found|available|provided|disclosed|specified|included|given|stated|mentioned)"
    r"|(?:does|do|did) not (?:provide|include|contain|specify|disclose|state|give|mention)"
    r"|(?:do not|don't|does not) have (?:access|real-time|the (?:exact |specific |necessary |required )?"
    r"(?:information|data|figures|numbers))|(?:haven't|have not|has not|hasn't) (?:been )?provided"
    r"|not (?:fully|explicitly|directly) (?:provided|stated|disclosed|available)|as an ai\b"
    r"|cannot (?:be )?(?:determine|answer|find|provide|calculate|compute)d?"
    r"|can't (?:determine|answer|find|provide|calculate)|unable to|i'm sorry|i am sorry"
    r"|no (?:specific )?(?:information|data) (?:is|was|on|about|regarding)"
    r"|insufficient (?:information|data)|as of my last (?:update|knowledge)"
    r"|(?:we|you) would need|(?:need|requires?) (?:more|additional|further) "
    r"(?:information|data|documents?|context)|is not possible to (?:determine|answer|calculate))",
    re.IGNORECASE)

_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "millions": 1e6, "mn": 1e6, "mm": 1e6,
           "m": 1e6, "billion": 1e9, "billions": 1e9, "bn": 1e9, "b": 1e9, "trillion": 1e12}
_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-−–+]\s?)?(?P<paren>\()?\s?(?P<cur>[$€£])?\s?"
    r"(?P<num>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?!\.?\d)"
    r"(?:\s?(?P<pct>%|percent\b|per cent\b)|\s?(?P<scale>thousand|millions?|billions?|trillion"
    r"|mn|mm|bn|k|m|b)\b)?(?P<close>\))?", re.IGNORECASE)
_CONFLICT_NOTE = re.compile(r"\(\s*Another part of the filing gives a different answer:", re.I)
_TAG = re.compile(r"\[[^\[\]]{1,120}?\bp{1,2}\.\s*\d+(?:\s*-\s*\d+)?\s*\]")
_PAGE_REF = re.compile(r"\b(?:pages?|pp?)\.?\s*\d+(?:\s*-\s*\d+)?\b", re.I)
_MONTHS = ("jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march|april"
           "|june|july|august|september|october|november|december")
_DATE = re.compile(rf"\b(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b,?(?:\s*\d{{4}})?"
                   rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\b"
                   r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b", re.IGNORECASE)
_LIST_MARKER = re.compile(r"(?m)^\s*\(?\d{1,2}[.)]\s")
_YES_NO = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
BARE_WORDS = 3  # a reference of at most this many words with a figure is the figure itself
QUANTITY = re.compile(
    r"\b(?:how (?:much|many)|calculate|compute|ratio|margin|percent(?:age)?|amount|in usd"
    r"|round(?:ed)?\b|what (?:is|was|were|are)\b[^?]{0,80}?\b(?:revenue|sales|income|ebitda|eps"
    r"|earnings|capex|capital expenditure|cash|debt|assets|liabilities|expenses?|dividends?"
    r"|growth|change|value|total|costs?|turnover|days|return))", re.IGNORECASE)


@dataclass(frozen=True)
class Figure:
    value: float  # scale word applied; a percentage as written (30.8 for 30.8%)
    step: float  # half a unit of the last written digit, in the same units as value
    percent: bool = False
    scaled: bool = False  # a scale word was written
    signed: bool = False  # a sign (+, minus) or parentheses were written


def _clean(text: str) -> str:
    text = _TAG.sub(" ", text or "")
    text = _DATE.sub(" ", text)
    return _LIST_MARKER.sub(" ", text)


def figures(text: str) -> list[Figure]:
    """The figures written in ``text`` (see the module docstring for what is left out)."""
    out = []
    for m in _NUMBER.finditer(_clean(text)):
        raw = m.group("num").replace(",", "")
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        value = float(raw)
        scale_word = (m.group("scale") or "").lower()
        bare = not (m.group("cur") or m.group("pct") or scale_word)
        if bare and decimals == 0 and 1990 <= value <= 2035 and "," not in m.group("num"):
            continue  # a year
        if scale_word in ("m", "b", "k") and not m.group("cur") and decimals == 0 and value < 10:
            scale_word = ""  # "3 m" is more likely a unit of length than a scale
        scale = _SCALES.get(scale_word, 1.0)
        sign = (m.group("sign") or "").strip()
        negative = sign in ("-", "−", "–") or bool(m.group("paren") and m.group("close"))
        out.append(Figure((-1.0 if negative else 1.0) * value * scale,
                          0.5 * 10 ** -decimals * scale, percent=bool(m.group("pct")),
                          scaled=scale != 1.0, signed=negative or sign == "+"))
    return out


def _pairs(ref: Figure, cand: Figure) -> list[tuple[float, float, float]]:
    """(reference, candidate, candidate's rounding step) in comparable units."""
    pairs = [(ref.value, cand.value, cand.step)]
    if ref.percent != cand.percent:  # 65.4% vs 0.654
        pairs.append((ref.value / 100, cand.value, cand.step) if ref.percent
                     else (ref.value, cand.value / 100, cand.step / 100))
    if ref.scaled != cand.scaled and not (ref.percent or cand.percent):
        # one side wrote a scale word, the other's unit is implied by the question
        for power in (1e3, 1e6, 1e9, 1e12):
            pairs += [(ref.value, cand.value / power, cand.step / power),
                      (ref.value, cand.value * power, cand.step * power)]
    return pairs


def match(ref: Figure, cand: Figure) -> bool:
    """Equal within the tolerance or the coarser rounding (module docstring)."""
    both_signed = ref.signed and cand.signed
    for r, c, step in _pairs(ref, cand):
        target = abs(r)
        if target == 0:
            if c == 0:
                return True
            continue
        if both_signed and (r < 0) != (c < 0):
            continue
        # the reference's own rounding always counts (0.0142 is 0.01 to two decimals); the
        # candidate's only when it loses at most 5% of the figure ("1" is no rounding of 0.83)
        ref_step = ref.step * target / abs(ref.value)
        tolerance = max(TOLERANCE * target, ref_step, step if step <= 0.05 * target else 0.0)
        if abs(abs(c) - target) <= tolerance:
            return True
    return False


def found(refs: list[Figure], cands: list[Figure]) -> list[Figure]:
    return [r for r in refs if any(match(r, c) for c in cands)]


@dataclass(frozen=True)
class Verdict:
    label: str  # correct | incorrect | refusal
    score: int  # 1..10
    rule: str  # which rule decided, for reports


def kind(gold: str, question: str = "") -> str:
    """``yes_no``, ``numeric`` or ``open`` (no rule; the LLM judge decides). A short reference
    with a figure is numeric when it is the bare figure or the question asks for a quantity
    (``QUANTITY``): "87% of the liability is employee costs" answers a question about the
    liability's nature, where other words can be right."""
    gold = (gold or "").strip()
    if _YES_NO.match(gold):
        return "yes_no"
    words = len(gold.split())
    if figures(gold) and (words <= BARE_WORDS or (words <= SHORT_WORDS
                                                  and QUANTITY.search(question or ""))):
        return "numeric"
    return "open"


def says_nothing(answer: str) -> bool:
    """No letter or digit outside the citation tags and page references: "[3M_2018_10K p.60]
    [3M_2018_10K p.1]" or "[DOC_ID p.10] p.10" cites pages and answers nothing. The wording of
    the note SFR's former part fusion added on a conflicting part ("(Another part of the filing
    gives a different answer: …") is not an answer either."""
    text = _PAGE_REF.sub(" ", _CONFLICT_NOTE.sub(" ", _TAG.sub(" ", answer or "")))
    return not re.search(r"[^\W_]", text)


def refuses(answer: str) -> bool:
    answer = (answer or "").strip()
    return says_nothing(answer) or bool(REFUSAL.search(answer[:REFUSAL_WITHIN]))


def score(gold: str, answer: str, question: str = "") -> Verdict | None:
    """A verdict when a rule settles the case, else None (see the module docstring)."""
    gold, answer = (gold or "").strip(), (answer or "").strip()
    what = kind(gold, question)
    refs, cands = figures(gold), figures(answer)
    hits = found(refs, cands)
    if what == "yes_no":
        said = _YES_NO.match(answer)
        if said:
            same = said.group(1).lower() == _YES_NO.match(gold).group(1).lower()
            if not same:
                return Verdict("incorrect", 2, "yes_no: the answer says the opposite")
            if refs and cands and not hits and len(cands) <= MAX_ANSWER_FIGURES:
                return None  # the same word with other figures: the LLM weighs them
            return Verdict("correct", 10, "yes_no: the answer says the same")
    if refuses(answer) and not hits:
        why = "says nothing (at most citation tags)" if says_nothing(answer) else "declines"
        return Verdict("refusal", 1, f"refusal: the answer {why} and gives no reference figure")
    if what == "numeric" and len(cands) <= MAX_ANSWER_FIGURES:
        if len(hits) == len(refs):
            return Verdict("correct", 10, "numeric: every reference figure is in the answer")
        if cands and not hits:
            return Verdict("incorrect", 2, "numeric: the answer's figures differ from the "
                                           "reference")
    return None
