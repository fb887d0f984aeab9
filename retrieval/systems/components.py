"""What a ``Pipeline`` calls on each of its components: the components' public interfaces, each
a Protocol declared beside the class that implements it in process, gathered here with the
table of the seam (``SEAMS``).

The CLI gives a ``Pipeline`` the in-process objects (``Index`` and its ``Catalog``, the
embedder, rerankers, LLM engines, ``Router``, ``FactsAnswerer``); the served app gives it
stand-ins that forward each call to a deployment (``serving.remote``). Both sides subclass
these Protocols, and ``tests/test_seams.py`` fails when either lacks a member or when the
``Pipeline`` reaches for one no Protocol declares. A method the ``Pipeline`` starts to use is
added to its Protocol first, then to both sides.
"""

from __future__ import annotations

from models.embedders import QueryEmbedder
from models.llm import LLMEngine
from models.rerankers import Reranker
from retrieval.facts.answer import FactsSource
from retrieval.facts.store import FactLookup
from retrieval.routing.router import QuestionRouter
from retrieval.store.catalog import CatalogReader
from retrieval.store.index import SearchIndex

__all__ = ["CatalogReader", "SearchIndex", "QueryEmbedder", "Reranker", "LLMEngine",
           "FactLookup", "FactsSource", "QuestionRouter", "SEAMS"]


# each Pipeline component: (its Protocol, the in-process class, the served stand-in), by the
# dotted names tests import them by (serving is not imported by retrieval)
SEAMS: dict[str, tuple[type, str, str]] = {
    "index": (SearchIndex, "retrieval.store.index:Index", "serving.remote:RemoteIndex"),
    "catalog": (CatalogReader, "retrieval.store.catalog:Catalog", "serving.remote:RemoteCatalog"),
    "embedder": (QueryEmbedder, "models.embedders:SentenceTransformerEmbedder",
                 "serving.remote:RemoteEmbedder"),
    "reranker": (Reranker, "models.rerankers:MaxSimReranker", "serving.remote:RemoteReranker"),
    "llm": (LLMEngine, "models.transformers_engine:TransformersEngine",
            "serving.remote:RemoteLLM"),
    "facts": (FactsSource, "retrieval.facts.answer:FactsAnswerer", "serving.remote:RemoteFacts"),
    "facts_store": (FactLookup, "retrieval.facts.store:FactStore",
                    "serving.remote:RemoteFacts._Store"),
    "router": (QuestionRouter, "retrieval.routing.router:Router", "serving.remote:RemoteRouter"),
}
