"""Stand-ins that give a ``Pipeline`` its components through Serve deployment handles.

Each has the surface of the object it replaces (an embedder's ``encode``, an index's
``search``, an engine's ``generate``…), so the Ingress runs the very same ``Pipeline`` code as
the CLI, with every model call going to the deployment that holds the model. They block on
``.result()``, so call them from a worker thread, never from the event loop.
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any, Callable


class RemoteEmbedder:
    def __init__(self, handle):
        self.handle = handle

    def encode(self, texts: list[str]):
        return self.handle.encode.remote(list(texts)).result()


class RemoteCatalog:
    def __init__(self, handle, variant: str | None):
        self.handle, self.variant = handle, variant

    def document(self, doc_id: str):
        return self.handle.document.remote(doc_id, self.variant).result()

    def pages(self, doc_id: str) -> list[tuple[int, str]]:
        return self.handle.pages.remote(doc_id, self.variant).result()


class RemoteIndex:
    """The Retriever deployment seen as a read-only ``Index`` (``variant``: V-A/V-B index)."""

    def __init__(self, handle, variant: str | None = None):
        self.handle, self.variant = handle, variant
        self.settings = handle.settings.remote(variant).result()
        self.catalog = RemoteCatalog(handle, variant)

    def search(self, query: str, vector, **kwargs):
        return self.handle.search.remote(query, vector, variant=self.variant, **kwargs).result()

    def documents(self):
        return self.handle.documents.remote(self.variant).result()

    def close(self) -> None:  # the Retriever owns the files
        pass


class RemoteReranker:
    """A reranker deployment; ``last_usage`` is the token count of the last ``score`` call
    (LLM scorers), as the cascade expects."""

    def __init__(self, handle):
        self.handle = handle
        self.model_id, self.name = handle.describe.remote().result()
        self.last_usage = None

    def score(self, query: str, passages: list[str]) -> list[float]:
        scores, self.last_usage = self.handle.score.remote(query, list(passages)).result()
        return scores


class RemoteLLM:
    """The Generator deployment as an ``LLMEngine``. Tokens are counted here with the model's
    own tokenizer (fetched once), since context assembly counts every block."""

    def __init__(self, handle):
        self.handle = handle
        self.model_id = handle.model_id.remote().result()
        tokenizer = handle.tokenizer.remote().result()
        if tokenizer is not None:
            self._count = lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])
        else:
            self._count = lambda text: self.handle.count_tokens.remote(text).result()
        self.count_tokens = lru_cache(maxsize=65536)(self._count)

    def generate(self, prompts: list, params=None, *, on_text: Callable[[str], None] | None = None):
        if on_text is None:
            return self.handle.generate.remote(list(prompts), params).result()
        if len(prompts) != 1:
            raise ValueError("on_text streams one prompt at a time")
        completion = None
        for item in self.handle.options(stream=True).stream.remote(prompts[0], params):
            if isinstance(item, str):
                on_text(item)
            else:
                completion = item
        return [completion]

    def generate_json(self, prompts: list, schema, params=None):
        return self.handle.generate_json.remote(list(prompts), schema, params).result()


class RemoteFacts:
    """The Retriever's facts answerer, with the interface of ``FactsAnswerer``."""

    class _Store:
        def __init__(self, handle):
            self.handle = handle
            self.available = handle.facts_available.remote().result()

        def company(self, key: str):
            return self.handle.facts_company.remote(key).result()

    def __init__(self, handle):
        from retrieval.facts.concepts import default_concepts

        self.handle = handle
        self.concepts = default_concepts()
        self.store = self._Store(handle)

    def answer(self, query, companies):
        return self.handle.facts_answer.remote(query, companies).result()


class RemoteRouter:
    """The Router deployment; the routing's latency is the wall time seen from here."""

    def __init__(self, handle):
        self.handle = handle

    def route(self, question: str):
        t0 = time.perf_counter()
        routing = self.handle.route.remote(question).result()
        routing.latency_ms = (time.perf_counter() - t0) * 1000
        return routing

    def extract(self, question: str):
        return self.handle.extract.remote(question).result()

    @property
    def stats(self) -> dict[str, Any]:
        return self.handle.stats.remote().result()
