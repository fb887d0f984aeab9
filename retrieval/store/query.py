"""Search queries from free-text financial questions.

- ``normalize_query``: financial abbreviations (FY, YoY, EPS, capex, D&A, COGS, SG&A, FCF, …),
  scale words ($5bn, USD mm) and fiscal period phrases (FY22, Q3 FY2023, 1H) written out next
  to the original wording, so both the keyword and the dense side can match a filing's prose
  ("capital expenditures", "fiscal 2022", "third quarter").
- ``weighted_fts_query``: an FTS5 query that ranks. Question words and other stop-words are
  dropped; multi-word financial terms become phrases; numbers and phrases are weighted by
  repeating them (FTS5's bm25 sums over the query's phrases, so a phrase given twice counts
  twice).
"""

from __future__ import annotations

import re

# --- normalisation -------------------------------------------------------------------------

# (pattern, written out); matched case-insensitively on word boundaries, the original kept
_ABBREVIATIONS: list[tuple[str, str]] = [
    (r"yoy|y/y|y-o-y", "year over year"),
    (r"qoq|q/q", "quarter over quarter"),
    (r"eps", "earnings per share"),
    (r"capex|cap ex", "capital expenditures"),
    (r"d&a", "depreciation and amortization"),
    (r"cogs", "cost of goods sold"),
    (r"sg&a", "selling, general and administrative"),
    (r"fcf", "free cash flow"),
    (r"r&d", "research and development"),
    (r"pp&e|ppe", "property, plant and equipment"),
    (r"opex", "operating expenses"),
    (r"ebit", "earnings before interest and taxes"),
    (r"ebitda", "earnings before interest, taxes, depreciation and amortization"),
    (r"roa", "return on assets"),
    (r"roe", "return on equity"),
    (r"dpo", "days payable outstanding"),
    (r"dso", "days sales outstanding"),
    (r"a/r", "accounts receivable"),
    (r"a/p", "accounts payable"),
    (r"ocf", "operating cash flow"),
    (r"nopat", "net operating profit after tax"),
    (r"m&a", "mergers and acquisitions"),
    (r"ttm|ltm", "trailing twelve months"),
    (r"bps", "basis points"),
]
_ABBREV_RE = [(re.compile(rf"(?<![\w&/]){p}(?![\w&/])", re.I), full) for p, full in _ABBREVIATIONS]

_SCALE = {"k": "thousand", "thousand": "thousand", "m": "million", "mm": "million",
          "mn": "million", "mil": "million", "million": "million", "millions": "million",
          "thousands": "thousand", "b": "billion", "bn": "billion", "billion": "billion", "billions": "billion"}
# an amount only with a currency sign: "3M" is a company, "$3M" is three million dollars
_AMOUNT_RE = re.compile(r"(?<![\w.])(\$|usd\s?)(\d[\d,]*(?:\.\d+)?)\s?(k|mm|mn|mil|m|bn|b)\b",
                        re.I)
_UNITS_RE = re.compile(r"\b(?:usd|us\$|\$)\s?(mm|mn|m|bn|b|k|thousands?|millions?|billions?)\b",
                       re.I)
_QUARTERS = {"1": "first", "2": "second", "3": "third", "4": "fourth"}
_HALVES = {"1": "first", "2": "second"}


def _year(text: str) -> str:
    """'22' → '2022', '1999' stays; two-digit years are read as 19xx from 50 up."""
    if len(text) == 4:
        return text
    n = int(text)
    return str(1900 + n if n >= 50 else 2000 + n)


def _fiscal(m: re.Match) -> str:
    return f"{m.group(0)} (fiscal year {_year(m.group(1))})"


def _quarter(m: re.Match) -> str:
    q = m.group(1) or m.group(2)
    return f"{m.group(0)} ({_QUARTERS[q]} quarter)"


def _half(m: re.Match) -> str:
    h = m.group(1) or m.group(2)
    return f"{m.group(0)} ({_HALVES[h]} half)"


def _amount(m: re.Match) -> str:
    return f"${m.group(2)} {_SCALE[m.group(3).lower()]}"


