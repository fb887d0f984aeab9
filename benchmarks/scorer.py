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

Figures, and when two of them match (unit, scale, sign, rounding): ``retrieval.systems.figures``, the
rule finrag also traces its own answers with.

Scores on the HDRR paper's 1..10 rubric for the rule-decided answers: correct 10 (every
reference figure, or the reference's yes/no with no figure contradicted), incorrect 2,
refusal 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# the figures and their matching rule are the ones finrag traces its own answers with
from finrag.retrieval.systems.figures import _TAG, TOLERANCE, Figure, figures, found, match  # noqa: F401

VERSION = 5  # bump on any change of a rule: reports' config hashes and the calibration a
# quality report cites carry it (rule verdicts are computed afresh, never cached)
SHORT_WORDS = 14
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

_CONFLICT_NOTE = re.compile(r"\(\s*Another part of the filing gives a different answer:", re.I)
_PAGE_REF = re.compile(r"\b(?:pages?|pp?)\.?\s*\d+(?:\s*-\s*\d+)?\b", re.I)
_YES_NO = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
BARE_WORDS = 3  # a reference of at most this many words with a figure is the figure itself
QUANTITY = re.compile(
    r"\b(?:how (?:much|many)|calculate|compute|ratio|margin|percent(?:age)?|amount|in usd"
    r"|round(?:ed)?\b|what (?:is|was|were|are)\b[^?]{0,80}?\b(?:revenue|sales|income|ebitda|eps"
    r"|earnings|capex|capital expenditure|cash|debt|assets|liabilities|expenses?|dividends?"
    r"|growth|change|value|total|costs?|turnover|days|return))", re.IGNORECASE)


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
