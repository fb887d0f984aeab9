"""Stand-ins that give a ``Pipeline`` its components through Serve deployment handles.

Each has the surface of the object it replaces (an embedder's ``encode``, an index's
``search``, an engine's ``generate``…), so the Ingress runs the very same ``Pipeline`` code as
the CLI, with every model call going to the deployment that holds the model. They block on
``.result()``, so call them from a worker thread, never from the event loop.

Every call is bounded: inside ``with Budget(deadline_s):`` a call waits at most for the time
left to that answer, and ``Budget.cancel()`` (the client left, the deadline passed) cancels the
calls in flight and refuses new ones; outside one (building the pipeline) a call waits at most
``CALL_TIMEOUT_S``.
"""

from __future__ import annotations

import threading
import time
from functools import lru_cache
from typing import Any, Callable

from finrag.retrieval.systems.components import (CatalogReader, FactLookup, FactsSource, LLMEngine,
                                          QueryEmbedder, QuestionRouter, Reranker, SearchIndex)

CALL_TIMEOUT_S = 300.0

_current = threading.local()


class CallCancelled(Exception):
    """The answer these calls belonged to was given up (client gone or past its deadline)."""


class DeadlineExceeded(TimeoutError):
    """A deployment did not answer within the time left to the answer."""


class Budget:
    """The time left to one answer and the handle calls it has in flight."""

    def __init__(self, deadline_s: float):
        self.deadline = time.monotonic() + deadline_s
        self.cancelled = False
        self.calls = 0  # handle calls made for the answer (its ``deployment_calls``)
        self._calls: set = set()
        self._lock = threading.Lock()

    def __enter__(self) -> "Budget":
        _current.budget = self
        return self

    def __exit__(self, *exc) -> None:
        _current.budget = None

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def cancel(self) -> None:
        """Give up: calls in flight are cancelled (in a thread of their own, since a handle's
        ``cancel`` may block until the call is placed) and new ones raise ``CallCancelled``."""
        with self._lock:
            self.cancelled = True
            calls, self._calls = list(self._calls), set()
        if calls:
            threading.Thread(target=_cancel_all, args=(calls,), daemon=True).start()

    def track(self, response) -> None:
        with self._lock:
            if not self.cancelled:
                self.calls += 1
                self._calls.add(response)
                return
        _cancel_all([response])
        raise CallCancelled("the answer was cancelled")

    def untrack(self, response) -> None:
        with self._lock:
            self._calls.discard(response)


def _cancel_all(responses) -> None:
    for r in responses:
        try:
            r.cancel()
        except Exception:  # already finished or failed: nothing left to cancel
            pass


def wait(response):
    """The result of a handle call, waiting no longer than the current budget allows."""
    budget: Budget | None = getattr(_current, "budget", None)
    if budget is None:
        try:
            return response.result(timeout_s=CALL_TIMEOUT_S)
        except TimeoutError:
            _cancel_all([response])
            raise DeadlineExceeded(f"a deployment did not answer within {CALL_TIMEOUT_S:g} s"
                                   ) from None
    budget.track(response)
    try:
        left = budget.remaining()
        if left <= 0:
            raise TimeoutError
        return response.result(timeout_s=left)
    except TimeoutError:
        _cancel_all([response])
        raise DeadlineExceeded("a deployment did not answer within the answer's deadline"
                               ) from None
    except Exception:
        if budget.cancelled:
            raise CallCancelled("the answer was cancelled") from None
        raise
    finally:
        budget.untrack(response)


def stream(response):
    """The items of a streaming handle call; cancelled with the current budget."""
    budget: Budget | None = getattr(_current, "budget", None)
    if budget is not None:
        budget.track(response)
    try:
        for item in response:
            if budget is not None and budget.remaining() <= 0:
                _cancel_all([response])
                raise DeadlineExceeded("the generator did not finish within the answer's "
                                       "deadline")
            yield item
    except (DeadlineExceeded, CallCancelled):
        raise
    except Exception:
        if budget is not None and budget.cancelled:
            raise CallCancelled("the answer was cancelled") from None
        raise
    finally:
        if budget is not None:
            budget.untrack(response)


class RemoteEmbedder(QueryEmbedder):
    """``QueryEmbedder`` (``retrieval.systems.components``) over the Embedder deployment."""

    def __init__(self, handle):
        self.handle = handle

    def encode(self, texts: list[str]):
        return wait(self.handle.encode.remote(list(texts)))

    def described(self) -> "RemoteEmbedder":
        """With the deployment's name, model_id, dim, kind and normalize, as an ingest needs."""
        for key, value in wait(self.handle.identity.remote()).items():
            setattr(self, key, value)
        return self


class RemoteCatalog(CatalogReader):
    """``CatalogReader`` over the Retriever deployment (``variant``: V-A/V-B index)."""

    def __init__(self, handle, variant: str | None):
        self.handle, self.variant = handle, variant

    def document(self, doc_id: str):
        return wait(self.handle.document.remote(doc_id, self.variant))

    def pages(self, doc_id: str) -> list[tuple[int, str]]:
        return wait(self.handle.pages.remote(doc_id, self.variant))

    def page_chunks(self, doc_id: str, pages: list[int]) -> list:
        return wait(self.handle.page_chunks.remote(doc_id, [int(p) for p in pages],
                                                   self.variant))

    def readable(self, collections):
        return wait(self.handle.readable.remote(None if collections is None
                                                else sorted(collections), self.variant))

    def fingerprints(self) -> dict[str, str]:
        return wait(self.handle.fingerprints.remote(self.variant))


