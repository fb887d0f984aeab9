"""Ratios a question defines for itself, read into the formula language.

    "ROA is defined as: FY2022 net income / (average total assets between FY2021 and FY2022)"
        -> ROA = net_income / avg(total_assets), asked for FY2022

A definition is ``NAME is defined as[:] EXPRESSION`` or ``Define NAME as EXPRESSION``; one
question may hold several, each ending at a full stop ("CCC is defined as: DIO + DSO - DPO.
DIO is defined as: …"), and a name defined in one is read inside another. In an expression:

- ``+ - * /`` and parentheses, or the words plus, minus, less, times, multiplied by, divided by,
  over; numbers are constants (``365 *``);
- an operand is a metric phrase of the table ("total current liabilities", "PP&E", "COGS"),
  optionally dated ("FY2019 revenue") — a year is read relative to the latest year the
  definition names, the year asked: one year earlier is ``prior(x)``;
- "average X between FY_a and FY_b" is ``avg(x)`` at FY_b, "change in X between FY_a and FY_b"
  is ``change(x)`` at FY_b (both the formula module's functions over the prior year).

What does not read ("a phrase the table has no metric for", an average over three years) raises
DefinitionError saying which part; the caller answers that, and never guesses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from finrag.retrieval.facts.concepts import ConceptTable, Metric
from finrag.retrieval.facts.formula import FormulaError, names, parse

_DEFINED = re.compile(
    r"(?:^|(?<=[.?!:;]\s)|(?<=\n))\s*(?:(?P<name>[^.?!:;\n]{1,80}?)\s+(?:is\s+|here\s+)?defined\s+as"
    r"|define\s+(?P<name2>[^.?!:;\n]{1,80}?)\s+as)\s*:?\s*(?P<expr>.+?)(?=\.(?:\s|$)|\?|$)",
    re.I | re.S)
_OPERATOR_WORDS = [(r"\bdivided\s+by\b|\bover\b", "/"), (r"\bmultiplied\s+by\b|\btimes\b", "*"),
                   (r"\bplus\b", "+"), (r"\bminus\b|\bless\b", "-")]
# "-" between letters is a hyphen ("short-term"), not a minus
_SPLIT = re.compile(r"((?<![\w&])\d+(?:\.\d+)?(?![\w&])|[+*/()]|(?<!\w)-|-(?!\w))")
_YEAR = re.compile(r"\b(?:FY\s*['’]?|fiscal\s+(?:year\s+)?)?((?:19|20)\d\d)\b|\bFY\s*['’]?(\d\d)\b",
                   re.I)
_BETWEEN = re.compile(r"^(?P<fn>average|avg\.?|mean|change\s+in|changes\s+in|increase\s+in)\s+"
                      r"(?:of\s+)?(?:the\s+)?(?P<what>.+?)\s+(?:between|from)\s+(?P<a>.+?)\s+"
                      r"(?:and|to)\s+(?P<b>.+)$", re.I)
_FILLER = re.compile(r"\b(?:the|a|an|of|its|total|company['’]?s?|reported|from\s+the\s+"
                     r"(?:income|cash\s+flow|balance\s+sheet)\s+statement|amount|value|"
                     r"for|in|on|year|fiscal|annual|net)\b|[,;]", re.I)


# "… from the cash flow statement": where to read a figure, not a figure
_SOURCE = re.compile(r"\b(?:(?:as\s+)?(?:shown|reported|stated)\s+)?(?:from|in|on|per|using)\s+"
                     r"(?:the\s+)?(?:consolidated\s+)?(?:income|cash[\s-]+flows?|balance\s+sheet|"
                     r"p\s*&\s*l)(?:\s+statements?)?\b", re.I)


class DefinitionError(ValueError):
    """A definition the question gives that does not read into a formula; says which part."""


@dataclass(frozen=True)
class Defined:
    """A question's own definition: its name, the formula it reads as, and the year it is
    anchored on (the latest year it names; None when it names none)."""

    name: str
    text: str
    formula: str
    year: int | None

    def metric(self, concepts: ConceptTable, display: str | None = None) -> Metric:
        """The definition as a metric of the formula engine (its inputs are table metrics)."""
        node = parse(self.formula)
        inputs = [concepts[k] for k in names(node)]
        ratio = "/" in self.formula or any(m.kind == "ratio" for m in inputs)
        if ratio:
            kind = "ratio"
        elif inputs and all(m.kind == "per_share" for m in inputs):
            kind = "per_share"
        elif inputs and all(m.kind == "stock" for m in inputs):
            kind = "stock"
        else:
            kind = "flow"
        slug = re.sub(r"[^a-z0-9]+", "_", self.name.casefold()).strip("_") or "defined"
        return Metric(f"defined_{slug}", self.name, formula=self.formula, kind=kind,
                      display=display or ("number" if ratio else None))


def definitions(question: str) -> list[tuple[str, str]]:
    """(name, expression text) of every definition in the question, in order."""
    out = []
    for m in _DEFINED.finditer(question):
        name = (m.group("name") or m.group("name2") or "").strip()
        name = re.sub(r"^(?:here|and|where|with|the)\s+|\s+here$", "", name, flags=re.I).strip()
        expr = m.group("expr").strip().rstrip(".")
        if name and expr:
            out.append((name, expr))
    return out


def read_definitions(question: str, concepts: ConceptTable) -> list[Defined]:
    """Every definition of the question, read; a name defined in one is expanded inside the
    others. DefinitionError names the first part that does not read."""
    found = definitions(question)
    by_name = {_key(name): expr for name, expr in found}
    out = []
    for name, expr in found:
        formula, year = _read(expr, concepts, by_name, depth=0)
        out.append(Defined(name, f"{name} = {expr}", formula, year))
    return out


def asked_definition(question: str, concepts: ConceptTable) -> Defined | None:
    """The definition the question asks for: the first one that no other definition reads
    (CCC, not its DIO, DSO and DPO). None when the question defines nothing."""
    found = read_definitions(question, concepts)
    if not found:
        return None
    used = {_key(d.name) for d in found for other in found if other is not d
            and re.search(rf"(?<![\w&]){re.escape(d.name)}(?![\w&])", other.text.split("=", 1)[1],
                          re.I)}
    return next((d for d in found if _key(d.name) not in used), found[0])


def _key(name: str) -> str:
    return re.sub(r"\s+", " ", name.strip().casefold())


def _read(expr: str, concepts: ConceptTable, by_name: dict[str, str], depth: int
          ) -> tuple[str, int | None]:
    """(formula, anchor year) of an expression's text."""
    if depth > 3:
        raise DefinitionError(f"definitions refer to each other too deeply at {expr!r}")
    text = expr
    for pattern, op in _OPERATOR_WORDS:
        text = re.sub(pattern, f" {op} ", text, flags=re.I)
    pieces = [p.strip() for p in _SPLIT.split(text) if p and p.strip()]
    # operands first (their years), then the anchor: the latest year named
    terms: list[tuple[str, object]] = []
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        if piece in "+-*/()" or re.fullmatch(r"\d+(?:\.\d+)?", piece):
            # "(average X between FY2018 and FY2019)": a bracket around one operand phrase
            terms.append(("tok", piece))
        else:
            terms.append(("operand", _operand(piece, concepts, by_name, depth)))
        i += 1
    years = [t[1][2] for t in terms if t[0] == "operand" and t[1][2] is not None]
    anchor = max(years) if years else None
    out = []
    for kind, value in terms:
        if kind == "tok":
            out.append(str(value))
            continue
        formula, _, fn_year = value
        back = (anchor - fn_year) if (anchor is not None and fn_year is not None) else 0
        if back < 0 or back > 3:
            raise DefinitionError(f"the year of {formula!r} is {back} years from FY{anchor}")
        for _ in range(back):
            formula = f"prior({formula})"
        out.append(formula)
    formula = " ".join(out)
    try:
        parse(formula)
    except FormulaError as err:
        raise DefinitionError(f"the definition {expr!r} does not read as arithmetic: {err}") \
            from None
    return formula, anchor


