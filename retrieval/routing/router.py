"""Routing: which indexed filings a question is about, and how that was decided.

Two steps. *Extraction* reads companies, fiscal periods, dates and document types from the
question: deterministically (``retrieval.routing.mentions``) and, when that is not enough,
through one constrained router-LLM call (its schema and prompts: ``retrieval.routing.schema``).
*Resolution* (``Resolver``) maps what was extracted to catalog doc ids only: every id it
returns comes from the catalog, never from text the question or the model wrote, and nothing
from a filing is ever shown to the router LLM.

``Router.route`` runs the deterministic pass first and only calls the LLM when that pass finds
no company or an ambiguous one, or when the question's words point at two filing types
(``retrieval.routing.intent``) and the model's ``doc_types`` chooses (the fast path is counted
in ``Router.stats``).
"""
from __future__ import annotations

import time
from collections import Counter
from typing import Any, Protocol

from finrag.retrieval.answer import LLMCall, Routing
from finrag.retrieval.routing.companies import CompanyTable
from finrag.retrieval.routing.resolver import ContentScorer, Resolver
from finrag.retrieval.routing.schema import RouterOutput, router_messages

__all__ = ["QuestionRouter", "Router", "Resolver", "make_content_scorer"]


# --- the router ----------------------------------------------------------------------------------


class QuestionRouter(Protocol):
    def route(self, question: str) -> Any:
        """The ``Routing`` of a question."""
        ...

    def extract(self, question: str) -> tuple[Any, Any]:
        """The router LLM's structured reading of a question, and its ``LLMCall``."""
        ...

    def scoped(self, readable: frozenset[str] | None) -> "QuestionRouter":
        """This router as a caller who may read only ``readable`` doc ids sees the corpus."""
        ...


class Router(QuestionRouter):
    """Deterministic pass first; one router-LLM call only when that pass finds no company or
    an ambiguous one, or filing-type cues that conflict (``stats`` counts fast-path routes, LLM
    calls and the conflicts the model settled).

    ``llm`` is an engine with ``generate_json`` or a zero-argument function that loads one (it
    is then loaded the first time a question needs it)."""

    def __init__(self, index_or_documents: Any, companies: CompanyTable | None = None,
                 llm: Any = None, content_scorer: ContentScorer | None = None):
        documents = (index_or_documents.documents() if hasattr(index_or_documents, "documents")
                     else index_or_documents)
        self.resolver = Resolver(documents, companies, content_scorer)
        self._llm = llm
        self.stats: Counter[str] = Counter()  # routes, fast_path, llm_calls, llm_errors, …
        self._init = (list(documents), companies, content_scorer)
        self._scoped: dict[frozenset[str], Router] = {}

    def scoped(self, readable: frozenset[str] | None) -> "Router":
        """This router as a caller who may read only ``readable`` doc ids sees the corpus: it
        knows no other filing, so a company seen only in others is "not in the corpus". It
        shares the LLM and the counters."""
        if readable is None:
            return self
        readable = frozenset(readable)
        view = self._scoped.get(readable)
        if view is None:
            documents, companies, scorer = self._init
            # the LLM through this router's, so that it loads once
            llm = None if self._llm is None else (lambda: self.llm)
            view = Router([d for d in documents if d.doc_id in readable], companies, llm=llm,
                          content_scorer=scorer)
            view.stats = self.stats
            while len(self._scoped) >= 64:
                self._scoped.pop(next(iter(self._scoped)))
            self._scoped[readable] = view
        return view

    def reload(self, documents: list[Any]) -> None:
        """Know ``documents`` from now on (an index that an ingest changed), keeping the LLM
        and the counters; the scoped views are made again on their next use."""
        _, companies, scorer = self._init
        self.resolver = Resolver(documents, companies, scorer)
        self._init = (list(documents), companies, scorer)
        self._scoped = {}

    @property
    def llm(self) -> Any:
        if self._llm is not None and not hasattr(self._llm, "generate_json"):
            self._llm = self._llm()
        return self._llm

    def route(self, question: str) -> Routing:
        if not isinstance(question, str) or not question.strip():
            raise ValueError("empty question: routing needs the text of a question")
        started = time.perf_counter()
        self.stats["routes"] += 1
        routing = self.resolver.resolve(question)
        # the model could only add a company: not needed when one was found (routed, or known
        # with none of the filings asked for indexed), unless the question's words point at
        # two filing types and the model's doc_types has to choose
        conflict = routing.routed and routing.extracted["intent"]["conflict"]
        certain = (routing.routed or routing.status == "fallback_not_in_corpus") and not conflict
        if certain or self._llm is None:
            self.stats["fast_path" if certain else "conflict_without_llm" if conflict
                       else "unrouted_without_llm"] += 1
            routing.latency_ms = (time.perf_counter() - started) * 1000
            return routing
        try:
            output, call = self.extract(question)
        except Exception as err:  # a failed call leaves the deterministic answer standing
            self.stats["llm_errors"] += 1
            routing.llm_called = True
            routing.detail += f" | router LLM failed: {type(err).__name__}: {str(err)[:200]}"
            routing.latency_ms = (time.perf_counter() - started) * 1000
            return routing
        routing = self.resolver.resolve(question, output)
        self.stats["llm_type_choices"] += bool(conflict and routing.extracted["intent"]["settled_by_llm"])
        routing.llm_called = True
        routing.usage = [call]
        routing.latency_ms = (time.perf_counter() - started) * 1000
        return routing

    def extract(self, question: str) -> tuple[Any, LLMCall]:
        """The router LLM's one constrained call: (RouterOutput, its cost)."""
        llm = self.llm
        self.stats["llm_calls"] += 1
        [(output, completion)] = llm.generate_json([router_messages(question)], RouterOutput)
        return output, LLMCall("router", getattr(llm, "model_id", "?"), completion.prompt_tokens,
                               completion.completion_tokens, completion.latency_s * 1000)


def make_content_scorer(index: Any, embedder: Any = None, k: int = 10) -> ContentScorer:
    """Content disambiguation: a hybrid search of the question scoped to the candidate
    documents; the document that owns the best-ranked passage wins. ``embedder`` may be a
    zero-argument function that loads one on first use; without one the search is FTS only."""
    loaded: list[Any] = []

    def score(question: str, doc_ids: list[str]) -> str | None:
        if embedder is not None and not loaded:
            loaded.append(embedder if hasattr(embedder, "encode") else embedder())
        vector = loaded[0].encode([question])[0] if loaded else None
        hits = index.search(question, vector, k=k, doc_ids=list(doc_ids))
        return hits[0].doc_id if hits else None

    return score