class RemoteIndex(SearchIndex):
    """``SearchIndex`` over the Retriever deployment, read-only (``variant``: V-A/V-B)."""

    settings: Any
    catalog: RemoteCatalog

    def __init__(self, handle, variant: str | None = None):
        self.handle, self.variant = handle, variant
        self.settings = wait(handle.settings.remote(variant))
        self.catalog = RemoteCatalog(handle, variant)

    def search(self, query: str, query_vector, **kwargs):
        return wait(self.handle.search.remote(query, query_vector, variant=self.variant,
                                              **kwargs))

    def generation(self) -> int:
        return wait(self.handle.generation.remote(self.variant))

    def close(self) -> None:  # the Retriever owns the files
        pass


class RemoteReranker(Reranker):
    """``Reranker`` over a reranker deployment; ``last_usage`` is the token count of the last
    ``score`` call (LLM scorers), as the cascade expects."""

    name: str
    model_id: str

    def __init__(self, handle):
        self.handle = handle
        self.model_id, self.name = wait(handle.describe.remote())
        self.last_usage = None

    def score(self, query: str, passages: list[str]) -> list[float]:
        scores, self.last_usage = wait(self.handle.score.remote(query, list(passages)))
        return scores


class RemoteLLM(LLMEngine):
    """The Generator deployment as an ``LLMEngine``. Tokens are counted here with the model's
    own tokenizer (fetched once), since context assembly counts every block."""

    model_id: str

    def __init__(self, handle):
        self.handle = handle
        self.model_id = wait(handle.model_id.remote())
        tokenizer = wait(handle.tokenizer.remote())
        if tokenizer is not None:
            self._count = lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])
        else:
            self._count = lambda text: wait(self.handle.count_tokens.remote(text))
        self._counted = lru_cache(maxsize=65536)(self._count)

    def count_tokens(self, text: str) -> int:
        return self._counted(text)

    def generate(self, prompts: list, params=None, *, on_text: Callable[[str], None] | None = None):
        if on_text is None:
            return wait(self.handle.generate.remote(list(prompts), params))
        if len(prompts) != 1:
            raise ValueError("on_text streams one prompt at a time")
        completion = None
        for item in stream(self.handle.options(stream=True).stream.remote(prompts[0], params)):
            if isinstance(item, str):
                on_text(item)
            else:
                completion = item
        return [completion]

    def generate_json(self, prompts: list, schema, params=None):
        return wait(self.handle.generate_json.remote(list(prompts), schema, params))

    def token_ids(self, text: str) -> list[int]:
        return wait(self.handle.token_ids.remote(text))

    def render(self, prompt) -> str:
        return wait(self.handle.render.remote(prompt))

    def next_token_logprobs(self, prompts: list, token_ids: list[int], *, batch_size: int = 4):
        return wait(self.handle.next_token_logprobs.remote(list(prompts), list(token_ids),
                                                           batch_size))


class RemoteFacts(FactsSource):
    """``FactsSource`` over the Retriever's facts answerer."""

    concepts: Any
    store: "RemoteFacts._Store"

    class _Store(FactLookup):
        """``FactLookup`` over the Retriever's facts store."""

        available: bool

        def __init__(self, handle, scope: dict | None = None):
            self.handle, self.scope = handle, scope
            self.available = wait(handle.facts_available.remote(scope))

        def company(self, key: str):
            return wait(self.handle.facts_company.remote(key, self.scope))

    def __init__(self, handle, scope: dict | None = None):
        from finrag.retrieval.facts.concepts import default_concepts

        self.handle = handle
        self.scope = scope  # {"readable": [...], "public": bool}; None: every fact
        self.concepts = default_concepts()
        self.store = self._Store(handle, scope)

    def answer(self, query, companies):
        return wait(self.handle.facts_answer.remote(query, companies, self.scope))

    def scoped(self, readable, public: bool) -> "RemoteFacts":
        return RemoteFacts(self.handle, {"readable": sorted(readable), "public": bool(public)})


class RemoteRouter(QuestionRouter):
    """``QuestionRouter`` over the Router deployment; the routing's latency is the wall time
    seen from here."""

    def __init__(self, handle, readable: frozenset[str] | None = None):
        self.handle, self.readable = handle, readable

    def scoped(self, readable) -> "RemoteRouter":
        return self if readable is None else RemoteRouter(self.handle, frozenset(readable))

    def route(self, question: str):
        t0 = time.perf_counter()
        routing = wait(self.handle.route.remote(
            question, None if self.readable is None else sorted(self.readable)))
        routing.latency_ms = (time.perf_counter() - t0) * 1000
        return routing

    def extract(self, question: str):
        return wait(self.handle.extract.remote(question))

    @property
    def stats(self) -> dict[str, Any]:
        return wait(self.handle.stats.remote())
