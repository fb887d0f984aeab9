"""Which kind of filing a question wants, read from its words (before any model is asked).

An analyst reaches for a different filing by what is asked:

- ``history``: trends and track records ("historically", "over the years", "consistently"),
  and what only a 10-K's business and risk sections describe (industry, main products and
  customers, competition, cyclicality) → the latest annual report;
- ``release``: what an earnings release carries and a 10-K does not, or sets out in its own
  tables (guidance and outlook, adjusted or non-GAAP measures, EBITDAR, organic or
  constant-currency growth, how each segment or region grew) → the release, where one exists;
- ``event``: what an 8-K reports (officers appointed or leaving, votes at a meeting, a
  completed acquisition, separation or spin-off, a material agreement) → the 8-K.

A quarter ("Q2", "as of the second quarter") is read with the periods
(``retrieval.routing.calendars``) and a named form ("10-K", "8-K", "press release") by
``router.extract_periods``; both override these cues. Two cues that point at different forms
are a conflict that the router LLM's ``doc_types`` field settles (``Router.route``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# kind -> (the filing type it points at, its words)
CUES: dict[str, tuple[str, re.Pattern[str]]] = {
    "history": ("10-K", re.compile(
        r"\bhistoric(?:al(?:ly)?)?\b|\bover\s+(?:the\s+)?(?:years|time|(?:past|last)\s+\w+\s+years)\b|"
        r"\bconsistent(?:ly)?\b|\btrack\s+record\b|\blong[\s-]term\s+trend|\btrend(?:s|ed)?\b|"
        r"\bmulti[\s-]?year\b|\bin\s+recent\s+years\b|\byear\s+after\s+year\b|"
        # what only a 10-K's business and risk sections describe
        r"\b(?:primar(?:y|ily)\s+)?operates?\s+in\b|\bindustr(?:y|ies)\b|\bbusiness\s+model\b|"
        r"\b(?:main|major|primary|key)\s+(?:products|services|customers|competitors|markets)\b|"
        r"\bcompetit(?:ors|ion)\b|\bcyclical\w*\b|\brisk\s+factors?\b|\bhuman\s+capital\b|"
        r"\bhow\s+many\s+(?:employees|people)\b", re.I)),
    "release": ("earnings", re.compile(
        r"\bguidance\b|\boutlook\b|\bEBITDAR\b|\bnon[\s-]?GAAP\b|"
        r"\badjusted\s+(?:\w+\s+){0,2}(?:EPS|EBITDA|EBIT|earnings|income|margin|operating|free\s+cash)|"
        r"\borganic\s+(?:growth|sales|revenue)|\bconstant[\s-]currenc(?:y|ies)\b|"
        r"\bexpects\b|\bexpectations?\b|\bforecasts?\b|"
        # the segment and region tables of a release: how each one grew or performed
        r"(?:\b(?:segments?|regions?|regional|geograph\w*|international|domestic)\b|(?-i:\bU\.?S\b\.?))"
        r"[^.?;]{0,40}?"
        r"\b(?:grow|grew|growth|performance|performed|top[\s-]?line)\b|"
        r"\b(?:growth|performance|top[\s-]?line)\b[^.?;]{0,40}?\b(?:segments?|regions?|geograph\w*)\b|"
        r"\bexclud\w*\s+(?:the\s+)?(?:impact|effect)s?\s+of\s+(?:fx|foreign\s+exchange|currenc)", re.I)),
    "event": ("8-K", re.compile(
        r"\b(?:new(?:ly)?\s+(?:appointed\s+)?(?:CEO|CFO|COO|chief\s+\w+\s+officer|chair(?:man|woman)?|"
        r"president|director)s?)\b|\bappoint(?:s|ed|ment)\b|\bresign(?:s|ed|ation)\b|"
        r"\bstep(?:s|ped)?\s+down\b|\bdeparture\b|\bsuccessor\b|\bnominees?\b|"
        r"\bvotes?\s+(?:for|against|cast|results?)\b|\bvoted\b|\b(?:annual|special)\s+(?:general\s+)?"
        r"meeting\b|\bshareholder\s+(?:approval|vote)\b|\bmaterial\s+definitive\s+agreement\b|"
        r"\bcomplet(?:ed|es|ion\s+of)\s+(?:the\s+|its\s+)?(?:acquisition|merger|separation|spin[\s-]?off|"
        r"sale|divestiture|exchange\s+offer)\b|\bexchange\s+offer\b|\bsplit[\s-]off\b|"
        r"\bagenda\b|\bbylaws?\b|\bauditor\s+(?:change|dismiss\w*)\b", re.I)),
}
# Guidance changed during a year ("raised its full-year guidance"): the releases of that year,
# not the prior year's, which first gave it.
_GUIDANCE_CHANGE = re.compile(
    r"\b(?:rais|lower|cut|reaffirm|maintain|updat|increas|reduc|revis|narrow|withdr[ae]w|chang)\w*\s+"
    r"(?:[\w'’-]+\s+){0,3}(?:guidance|outlook|forecast)|(?:guidance|outlook|forecast)\s+"
    r"(?:(?:was|were|is|been|get|got)\s+)?(?:rais|lower|cut|reaffirm|updat|increas|reduc|revis|chang)\w*",
    re.I)


@dataclass
class Intent:
    """The cues a question gives for a filing type, strongest first."""

    kinds: list[str] = field(default_factory=list)  # history | release | event
    words: dict[str, str] = field(default_factory=dict)  # kind -> the words that said so
    guidance_change: bool = False  # guidance raised, lowered, reaffirmed … during a year

    @property
    def types(self) -> list[str]:
        return [CUES[k][0] for k in self.kinds]

    @property
    def conflict(self) -> bool:
        """Cues for different filing types: the words alone cannot choose."""
        return len(set(self.types)) > 1

    def to_dict(self) -> dict[str, object]:
        return {"kinds": self.kinds, "words": self.words, "conflict": self.conflict,
                "guidance_change": self.guidance_change}


def read_intent(question: str) -> Intent:
    """The filing-type cues of a question, in the order: event, release, history."""
    intent = Intent()
    for kind in ("event", "release", "history"):
        found = CUES[kind][1].search(question)
        if found:
            intent.kinds.append(kind)
            intent.words[kind] = found.group(0)
    intent.guidance_change = bool(_GUIDANCE_CHANGE.search(question))
    return intent


def settle(intent: Intent, llm_types: list[str]) -> str | None:
    """The filing type the router LLM chose among conflicting cues (None when it chose none
    of them: the deterministic order then stands)."""
    wanted = set(intent.types)
    for doc_type in llm_types:
        doc_type = "10-K" if doc_type == "annual report" else doc_type
        if doc_type in wanted:
            return doc_type
    return None
