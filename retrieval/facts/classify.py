"""Which of the five routes a question takes, and the metric and periods it asks for.

Rules first (as routing does): a statement named with no metric is ``full_statement``; a
metric with a "why"/"explain"/"drivers" cue is ``hybrid``; a metric over several years or "the
last N years" is ``timeseries``; a metric otherwise is ``metric_lookup``; no metric is
``narrative``. When the rules find no metric but the question asks for an amount, the route is
left ``undecided`` for the router LLM's ``route``/``metric`` fields (the same constrained call
that extracts companies; no second call).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from finrag.retrieval.routing.calendars import read_periods
from finrag.retrieval.facts.concepts import ConceptTable, Metric, MetricMention
from finrag.retrieval.facts.definitions import Defined, DefinitionError, asked_definition
from finrag.retrieval.facts.judgements import JudgementAsk, read_judgement
from finrag.retrieval.facts.trends import TrendAsk, read_trend
from finrag.retrieval.facts.formula import parse as parse_formula
from finrag.retrieval.facts.formula import uses_prior_year
from finrag.retrieval.facts.units import UnitRequest, read_request

ROUTES = ("metric_lookup", "timeseries", "full_statement", "narrative", "hybrid")
STRUCTURED = ("metric_lookup", "timeseries", "full_statement")

_STATEMENTS = {
    "income": r"income\s+statements?|statements?\s+of\s+(?:consolidated\s+)?(?:operations|income|"
              r"earnings)|p\s*&\s*l|profit\s+and\s+loss(?:\s+statement)?",
    "balance": r"balance\s+sheets?|statements?\s+of\s+financial\s+position",
    "cash_flow": r"cash[\s-]+flows?\s+statements?|statements?\s+of\s+(?:consolidated\s+)?cash\s+flows?",
}
_NARRATIVE = re.compile(
    r"\b(?:why|explain\w*|drove|drive[sn]?|driv(?:er|ers|ing)|reasons?|because|contribut\w*|"
    r"factors?|risks?|strateg\w*|describe|discuss\w*|commentary|outlook|guidance|impact\w*|"
    r"attribut(?!able)\w*|what\s+caused|how\s+does\s+management|according\s+to\s+management)\b", re.I)
_PURE_NARRATIVE = re.compile(r"\brisk\s+factors?\b|\bstrateg\w*\b|\bcompetit\w*\b|\blegal\b", re.I)
_SERIES = re.compile(
    r"\b(?:trend|over\s+time|history|historical|each\s+(?:fiscal\s+)?year|every\s+year|"
    r"year[\s-]+(?:over|on)[\s-]+year|(?:last|past|previous|prior|recent)\s+(?:\w+\s+)?"
    r"(?:fiscal\s+)?(?:years|quarters))\b", re.I)
_LAST_N = re.compile(r"\b(?:last|past|previous|prior|recent|latest)\s+(\d+|two|three|four|five|"
                     r"six|seven|eight|nine|ten)\s+(?:fiscal\s+)?(years|quarters)\b", re.I)
_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
            "nine": 9, "ten": 10}
# a statement is the answer only when asked for ("show", "give me", "what is X's balance
# sheet", or a bare "Apple balance sheet FY2023"); named as a source of something else
# ("the largest liability in its balance sheet") it is a question about the statement
_STATEMENT_WORDS = (r"(?:consolidated\s+)?(?:income\s+statements?|balance\s+sheets?|cash[\s-]+flows?"
                    r"\s+statements?|statements?\s+of\s+[\w\s]{3,30}?|p\s*&\s*l)")
_SHOW = re.compile(
    r"\b(?:show|display|give|list|present|pull\s+up|print|provide|full|entire|complete|whole|"
    r"look\s+like)\b"
    rf"|^\W*what\s+(?:is|was|were|are)\s+(?:the\s+)?(?:[\w.&-]+(?:['’]s?)?\s+){{0,3}}?{_STATEMENT_WORDS}"
    r"|^(?!\W*(?:what|which|who|whom|why|how|when|where|is|are|was|were|does|do|did|has|have|"
    r"had|can|could|will|would|should|based|using|according)\b)", re.I)
_YES_NO = re.compile(r"^\W*(?:is|are|was|were|does|do|did|has|have|had|can|could|will|would|"
                     r"should)\b", re.I)
_WHICH_THING = re.compile(
    r"\b(?:which|what)\s+(?:\w+\s+){0,2}?(?:events?|segments?|products?|items?|regions?|"
    r"businesses|divisions?|customers?|markets?|areas?|drivers?|components?)\b", re.I)
_FIRST_QUARTERS = re.compile(r"\b(?:first|1st)\s+(two|three|2|3)\s+(?:fiscal\s+)?quarters\b", re.I)
_EACH = re.compile(r"\beach\s+(?:of\s+the\s+)?(?:\w+\s+){0,3}(?:fiscal\s+)?(?:years|quarters)\b", re.I)
# "DPO is defined as: 365 * ...": the definition names the ratio's inputs, not more metrics
_DEFINITION = re.compile(r"\b(?:is\s+|here\s+)?defined\s+as\b|\bdefine\b", re.I)
_GROWTH = re.compile(r"\b(?:year[\s-]+(?:over|on)[\s-]+year|yoy)\s+(?:change|growth|increase)|"
                     r"\bgrowth\s+rate\b|\b(?:change|growth)\s+in\b|"
                     # "what drove operating margin change as of FY2022"
                     # ("how did capex change from 2021 to 2024" is a series, not one change)
                     r"\bchanges?\s+(?:as\s+of|in\s+(?:the\s+)?(?:FY|fiscal|20\d\d)|for\s+(?:the\s+)?"
                     r"(?:FY|fiscal|20\d\d))", re.I)
_AVERAGE = re.compile(r"\b(?:\d+|two|three|four|five)[\s-]+years?\s+average\b|"
                      r"\baverage\s+(?:over|across)\b", re.I)
_CAGR = re.compile(r"\bCAGR\b|\bcompound(?:ed)?\s+annual(?:ized)?\s+growth(?:\s+rate)?\b", re.I)
# "2-year", "three year": how many fiscal years an average or a CAGR spans
_SPAN = re.compile(r"\b(\d{1,2}|two|three|four|five|six|seven|eight|nine|ten)[\s-]+years?\b", re.I)
# "capex as a % of revenue", "R&D as a percentage of net sales": the first line over the second
_SHARE_OF = re.compile(r"\s*(?:as\s+(?:a\s+|an\s+)?|in\s+)?(?:%|percent(?:age)?|share|proportion|"
                       r"fraction)\s+of\s+(?:the\s+|its\s+|their\s+)?$", re.I)
_AMOUNT = re.compile(r"\b(?:how\s+much|how\s+many|amount|total|spen[dt]|paid|pay|earn\w*|"
                     r"value|figure|worth|\$)", re.I)


@dataclass
class FactQuery:
    route: str  # one of ROUTES, or "undecided"
    metrics: list[Metric] = field(default_factory=list)
    statement: str | None = None  # income | balance | cash_flow
    periods: list[tuple[int | None, int | None]] = field(default_factory=list)  # (FY, quarter)
    calendar_years: list[int] = field(default_factory=list)
    dates: list[Any] = field(default_factory=list)  # calendars.DateMention
    last_n: tuple[int, str] | None = None  # (3, "years")
    reason: str = ""
    unit: UnitRequest = field(default_factory=UnitRequest)  # the unit the answer is asked in
    average: bool = False  # "the FY2018 - FY2020 3 year average": one mean over the periods
    cagr: bool = False  # "the 2-year revenue CAGR from FY2017 to FY2019": first to last year
    span: int | None = None  # the years an average or a CAGR spans, as said ("3-year")
    # the question's own definition, as read ("ROA = FY2022 net income / (average …)"), or why
    # it did not read (the table's definition answers then, and says so)
    definition: str | None = None
    definition_error: str | None = None
    trend: TrendAsk | None = None  # asks a direction, a sign or stability: judged from the values
    judgement: JudgementAsk | None = None  # an analyst's judgement by a rule of thumb
    # "If operating margin is not a useful metric for a company like this, state that": a
    # metric whose lines the company never reports is said to be one its statements do not support
    asks_relevance: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"route": self.route, "metrics": [m.key for m in self.metrics],
                "statement": self.statement, "periods": self.periods,
                "calendar_years": self.calendar_years,
                "dates": [d.day.isoformat() for d in self.dates],
                "last_n": list(self.last_n) if self.last_n else None, "reason": self.reason,
                "definition": self.definition, "definition_error": self.definition_error,
                "trend": self.trend.kind if self.trend else None,
                "judgement": self.judgement.rule if self.judgement else None}


def classify(question: str, concepts: ConceptTable) -> FactQuery:
    full = question
    if (cut := _DEFINITION.search(question)) and cut.start() > 0:
        question = question[:cut.start()]  # metric and period are named before the definition
    text = question
    statement = None
    for name, pattern in _STATEMENTS.items():
        if re.search(rf"\b(?:{pattern})\b", text, re.I):
            statement = statement or name
            text = re.sub(rf"\b(?:{pattern})\b", " ", text, flags=re.I)  # "cash" is not a metric here
    mentions = _in_the_question(_shares_of(concepts.find(text), text, concepts), text)
    metrics = [_margin_if_asked(m, text) for m in mentions] or concepts.scattered(text)
    metrics = _without_inputs(metrics, concepts)
    defined, definition_error = None, None
    try:
        defined = asked_definition(full, concepts)
    except DefinitionError as err:
        definition_error = str(err)
    if defined is not None:
        metrics = [as_defined(defined, metrics[0] if metrics else None, concepts)] + metrics[1:]
    cagr = bool(_CAGR.search(question))
    if metrics and _GROWTH.search(question) and not cagr and not uses_prior_year(
            parse_formula(metrics[0].formula or "0")):
        metrics = [growth_of(metrics[0], concepts)] + metrics[1:]
    found = read_periods(question)
    if first := _FIRST_QUARTERS.search(question):  # "the first three quarters of fiscal 2025"
        n = {"two": 2, "three": 3}.get(first.group(1).casefold()) or int(first.group(1))
        years = [y for y, qq in found.periods if y and qq is None] or [None]
        found.periods = [p for p in found.periods if p[0] not in years or p[1] is not None]
        found.periods += [(y, qq) for y in years for qq in range(1, n + 1)]
    last = _LAST_N.search(question)
    last_n = None
    if last:
        count = last.group(1).casefold()
        last_n = (int(count) if count.isdigit() else _NUMBERS[count], last.group(2).casefold())
    if metrics and not cagr and all(m.formula and uses_prior_year(parse_formula(m.formula))
                                    for m in metrics):
        # "from FY2016 to FY2017", "between FY2021 and FY2022": the formula reads the prior
        # year itself, so the question asks for the later year only
        years = [y for y, qq in found.periods if y and qq is None]
        if len(years) > 1:
            found.periods = [p for p in found.periods if p[0] != min(years) or p[1] is not None]
    q = FactQuery("narrative", metrics, statement, found.periods, found.calendar_years,
                  found.dates, last_n, unit=read_request(full),
                  average=bool(_AVERAGE.search(question)) and not cagr, cagr=cagr,
                  definition=defined.text if defined else None, definition_error=definition_error)
    if (q.average or q.cagr) and (span := _SPAN.search(question)):
        count = span.group(1).casefold()
        q.span = int(count) if count.isdigit() else _NUMBERS[count]
    elif q.cagr and last_n and last_n[1] == "years":
        q.span = last_n[0]
    q.asks_relevance = bool(_RELEVANCE.search(full))
    q.judgement = read_judgement(question, [m.key for m in metrics])
    if q.judgement is not None:  # its measure answers, with the figures explained
        q.cagr, q.span = False, None  # the rule names its own measure
        key = q.judgement.metric_key
        q.metrics = [concepts[key] if key in concepts.metrics
                     else growth_of(concepts[key.removesuffix("_pct_change")], concepts)]
        q.route, q.reason = "hybrid", f"a judgement by a rule of thumb ({q.judgement.rule})"
        return q
    if len(metrics) == 1 and mentions:
        q.trend = read_trend(question, (mentions[0].start, mentions[0].end))
    if defined is not None and defined.year and not found.periods and not found.calendar_years:
        q.periods = [(defined.year, None)]  # "ROA is defined as: FY2022 net income / …"
    years = {y for y, _ in found.periods if y} | set(found.calendar_years)
    if statement and not metrics and _SHOW.search(question):
        q.route, q.reason = "full_statement", f"asks for the {statement.replace('_', ' ')} statement"
    elif statement and not metrics:
        q.reason = f"names the {statement.replace('_', ' ')} statement as a source, asks about it"
    elif metrics and (_YES_NO.match(question) or _WHICH_THING.search(question)):
        q.route, q.reason = "hybrid", "a yes/no or which-question about a metric: its figures, explained"
    elif metrics and _NARRATIVE.search(question):
        if _PURE_NARRATIVE.search(question) and not _AMOUNT.search(question):
            q.route, q.reason = "narrative", "asks about risks or strategy"
        else:
            q.route, q.reason = "hybrid", "a metric and an explanation"
    elif metrics and (len(years) > 1 or last_n or _SERIES.search(question) or _EACH.search(question)
                      or len({p for p in found.periods if p[0]}) > 1 and len(metrics) == 1):
        q.route, q.reason = "timeseries", "a metric over several periods"
    elif metrics:
        q.route, q.reason = "metric_lookup", "names a metric"
    elif _AMOUNT.search(question) and not _NARRATIVE.search(question):
        q.route, q.reason = "undecided", "asks for an amount the metric table does not name"
    else:
        q.reason = "names no metric"
    return q


_RELEVANCE = re.compile(r"\bif\b[^?.]{0,80}?\bnot\s+(?:a\s+|an\s+)?(?:useful|relevant|meaningful|"
                        r"something\s+that)", re.I)
_COMPUTE = re.compile(r"\b(?:calculate|compute)\s+(?:the\s+|its\s+)?(?:[\w&'’]+\s+){0,2}$", re.I)
_MARGIN_AFTER = re.compile(r"\s*(?:\([^)]{0,60}\)\s*)?%?\s*margin\b", re.I)


def statements_named(question: str, concepts: ConceptTable) -> list[str]:
    """The primary statements a question reads, in order: those it names ("using the cash
    flow statement"), then those holding the lines of the metrics it names, a formula's
    inputs included (operating margin: the income statement)."""
    named = sorted((m.start(), m.end(), kind) for kind, pattern in _STATEMENTS.items()
                   for m in re.finditer(pattern, question, re.I))
    out = list(dict.fromkeys(kind for _, _, kind in named))
    rest = question  # "cash" of "cash flow statement" is no metric
    for start, end, _ in named:
        rest = rest[:start] + " " * (end - start) + rest[end:]

    def walk(metric: Metric, depth: int = 0) -> None:
        if metric.statement and metric.statement not in out:
            out.append(metric.statement)
        for key in metric.formula_names if depth < 4 else []:
            if key in concepts.metrics:
                walk(concepts[key], depth + 1)
    for mention in concepts.find(rest):
        walk(mention.metric)
    return out


def _in_the_question(mentions: list, text: str) -> list:
    """The metric mentions of the sentence that asks (the first ending in "?") when it names
    one: a preamble ("as if you are an equity research analyst") names no metric asked for."""
    if len(mentions) < 2:
        return mentions
    # "… sold its inventory? Calculate inventory turnover ratio": the measure to compute wins
    computed = [m for m in mentions if _COMPUTE.search(text[max(0, m.start - 40):m.start])]
    if computed:
        return computed
    end = text.find("?")
    if end < 0:
        return mentions
    start = max(text.rfind(mark, 0, end) for mark in (". ", "! ", "? ", ": ", "\n")) + 1
    asked = [m for m in mentions if start <= m.start < end]
    return asked or mentions


def _shares_of(mentions: list, text: str, concepts: ConceptTable) -> list:
    """"capex as a % of revenue": two mentions read as one ratio, the table's own when it has
    that formula (capex_to_revenue), else a ratio of the two lines."""
    out = list(mentions)
    for i in range(len(out) - 1):
        a, b = out[i], out[i + 1]
        if a is None or not _SHARE_OF.match(text[a.end:b.start]) or \
                a.metric.kind not in ("flow", "stock") or b.metric.kind not in ("flow", "stock"):
            continue
        formula = f"{a.metric.key} / {b.metric.key}"
        same = _expanded(parse_formula(formula), concepts)
        metric = next((m for m in concepts.metrics.values() if m.formula and not m.concepts
                       and _expanded(parse_formula(m.formula), concepts) == same), None)
        metric = metric or Metric(f"{a.metric.key}_to_{b.metric.key}",
                                  f"{a.metric.label} as a share of {b.metric.label[0].lower()}"
                                  f"{b.metric.label[1:]}", formula=formula, kind="ratio",
                                  display="percent")
        out[i], out[i + 1] = MetricMention(metric, text[a.start:b.end], a.start, b.end), None
    return [m for m in out if m is not None]


def _margin_if_asked(mention, text: str) -> Metric:
    """"D&A % margin", "COGS margin": an amount the table has no margin metric for, over
    revenue."""
    metric = mention.metric
    if metric.kind == "flow" and metric.key != "revenue" and _MARGIN_AFTER.match(text, mention.end):
        return Metric(f"{metric.key}_margin", f"{metric.label} as a share of revenue",
                      formula=f"{metric.key} / revenue", kind="ratio", display="percent")
    return metric


def growth_of(metric: Metric, concepts: ConceptTable) -> Metric:
    """The year-over-year change of a metric: a percentage change for an amount, the change in
    points for a ratio (a margin)."""
    fn = "change" if metric.kind == "ratio" else "pct_change"
    inner = metric.key if metric.key in concepts.metrics else f"({metric.formula})"
    return Metric(f"{metric.key}_{fn}", f"Year-over-year change in {metric.label[0].lower()}"
                  f"{metric.label[1:]}", formula=f"{fn}({inner})", kind="ratio",
                  display="percent")


def as_defined(defined: Defined, asked: Metric | None, concepts: ConceptTable) -> Metric:
    """The metric a question asks, with its own definition: the definition itself when it
    defines the asked metric (or the question names no table metric); the asked metric's table
    formula with the defined input put in when it defines one of its inputs ("EBITDA % margin …
    Define unadjusted EBITDA as operating income + D&A")."""
    if asked is not None and asked.formula and _expanded(parse_formula(asked.formula), concepts) \
            == _expanded(parse_formula(defined.formula), concepts):
        return asked  # the table's own definition, as the question states it
    named = concepts.find(defined.name)
    key = named[0].metric.key if named else None
    same = bool(named) and _expanded(parse_formula(key), concepts) == _expanded(
        parse_formula(defined.formula), concepts)
    if asked is not None and same and key != asked.key and key in asked.formula_names:
        return asked  # defines an input as the table does ("EBITDA = operating income + D&A")
    if asked is not None and key and key != asked.key and asked.formula \
            and key in asked.formula_names:
        formula = re.sub(rf"(?<![a-z0-9_]){key}(?![a-z0-9_])", f"({defined.formula})",
                         asked.formula)
        return Metric(f"{asked.key}_as_defined", asked.label, formula=formula, kind=asked.kind,
                      display=asked.display)
    display = asked.display if asked is not None else (named[0].metric.display if named else None)
    return defined.metric(concepts, display=display)


def _expanded(node, concepts: ConceptTable, depth: int = 0):
    """A formula tree with every formula-only metric it names replaced by its own formula:
    "DIO + DSO - DPO" and their definitions written out are the same formula."""
    from finrag.retrieval.facts.formula import BinOp, Call, Ref

    if isinstance(node, Ref) and depth < 4:
        metric = concepts.metrics.get(node.name)
        if metric is not None and metric.formula and not metric.concepts:
            return _expanded(parse_formula(metric.formula), concepts, depth + 1)
        return node
    if isinstance(node, Call):
        return Call(node.fn, _expanded(node.arg, concepts, depth))
    if isinstance(node, BinOp):
        return BinOp(node.op, _expanded(node.left, concepts, depth),
                     _expanded(node.right, concepts, depth))
    return node


def _without_inputs(metrics: list[Metric], concepts: ConceptTable) -> list[Metric]:
    """Drop the metrics a named ratio's formula reads ("dividend payout ratio (using total cash
    dividends paid and net income)"): they are its inputs, not more questions."""
    inputs: set[str] = set()

    def walk(m: Metric, depth: int = 0) -> None:
        for key in m.formula_names if depth < 4 else []:
            if key in concepts.metrics and key not in inputs:
                inputs.add(key)
                walk(concepts[key], depth + 1)
    for m in metrics:
        walk(m)
    return [m for m in metrics if m.key not in inputs] or metrics


def apply_llm(q: FactQuery, route: str | None, metric: str | None,
              concepts: ConceptTable) -> FactQuery:
    """Settle an undecided route with the router LLM's fields (a metric it names must be one
    the table knows; otherwise the question is narrative)."""
    if q.route != "undecided":
        return q
    found = concepts.closest(metric) if metric else None
    if found and route in ("metric_lookup", "timeseries", "hybrid"):
        q.metrics, q.route, q.reason = [found], route, f"router LLM: {route}, {found.key}"
    elif route == "full_statement" and q.statement:
        q.route, q.reason = route, "router LLM: full_statement"
    else:
        q.route, q.reason = "narrative", (f"router LLM: {route or 'no route'}, metric "
                                          f"{metric!r} is not in the metric table")
    return q
