"""The Serve deployments: each a small class around one object of ``models``/``retrieval``.

Placement (CPUs, GPUs), replicas, autoscaling and ``max_ongoing_requests`` are not written
here: ``build_app`` applies them from the config (``deploy/*.yaml``).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from typing import Any

from ray import serve

from finrag.serving.config import AppConfig


def _profile(cfg: AppConfig):
    from finrag.models.profiles import load_config

    prof = load_config(cfg.profiles_file).active(cfg.profile)
    if cfg.large_rerank is not None:
        prof = prof.model_copy(update={"pipeline": prof.pipeline.model_copy(
            update={"large_rerank": cfg.large_rerank})})
    return prof


def variant_dirs(cfg: AppConfig) -> dict[str, str]:
    """The index variants that exist on disk (V-A ``meta``, V-B ``llmctx``): index folders or
    publish roots."""
    from pathlib import Path

    from finrag.retrieval.store.snapshot import is_publish_root
    from finrag.retrieval.store.variant_indexes import variant_dir

    index = cfg.index_dir()
    found = {}
    for variant, given in (("meta", cfg.meta_index), ("llmctx", cfg.llmctx_index)):
        folder = Path(given) if given else variant_dir(index, variant)
        if (folder / "catalog.sqlite").is_file() or is_publish_root(folder):
            found[variant] = str(folder)
    return found


class OneCallAtATime:
    """An engine that Serve's threads share, taking one call at a time: neither vLLM's offline
    engine nor the transformers engine (stateful JSON processors) is thread-safe, and two
    calls at once can leave one waiting forever. Attributes pass through."""

    def __init__(self, engine):
        self._engine, self._lock = engine, threading.Lock()

    def __getattr__(self, name: str):
        attr = getattr(self._engine, name)
        if not callable(attr):
            return attr

        def locked(*args, **kwargs):
            with self._lock:
                return attr(*args, **kwargs)

        return locked


def generator_ledger(profile, role: str, *, cuda_devices: int | None = None):
    """The ledger that charges each request its token share of the generator's GPU, where the
    role runs on one (NVML over that device only). None on the CPU: the Ingress's own window
    already covers the CPU package, and a second reading of it would count it twice."""
    from finrag.models.devices import resolve_device
    from finrag.models.energy import EnergyLedger, meter_for

    device = resolve_device(profile.role(role).device, role=role, cuda_devices=cuda_devices)
    return EnergyLedger(meter_for([device])) if device.startswith("cuda") else None


@serve.deployment
class Embedder:
    """The profile's query embedder, which must be the one the index's chunks were embedded
    with (else the deployment fails to start, naming both)."""

    def __init__(self, config: dict):
        from finrag.models.profiles import load_profile_embedder
        from finrag.retrieval.store.index import Index

        cfg = AppConfig.model_validate(config)
        self.embedder = load_profile_embedder(_profile(cfg))
        with Index.open(cfg.index_dir()) as index:
            index.check_embedder(self.embedder)

    def encode(self, texts: list[str]):
        return self.embedder.encode(texts)

    def identity(self) -> dict[str, Any]:
        """What an index records of its embedder (an ingest through this one checks it)."""
        e = self.embedder
        return {"name": e.name, "model_id": e.model_id, "dim": e.dim,
                "kind": getattr(e, "kind", "sentence-transformers"),
                "normalize": getattr(e, "normalize", True)}


@serve.deployment
class Retriever:
    """Catalog + FTS5 + FAISS, opened read-only; the plain index and its variants. Given a
    publish root (``finrag publish``), each serves the version CURRENT names and moves to a
    newer one on the first call after it is published (``retrieval.store.snapshot``)."""

    def __init__(self, config: dict):
        from finrag.retrieval.store.index import Index

        cfg = AppConfig.model_validate(config)
        self.indexes = {None: Index.open(cfg.index_dir())}
        approximate = _profile(cfg).pipeline.vector_index
        if approximate != "flat":  # whole-corpus searches; scoped ones stay exact
            self.indexes[None].vectors.configure(approximate=approximate)
        for variant, folder in variant_dirs(cfg).items():
            self.indexes[variant] = Index.open(folder)

    def _index(self, variant: str | None):
        """The index, caught up with what an ingest wrote (or a publish made current) since
        the last call."""
        if variant not in self.indexes:
            raise FileNotFoundError(f"the {variant!r} index variant is not served; build it with "
                                    f"`finrag ingest PATHS --variant {variant}` beside the index")
        index = self.indexes[variant]
        index.refresh()
        return index

    def generation(self, variant: str | None = None) -> int:
        return self._index(variant).generation()

    def variants(self) -> list[str]:
        return [v for v in self.indexes if v]

    def settings(self, variant: str | None = None):
        return self._index(variant).settings

    def search(self, query: str, vector, variant: str | None = None, **kwargs):
        return self._index(variant).search(query, vector, **kwargs)

    def document(self, doc_id: str, variant: str | None = None):
        return self._index(variant).catalog.document(doc_id)

    def pages(self, doc_id: str, variant: str | None = None):
        return self._index(variant).catalog.pages(doc_id)

    def page_chunks(self, doc_id: str, pages: list[int], variant: str | None = None):
        return self._index(variant).catalog.page_chunks(doc_id, pages)

    def readable(self, collections: list[str] | None, variant: str | None = None):
        return self._index(variant).catalog.readable(
            None if collections is None else frozenset(collections))

    def fingerprints(self, variant: str | None = None) -> dict[str, str]:
        return self._index(variant).catalog.fingerprints()

    def documents(self, variant: str | None = None) -> list[dict[str, Any]]:
        return [d.to_dict() for d in self._index(variant).documents()]

    def page_view(self, doc_id: str, page: int, chunk_id: int | None = None) -> dict[str, Any]:
        """A page of a filing as PNG with chunk ``chunk_id`` highlighted, or ``error`` and the
        HTTP ``status`` to answer with (a plain dict: no exception types cross the handle)."""
        from finrag.serving.pages import PageError, render_page

        # the Ingress bounds both; a number past SQLite's integers would be a 500 here
        if not 1 <= page <= 100_000:
            return {"status": 422, "error": f"page {page}: pages are numbered 1 to 100000"}
        if chunk_id is not None and not 0 <= chunk_id < 2**63:
            return {"status": 422, "error": "chunk: a passage id is from 0 to 2**63 - 1"}
        catalog = self._index(None).catalog
        doc = catalog.document(doc_id)
        if doc is None:
            return {"status": 404, "error": f"no filing {doc_id!r} in the index"}
        passage = ""
        if chunk_id is not None:
            chunk = catalog.chunks([chunk_id]).get(chunk_id)
            if chunk is None or chunk.doc_id != doc_id:
                return {"status": 404, "error": f"no passage {chunk_id} in {doc_id}"}
            passage = chunk.text
        try:
            view = render_page(doc.source_path, page, passage)
        except PageError as e:
            return {"status": e.status, "error": str(e)}
        return {"status": 200, "png": view.png, "page": view.page,
                "page_count": view.page_count, "highlighted": view.highlighted}

    # the XBRL facts of the plain index (retrieval.facts), for the facts routes; ``scope``
    # ({"readable": doc ids, "public": bool}): a caller's, None for every fact. Made again
    # when the catalog is another (a newer published version swapped in).
    def _facts(self, scope: dict | None = None):
        catalog = self._index(None).catalog
        if getattr(self, "_answerer", None) is None or self._facts_catalog is not catalog:
            from finrag.retrieval.facts.answer import FactsAnswerer
            from finrag.retrieval.facts.concepts import default_concepts
            from finrag.retrieval.facts.store import FactStore

            self._answerer = FactsAnswerer(FactStore(catalog.db, readonly=True),
                                           default_concepts())
            self._facts_catalog, self._scoped_answerers = catalog, {}
        if scope is None:
            return self._answerer
        key = (frozenset(scope["readable"]), bool(scope["public"]))
        if key not in self._scoped_answerers:
            while len(self._scoped_answerers) >= 64:
                self._scoped_answerers.pop(next(iter(self._scoped_answerers)))
            self._scoped_answerers[key] = self._answerer.scoped(*key)
        return self._scoped_answerers[key]

    def facts_available(self, scope: dict | None = None) -> bool:
        return self._facts(scope).store.available

    def facts_company(self, key: str, scope: dict | None = None):
        return self._facts(scope).store.company(key)

    def facts_answer(self, query, companies, scope: dict | None = None):
        return self._facts(scope).answer(query, companies)


@serve.deployment
class Reranker:
    """One reranker role: ``light_reranker`` (MaxSim / cross-encoder) or ``large_reranker``
    (LLM yes/no scorer / large cross-encoder)."""

    def __init__(self, config: dict, role: str):
        from finrag.models.profiles import load_reranker

        self.reranker = load_reranker(_profile(AppConfig.model_validate(config)), role)
        # Serve runs concurrent calls in threads; an LLM scorer's engine takes one at a time
        # (vLLM's offline engine is not thread-safe: two calls at once left one waiting
        # forever for outputs the other had taken)
        self._lock = (threading.Lock() if hasattr(self.reranker, "engine")
                      else contextlib.nullcontext())

    def describe(self) -> tuple[str, str]:
        return self.reranker.model_id, getattr(self.reranker, "name", type(self.reranker).__name__)

    def score(self, query: str, passages: list[str]):
        with self._lock:
            scores = self.reranker.score(query, passages)
            usage = getattr(self.reranker, "last_usage", None)
        return [float(s) for s in scores], dict(usage) if usage else None


@serve.deployment
class Generator:
    """The generator's LLM engine. On a vLLM profile it is vLLM's async engine: every request
    goes straight to it, concurrent requests share engine steps (continuous batching) and a
    stream carries the pieces the engine decodes. On transformers, concurrent one-prompt
    requests are gathered into one engine batch (``serve.batch``) and the engine runs one
    batch at a time (its JSON processors are stateful)."""

    def __init__(self, config: dict, role: str = "generator"):
        from finrag.models.profiles import load_llm

        cfg = AppConfig.model_validate(config)
        prof = _profile(cfg)
        self.asynchronous = prof.engine == "vllm"
        self.engine = load_llm(prof, role, asynchronous=self.asynchronous)
        self.ledger = generator_ledger(prof, role)
        if self.asynchronous:
            self.engine.ledger = self.ledger
        self._lock = threading.Lock()
        self._since: float | None = None  # when the engine's current call began
        self._batched.set_max_batch_size(cfg.batching.max_batch_size)
        self._batched.set_batch_wait_timeout_s(cfg.batching.batch_wait_timeout_s)

    def _locked(self, fn, *args, **kwargs):
        with self._lock:
            self._since = time.monotonic()
            try:
                return fn(*args, **kwargs)
            finally:
                self._since = None

    def _charged(self, prompts: list, *args, **kwargs) -> list:
        """``engine.generate`` under the lock, each completion charged its token share of the
        device's energy where the ledger meters it."""
        if self.ledger is None:
            return self._locked(self.engine.generate, prompts, *args, **kwargs)
        tickets = [self.ledger.open() for _ in prompts]
        done = []
        try:
            done = self._locked(self.engine.generate, prompts, *args, **kwargs)
            for ticket, c in zip(tickets, done):
                self.ledger.tokens(ticket, c.prompt_tokens + c.completion_tokens)
        finally:
            readings = [self.ledger.close(ticket) for ticket in tickets]
        for c, reading in zip(done, readings):
            c.energy = reading
        return done

    def busy_s(self) -> float:
        """How long the engine has been on its current call (0 when idle); /healthz calls a
        call longer than an answer's deadline hung."""
        since = self._since
        return time.monotonic() - since if since is not None else 0.0

    def model_id(self) -> str:
        return self.engine.model_id

    def engine_stats(self) -> dict:
        """The engine's own step statistics where it keeps them (vLLM's async engine: steps,
        and the most requests one step ran, the sign of continuous batching); else {}."""
        stats = getattr(self.engine, "stats", None)
        return stats() if callable(stats) else {}

    def tokenizer(self):
        return getattr(self.engine, "tokenizer", None)

    def count_tokens(self, text: str) -> int:
        return self.engine.count_tokens(text)

    def token_ids(self, text: str) -> list[int]:
        return self.engine.token_ids(text)

    def render(self, prompt) -> str:
        return self.engine.render(prompt)

    def next_token_logprobs(self, prompts: list, token_ids: list[int], batch_size: int = 4):
        """The engine's next-token log-probabilities, under the lock (llama.cpp's prompt cache
        then holds the prompt a yes/no answer's generation goes on from)."""
        if not hasattr(self.engine, "next_token_logprobs"):
            raise NotImplementedError(f"{type(self.engine).__name__} reads no next-token "
                                      f"log-probabilities")
        return self._locked(self.engine.next_token_logprobs, prompts, token_ids,
                            batch_size=batch_size)

    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.05)
    async def _batched(self, prompts: list, params: list) -> list:
        groups: dict[str, list[int]] = {}
        for i, p in enumerate(params):
            groups.setdefault(repr(p), []).append(i)
        out: list = [None] * len(prompts)
        for idx in groups.values():
            done = await asyncio.to_thread(self._charged, [prompts[i] for i in idx],
                                           params[idx[0]])
            for i, completion in zip(idx, done):
                out[i] = completion
        return out

    async def generate(self, prompts: list, params=None) -> list:
        if self.asynchronous:
            return await self.engine.generate(prompts, params)
        if len(prompts) == 1:
            return [await self._batched(prompts[0], params)]
        return await asyncio.to_thread(self._charged, prompts, params)

    async def generate_json(self, prompts: list, schema, params=None) -> list:
        if self.asynchronous:
            return await self.engine.generate_json(prompts, schema, params)
        return await asyncio.to_thread(self._locked, self.engine.generate_json, prompts, schema,
                                       params)

    async def stream(self, prompt, params=None):
        """Text pieces as they are generated, then the ``Completion``."""
        if self.asynchronous:
            async for item in self.engine.stream(prompt, params):
                yield item
            return
        pieces: queue.Queue = queue.Queue()
        done = object()

        def work():
            try:
                pieces.put(self._charged([prompt], params, on_text=pieces.put)[0])
            except BaseException as exc:  # handed to the reader below
                pieces.put(exc)
            finally:
                pieces.put(done)

        threading.Thread(target=work, daemon=True).start()
        while (item := await asyncio.to_thread(pieces.get)) is not done:
            if isinstance(item, BaseException):
                raise item
            yield item


