"""The records every system returns: ``Routing`` (which filings a question is about, and how
that was decided) and ``Answer`` (docs/design.md §2) — one shape for CLI JSON, HTTP, batch
output and benchmarks. Fields a run did not measure stay ``None``; nothing is ever estimated.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# How a question was routed. The first five name how the company (and so the filings) was
# found; the fallbacks mean routing did not pick filings and the system searched everything.
ROUTING_STATUSES = (
    "exact",  # a ticker or canonical company name written in the question
    "alias",  # a former name, rebrand or alias from the company table
    "name_match",  # a normalised or fuzzy match of a company name
    "regex",  # an upper-case token of the question that is a known ticker (the LLM missed it)
    "default_year",  # company found, no year given: the latest filing of the wanted type
    "fallback_no_entities",  # no company in the question
    "fallback_not_in_corpus",  # company known, but none of its filings asked for is indexed
    "fallback_ambiguous",  # a mention that fits several companies equally well
)

# The context block of reported figures (XBRL facts, statement tables) a hybrid-route answer
# puts before the passages: the company's own figures, not a chunk of any one filing.
FACTS_DOC_ID = "XBRL"


@dataclass
class LLMCall:
    """One LLM call's cost, with the model's own token counts."""

    role: str  # router | generator | verifier | large_reranker | contextualizer | …
    model_id: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Routing:
    status: str  # one of ROUTING_STATUSES
    doc_ids: list[str] = field(default_factory=list)  # catalog ids only, never paths
    extracted: dict[str, Any] | None = None  # companies, years, quarters, types, dates, …
    llm_called: bool = False
    detail: str = ""  # one line a person can read: why these filings
    usage: list[LLMCall] = field(default_factory=list)
    latency_ms: float | None = None

    @property
    def routed(self) -> bool:
        return not self.status.startswith("fallback") and bool(self.doc_ids)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["routed"] = self.routed
        return d


@dataclass
class Citation:
    doc_id: str  # a catalog id, or "EDGAR <accession>" for an XBRL fact's filing
    page: int | None  # 1-based page of the filing; None for a fact
    chunk_id: int | None
    snippet: str
    url: str | None = None  # the filing on SEC EDGAR (facts)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Answer:
    query: str
    system: str
    answer: str
    citations: list[Citation] = field(default_factory=list)
    routing: Routing | None = None
    # per stage (fts, dense, fused, light, large, kept, context): [{chunk_id, doc_id, score}]
    retrieved: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    calls: list[LLMCall] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    energy: dict[str, Any] = field(default_factory=dict)  # joules|None, source, scope
    profile: str | None = None
    model_ids: dict[str, str] = field(default_factory=dict)
    context_tokens: int | None = None
    error: str | None = None
    # the SEC design's route (metric_lookup|timeseries|full_statement|narrative|hybrid), the
    # XBRL facts an answer rests on (retrieval.facts.answer.FactValue.to_dict), its 0-100
    # confidence and the facts/narrative contradictions found; None/[] where not used
    route: str | None = None
    facts: list[dict[str, Any]] = field(default_factory=list)
    confidence: int | None = None
    contradictions: list[dict[str, Any]] = field(default_factory=list)
    # what the facts were asked and do not hold, where the answer then came from the filings'
    # text alone: kept beside the answer, not put in front of it
    facts_note: str | None = None
    # the figures of a generated answer that match no figure of its context or facts
    # (retrieval.systems.figures): the model's own arithmetic or a misread; [] when all trace
    unsupported_figures: list[str] = field(default_factory=list)
    # a yes/no question's verdict read from the evidence before the answer was written
    # (retrieval.systems.verdict): word, calibrated margin, raw log-odds, offset; None otherwise
    verdict: dict[str, Any] | None = None
    # served: the calls this answer made to the Ray Serve deployments (None in process)
    deployment_calls: int | None = None

    @property
    def usage(self) -> dict[str, Any]:
        return {
            "calls": [c.to_dict() for c in self.calls],
            "prompt_tokens": sum(c.prompt_tokens for c in self.calls),
            "completion_tokens": sum(c.completion_tokens for c in self.calls),
            "llm_calls": len(self.calls),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "system": self.system,
            "answer": self.answer,
            "citations": [c.to_dict() for c in self.citations],
            "routing": self.routing.to_dict() if self.routing else None,
            "retrieved": self.retrieved,
            "usage": self.usage,
            "context_tokens": self.context_tokens,
            "timings_ms": self.timings_ms,
            "energy": self.energy,
            "profile": self.profile,
            "model_ids": self.model_ids,
            "error": self.error,
            "route": self.route,
            "facts": self.facts,
            "confidence": self.confidence,
            "contradictions": self.contradictions,
            "facts_note": self.facts_note,
            "unsupported_figures": self.unsupported_figures,
            "verdict": self.verdict,
            "deployment_calls": self.deployment_calls,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Answer":
        routing = None
        if d.get("routing"):
            r = dict(d["routing"])
            r.pop("routed", None)
            r["usage"] = [LLMCall(**c) for c in r.get("usage", [])]
            routing = Routing(**r)
        return cls(
            query=d["query"], system=d["system"], answer=d["answer"],
            citations=[Citation(**c) for c in d.get("citations", [])], routing=routing,
            retrieved=d.get("retrieved", {}),
            calls=[LLMCall(**c) for c in d.get("usage", {}).get("calls", [])],
            timings_ms=d.get("timings_ms", {}), energy=d.get("energy", {}),
            profile=d.get("profile"), model_ids=d.get("model_ids", {}),
            context_tokens=d.get("context_tokens"), error=d.get("error"),
            route=d.get("route"), facts=d.get("facts", []), confidence=d.get("confidence"),
            contradictions=d.get("contradictions", []), facts_note=d.get("facts_note"),
            unsupported_figures=d.get("unsupported_figures", []), verdict=d.get("verdict"),
            deployment_calls=d.get("deployment_calls"),
        )
