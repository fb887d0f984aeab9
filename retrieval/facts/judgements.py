"""Analysts' judgements from a computed measure: "Is 3M capital-intensive?", "a healthy
liquidity profile based on its quick ratio?", "Are JnJ's financials those of a high-growth
company?".

The rule each judgement applies lives in ``retrieval/data/rules_of_thumb.yaml`` with its source
(no rule names a company or a question). The measure is computed from the facts as any metric
is; the verdict compares it with the rule and states both:

    ask = read_judgement(question, named)   # None: no judgement the rules know
    ask.metric_key                          # the measure to compute ("revenue_pct_change": the
                                            # growth of revenue)
    judged(ask, metric, value, shown, when) # "No: capex as a share of revenue was 5.1% …"
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from finrag.retrieval.facts.concepts import Metric
from finrag.retrieval.facts.trends import rules_of_thumb

_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
_WORDS = {">=": "at least", ">": "above", "<=": "at most", "<": "below"}


@dataclass(frozen=True)
class JudgementAsk:
    rule: str
    metric_key: str
    op: str
    value: float
    says: str
    source: str


def read_judgement(question: str, named: list[str] | None = None) -> JudgementAsk | None:
    """The judgement the question asks, by the first rule whose ``asks`` matches; its measure
    is the one of the rule's that the question names (``named``: metric keys), else the
    rule's first."""
    text = question.split("If ")[0]  # "If the quick ratio is not relevant …" is not the ask
    for key, rule in (rules_of_thumb().get("judgements") or {}).items():
        if not re.search(rule["asks"], text, re.I):
            continue
        chosen = next((k for k in rule["metrics"] if k in (named or [])), rule["metrics"][0])
        test = rule["yes_when"][chosen]
        return JudgementAsk(key, chosen, test["op"], float(test["value"]), rule["says"],
                            rule["source"])
    return None


def judged(ask: JudgementAsk, metric: Metric, value, shown, when: str) -> str:
    """The verdict on one computed value: Yes/No, the figure, and the rule with its source."""
    yes = _OPS[ask.op](value.value, ask.value)
    threshold = shown(_Threshold(ask.value, value.unit))
    label = metric.label[0].lower() + metric.label[1:]
    return (f"{'Yes' if yes else 'No'}: {label} was {shown(value)} in {when}, "
            f"{'meeting' if yes else 'not meeting'} the rule used here — {ask.says} "
            f"({_WORDS[ask.op]} {threshold}; {ask.source}).")


@dataclass
class _Threshold:  # written as the value is
    value: float
    unit: str
