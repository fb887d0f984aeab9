"""What a ``Pipeline`` calls on each of its components: the components' public interfaces, each
a Protocol declared beside the class that implements it in process, gathered here with the
table of the seam (``SEAMS``).

The CLI gives a ``Pipeline`` the in-process objects (``Index`` and its ``Catalog``, the
embedder, rerankers, LLM engines, ``Router``, ``FactsAnswerer``); the served app gives it
stand-ins that forward each call to a deployment (``serving.remote``). Both sides subclass
these Protocols, and ``tests/retrieval/test_seams.py`` fails when either lacks a member or when the
``Pipeline`` reaches for one no Protocol declares. A method the ``Pipeline`` starts to use is
added to its Protocol first, then to both sides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from finrag.models.embedders import QueryEmbedder
from finrag.models.llm import LLMEngine
from finrag.models.rerankers import Reranker
from finrag.retrieval.facts.answer import FactsSource
from finrag.retrieval.facts.store import FactLookup
from finrag.retrieval.routing.router import QuestionRouter
from finrag.retrieval.store.catalog import CatalogReader
from finrag.models.profiles import CascadeSettings, PipelineSettings
from finrag.retrieval.store.index import SearchIndex
from finrag.retrieval.systems.caches import Caches
from finrag.retrieval.systems.cascade import Cascade

__all__ = ["CatalogReader", "SearchIndex", "QueryEmbedder", "Reranker", "LLMEngine",
           "FactLookup", "FactsSource", "QuestionRouter", "SEAMS", "Components"]


# each Pipeline component: (its Protocol, the in-process class, the served stand-in), by the
# dotted names tests import them by (serving is not imported by retrieval)
SEAMS: dict[str, tuple[type, str, str]] = {
    "index": (SearchIndex, "finrag.retrieval.store.index:Index",
              "finrag.serving.remote:RemoteIndex"),
    "catalog": (CatalogReader, "finrag.retrieval.store.catalog:Catalog",
                "finrag.serving.remote:RemoteCatalog"),
    "embedder": (QueryEmbedder, "finrag.models.embedders:SentenceTransformerEmbedder",
                 "finrag.serving.remote:RemoteEmbedder"),
    "reranker": (Reranker, "finrag.models.rerankers:MaxSimReranker",
                 "finrag.serving.remote:RemoteReranker"),
    "llm": (LLMEngine, "finrag.models.transformers_engine:TransformersEngine",
            "finrag.serving.remote:RemoteLLM"),
    "facts": (FactsSource, "finrag.retrieval.facts.answer:FactsAnswerer",
              "finrag.serving.remote:RemoteFacts"),
    "facts_store": (FactLookup, "finrag.retrieval.facts.store:FactStore",
                    "finrag.serving.remote:RemoteFacts._Store"),
    "router": (QuestionRouter, "finrag.retrieval.routing.router:Router",
               "finrag.serving.remote:RemoteRouter"),
}


@dataclass(frozen=True)
class Components:
    """What the recipes and stages read, and nothing more: one view's index, variants, router
    and facts (the router, the facts and the generator are loaded on first use), the models
    they call, the view's caches and the settings. The ``Pipeline`` makes one per batch of
    questions from its view as the index is then."""

    index: SearchIndex
    variants: dict[str, SearchIndex]
    embedder: QueryEmbedder
    cascade: Cascade | None
    router: Callable[[], QuestionRouter]
    facts: Callable[[], FactsSource]
    generator: Callable[[], LLMEngine]
    count_tokens: Callable[[str], int]
    caches: Caches
    settings: PipelineSettings
    cascade_settings: CascadeSettings
    use_llm_router: bool = True