@serve.deployment
class Router:
    """Routing: the deterministic resolver over the catalog, its content scorer (scoped search
    through the Embedder), and the router LLM — the Generator's engine when the profile uses
    one model for both roles, else its own."""

    def __init__(self, config: dict, embedder, generator=None):
        from finrag.retrieval.routing.companies import CompanyTable
        from finrag.retrieval.store.index import Index
        from finrag.retrieval.routing.router import Router as Resolver, make_content_scorer
        from finrag.serving.remote import RemoteEmbedder, RemoteLLM

        cfg = AppConfig.model_validate(config)
        prof = _profile(cfg)
        self.index = Index.open(cfg.index_dir())
        llm = None
        if cfg.use_llm_router:
            if generator is not None:
                llm = lambda: RemoteLLM(generator)  # noqa: E731 — on first need
            else:
                from finrag.models.profiles import load_llm

                llm = lambda: OneCallAtATime(load_llm(prof, "router"))  # noqa: E731
        self.router = Resolver(self.index, CompanyTable.load(cfg.companies), llm=llm,
                               content_scorer=make_content_scorer(self.index,
                                                                  RemoteEmbedder(embedder)))

    def _fresh(self):
        """The router over the index as it is now: filings an ingest added or removed since
        the last call are known or forgotten (the index's vectors, for content scoring, too)."""
        if self.index.refresh():
            self.router.reload(self.index.documents())
        return self.router

    def route(self, question: str, readable: list[str] | None = None):
        """``readable``: the caller's readable doc ids (None: all)."""
        router = self._fresh().scoped(None if readable is None else frozenset(readable))
        return router.route(question)

    def extract(self, question: str):
        return self._fresh().extract(question)

    def stats(self) -> dict[str, Any]:
        return dict(self.router.stats)