def _operand(phrase: str, concepts: ConceptTable, by_name: dict[str, str], depth: int
             ) -> tuple[str, None, int | None]:
    """One operand: (formula, None, its year or None)."""
    m = _BETWEEN.match(phrase)
    if m:
        years = [_years(m.group("a")), _years(m.group("b"))]
        if not all(len(y) == 1 for y in years):
            raise DefinitionError(f"cannot read the two years of {phrase!r}")
        first, last = years[0][0], years[1][0]
        if abs(last - first) != 1:
            raise DefinitionError(f"{phrase!r} spans {abs(last - first)} years; the formula "
                                  f"engine averages and differences over one year")
        inner = _metric_formula(m.group("what"), concepts, by_name, depth)
        fn = "avg" if m.group("fn").casefold().startswith(("av", "mean")) else "change"
        return f"{fn}({inner})", None, max(first, last)
    years = _years(phrase)
    if len(years) > 1:
        raise DefinitionError(f"{phrase!r} names {len(years)} years for one figure")
    bare = _YEAR.sub(" ", phrase)
    return _metric_formula(bare, concepts, by_name, depth), None, (years[0] if years else None)


def _metric_formula(phrase: str, concepts: ConceptTable, by_name: dict[str, str], depth: int
                    ) -> str:
    text = re.sub(r"\s+", " ", _SOURCE.sub(" ", phrase)).strip()
    if _key(text) in by_name:  # a name defined elsewhere in the question
        formula, _ = _read(by_name[_key(text)], concepts, by_name, depth + 1)
        return f"({formula})"
    mentions = concepts.find(text)
    if len(mentions) == 1:
        rest = (text[:mentions[0].start] + " " + text[mentions[0].end:])
        rest = _FILLER.sub(" ", rest)
        if not re.search(r"[a-z]{3,}", rest, re.I) or _minor(rest):
            return mentions[0].metric.key
    if not mentions:
        raise DefinitionError(f"{text!r} is not a metric of the table")
    raise DefinitionError(f"{text!r} reads as more than one figure: "
                          f"{', '.join(m.metric.key for m in mentions)}")


def _minor(rest: str) -> bool:
    """What is left beside a metric phrase is a source note ("from the cash flow statement",
    "unadjusted", "reported"), not another figure."""
    return all(w.casefold() in {"unadjusted", "gaap", "statement", "cash", "flow", "income",
                                "balance", "sheet", "shown", "line", "item", "items", "as",
                                "per", "stated", "use", "using", "attributable", "to",
                                "shareholders", "stockholders", "common", "all"}
               for w in re.findall(r"[A-Za-z]{3,}", rest))


def _years(text: str) -> list[int]:
    out = []
    for m in _YEAR.finditer(text):
        out.append(int(m.group(1)) if m.group(1) else 2000 + int(m.group(2)))
    return out
