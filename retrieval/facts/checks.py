"""Checks on a facts answer: contradictions between the facts and narrative text, and the
0-100 confidence score.

A contradiction is a sentence of the retrieved text that names the metric (not a segment's:
"Data Center revenue" is skipped), the fiscal year of the fact and an amount in the fact's
order of magnitude (0.5-2x) that differs from the fact by more than its own rounding and 2%.

Confidence (documented weights, not a probability):
    source       XBRL fact 95, derived (Q4, formula) 85, restated 90; narrative only 50,
                 not routed to a filing 30
    × coverage   share of the asked values (periods, companies) the facts hold
    − 25 per high-severity contradiction (>10% apart), − 15 per medium one
"""

from __future__ import annotations

import re
from typing import Any

from finrag.retrieval.facts.answer import FactValue
from finrag.retrieval.facts.concepts import ConceptTable

_SCALE = {"thousand": 1e3, "million": 1e6, "millions": 1e6, "billion": 1e9, "billions": 1e9,
          "trillion": 1e12, "k": 1e3, "m": 1e6, "mn": 1e6, "bn": 1e9, "b": 1e9}
_AMOUNT = re.compile(r"\$\s?(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(thousand|millions?|billions?|"
                     r"trillion|bn|mn|[kmb])?\b", re.I)
_SENTENCE = re.compile(r"(?<=[.;!?])\s+|\n+")


def amounts(text: str) -> list[tuple[float, float, str]]:
    """(value, rounding step, matched text) of each dollar amount in ``text``."""
    out = []
    for m in _AMOUNT.finditer(text):
        digits, scale = m.group(1), (m.group(2) or "").casefold()
        value = float(digits.replace(",", ""))
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        factor = _SCALE.get(scale, 1.0)
        out.append((value * factor, 10 ** -decimals * factor, m.group(0)))
    return out


def contradictions(values: list[FactValue], passages: list[tuple[str, int, str]],
                   concepts: ConceptTable) -> list[dict[str, Any]]:
    """``passages``: (doc_id, page, text) of the narrative the answer is given."""
    found = []
    for v in values:
        if v.unit != "USD" or v.value == 0:
            continue
        phrases = concepts.metrics[v.metric]
        for doc_id, page, text in passages:
            for sentence in _SENTENCE.split(text):
                if str(v.fiscal_year) not in sentence:
                    continue
                if not any(m.metric.key == phrases.key and not _qualified(sentence, m.start)
                           for m in concepts.find(sentence)):
                    continue
                for amount, step, shown in amounts(sentence):
                    ratio = amount / abs(v.value)
                    if not 0.5 <= ratio <= 2.0:
                        continue
                    gap = abs(amount - abs(v.value))
                    if gap <= max(step / 2, 0.02 * abs(v.value)):
                        continue
                    found.append({
                        "metric": v.metric, "fiscal_year": v.fiscal_year,
                        "fiscal_quarter": v.fiscal_quarter, "company": v.company,
                        "fact_value": v.value, "text_value": amount, "text": shown,
                        "doc_id": doc_id, "page": page,
                        "severity": "high" if gap > 0.10 * abs(v.value) else "medium",
                        "sentence": sentence.strip()[:300]})
    return found


def _qualified(sentence: str, start: int) -> bool:
    """Whether a capitalised name comes right before the metric ("Data Center revenue",
    "iPhone net sales"): a segment's figure, not the company's."""
    before = sentence[:start].split()
    if not before or len(before) == 0:
        return False
    word = before[-1].strip("(\"'")
    return (word[:1].isupper() or word[:1].islower() and any(ch.isupper() for ch in word[1:])) \
        and len(before) > 1 and word.casefold() not in {"total", "net", "consolidated", "our",
                                                      "the", "its", "company", "annual"}


def confidence(values: list[FactValue], requested: int, missing: int,
               found_contradictions: list[dict[str, Any]], routed: bool = True) -> int:
    if values:
        source = min(85 if v.derived else 90 if v.first_filed else 95 for v in values)
    else:
        source = 50 if routed else 30
    coverage = (requested - missing) / requested if requested and values else 1.0
    penalty = sum(25 if c["severity"] == "high" else 15 for c in found_contradictions)
    return max(0, min(100, round(source * coverage - penalty)))
