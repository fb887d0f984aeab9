"""What a ``Pipeline`` calls on each of its components, declared once.

The CLI gives a ``Pipeline`` the in-process objects (``Index`` and its ``Catalog``, the
embedder, rerankers, LLM engines, ``Router``, ``FactsAnswerer``); the served app gives it
stand-ins that forward each call to a deployment (``serving.remote``). Both sides implement
these Protocols, and ``tests/test_seams.py`` fails when either lacks a member or when the
``Pipeline`` reaches for one no Protocol declares. A method the ``Pipeline`` starts to use is
added here first, then to both sides.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from models.llm import LLMEngine
from models.rerankers import Reranker

__all__ = ["CatalogReader", "SearchIndex", "QueryEmbedder", "Reranker", "LLMEngine",
           "FactLookup", "FactsSource", "QuestionRouter", "SEAMS"]


class CatalogReader(Protocol):
    """The read side of a catalog: filings, their pages, tables, chunks and chunk vectors."""

    def document(self, doc_id: str) -> Any:
        """The ``DocumentRecord`` of a filing, or None."""
        ...

    def pages(self, doc_id: str) -> list[tuple[int, str]]:
        """(page number, text) of every page, in order."""
        ...

    def page_chunks(self, doc_id: str, pages: list[int]) -> list[Any]:
        """The ``ChunkRecord``s of a filing that cover any of ``pages``, in document order."""
        ...

    def tables(self, doc_id: str, page: int | None = None) -> list[dict[str, Any]]:
        """The tables of a filing (or of one page): page, index, header, rows."""
        ...

    def table_rows(self, doc_id: str) -> list[tuple[int, int, list[str], list[dict]]]:
        """(table id, page, header, rows) of every table of a filing, in page order."""
        ...

    def vectors(self, ids: Any = None, dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(ids, stored embeddings) of the given chunk ids."""
        ...


class SearchIndex(Protocol):
    """A read-only hybrid index: its settings, catalog and search."""

    settings: Any
    catalog: CatalogReader

    def search(self, query: str, query_vector: Any, **kwargs) -> list[Any]:
        """Hybrid search (``Index.search``'s keywords: k, doc_ids, fts_k, dense_k, rrf_k,
        fts_weighted) → ``Hit``s."""
        ...

    def close(self) -> None:
        ...


class QueryEmbedder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray:
        ...


class FactLookup(Protocol):
    """The facts store as the pipeline reads it: whether it holds facts, and a company."""

    available: bool

    def company(self, key: str) -> Any:
        ...


class FactsSource(Protocol):
    """The facts answerer of an index: its concept table, its store, and the answer to a
    classified question for some companies."""

    concepts: Any
    store: FactLookup

    def answer(self, query: Any, companies: list[Any]) -> Any:
        ...


class QuestionRouter(Protocol):
    def route(self, question: str, expand: bool = False) -> Any:
        """The ``Routing`` of a question."""
        ...

    def extract(self, question: str, expand: bool = False) -> tuple[Any, Any]:
        """The router LLM's structured reading of a question, and its ``LLMCall``."""
        ...

    def expand(self, question: str) -> tuple[Any, Any]:
        """The query expansion (passage, keywords), and its ``LLMCall``."""
        ...


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