_PERIODS: list[tuple[re.Pattern, object]] = [
    (re.compile(r"(?<!\w)fy\s?'?(\d{4}|\d{2})(?!\w)", re.I), _fiscal),
    (re.compile(r"(?<!\w)(?:q([1-4])|([1-4])q)(?!\w)", re.I), _quarter),
    (re.compile(r"(?<!\w)(?:h([12])|([12])h)(?!\w)", re.I), _half),
]


def normalize_query(text: str) -> str:
    """The question with its abbreviations, scales and fiscal periods written out in brackets
    after the original words (the original stays, so nothing the user wrote is lost)."""
    out = text
    for pattern, repl in _PERIODS:
        out = pattern.sub(repl, out)
    out = _AMOUNT_RE.sub(_amount, out)
    out = _UNITS_RE.sub(lambda m: f"{m.group(0)} (in {_SCALE[m.group(1).lower()]}s)", out)
    for pattern, full in _ABBREV_RE:
        out = pattern.sub(lambda m, full=full: f"{m.group(0)} ({full})", out)
    return out


# --- a ranking FTS5 query ------------------------------------------------------------------

STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be been before being below
    between both but by can could did do does doing down during each few for from further had
    has have having he her here hers how i if in into is it its itself just me more most my no
    nor not now of off on once only or other our out over own please same she should so some
    such than that the their theirs them then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you your
    based according using use used provide provided show shows shown tell give given answer
    question much many amount figure value number company company's companies reported report
    reporting state stated respond following calculate calculated
    """.split()
)

# multi-word terms matched as phrases (after normalisation, lower-case, punctuation as spaces)
FINANCIAL_TERMS = tuple(sorted({
    "accounts payable", "accounts receivable", "basis points", "capital expenditures",
    "capital expenditure", "cash and cash equivalents", "cash flow", "cash flows",
    "cost of goods sold", "cost of revenue", "cost of sales", "current assets",
    "current liabilities", "current ratio", "days payable outstanding",
    "depreciation and amortization", "diluted earnings", "earnings per share",
    "effective tax rate", "fixed asset turnover", "free cash flow",
    "gross margin", "gross profit", "income before taxes", "income tax", "interest expense",
    "inventory turnover", "long term debt", "net income", "net earnings", "net revenue",
    "net revenues", "net sales", "operating cash flow", "operating expenses",
    "operating income", "operating margin", "operating activities", "investing activities",
    "financing activities", "property plant and equipment", "quick ratio",
    "research and development", "return on assets", "return on equity",
    "selling general and administrative", "share repurchases", "shareholders equity",
    "stockholders equity", "total assets", "total debt", "total liabilities", "total revenue",
    "total revenues", "working capital", "year over year", "dividends paid",
    "dividend payout ratio", "retained earnings", "goodwill impairment", "restructuring",
    "segment", "first quarter", "second quarter", "third quarter", "fourth quarter",
}, key=lambda t: -len(t)))

_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:[.'&][A-Za-z0-9]+)*")


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD_RE.findall(text)]


def _quoted(term: str) -> str:
    return '"' + term.replace('"', "") + '"'


def weighted_fts_query(text: str, *, phrase_weight: int = 2, number_weight: int = 2
                       ) -> str | None:
    """An FTS5 OR-query that ranks: stop-words dropped, financial terms as phrases, numbers and
    phrases repeated ``number_weight`` / ``phrase_weight`` times. None when nothing is left."""
    words = _words(text)
    joined = " " + " ".join(words) + " "
    terms: list[str] = []
    for phrase in FINANCIAL_TERMS:
        spaced = f" {phrase} "
        if spaced in joined:
            terms += [_quoted(phrase)] * phrase_weight
            joined = joined.replace(spaced, " | ")  # its words are not counted again alone
    seen: set[str] = set()
    for w in joined.split():
        if w == "|" or w in seen or w in STOPWORDS or (len(w) == 1 and not w.isdigit()):
            continue
        seen.add(w)
        number = any(ch.isdigit() for ch in w)
        terms += [_quoted(w)] * (number_weight if number else 1)
    return " OR ".join(terms) if terms else None
