"""The HTTP service: a FastAPI Ingress over the deployments, composed by ``build_app``.

    POST /v1/answer     {"question", "system", "generate", "stream"} → the Answer record
                        (``stream``: server-sent events ``text``… then ``answer``)
    GET  /v1/documents  the filings in the index
    GET  /v1/documents/{doc_id}/pages/{page}?chunk=ID
                        a page as PNG (base64) with the cited passage highlighted, and its text
    POST /v1/chat/completions, GET /v1/models
                        the OpenAI chat-completions surface (``serving.openai_api``)
    GET  /              the web page: ask, read the answer, open the cited page
    GET  /healthz       ready when every deployment answers
    GET  /metrics       Prometheus text
    GET  /docs, /openapi.json

The Ingress runs the same ``Pipeline`` as the CLI, in a worker thread per request, with its
components replaced by deployment handles (``serving.remote``). It admits at most
``limits.max_in_flight`` answers at once; one more gets 503 with Retry-After at once, so a
client never waits on a hidden queue. An admitted request always gets a reply: the Answer, a
4xx/5xx naming the problem, or 504 past ``limits.deadline_s``. Auth, those limits and the
mapping of failures to replies are ``serving.admission``'s.
"""


import asyncio
import base64
import json
import logging
import threading
import time
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ConfigDict, Field
from ray import serve

from finrag.models.devices import placement_gpus
from finrag.models.energy import UnavailableMeter, meter_for
from finrag.retrieval.systems.pipelines import Pipeline
from finrag.retrieval.systems.recipes import SYSTEMS, VARIANT_OF
from finrag.serving import openai_api
from finrag.serving.admission import ApiError, Gate, check_auth, first_line, incident, public
from finrag.serving.tokens import Grant
from finrag.serving.writes import CollectionChange, DocumentUpload, IndexWriter
from finrag.serving.config import AppConfig
from finrag.serving.deployments import Embedder, Generator, Reranker, Retriever, Router, _profile
from finrag.serving.metrics import Metrics
from finrag.serving.remote import (DeadlineExceeded, RemoteEmbedder, RemoteFacts, RemoteIndex,
                            RemoteLLM, RemoteReranker, RemoteRouter, wait)

log = logging.getLogger("finrag.serve")

api = FastAPI(title="finrag", version="1",
              description="Answers questions over SEC filings with document-routed retrieval. "
                          "Every answer carries its citations, routing, tokens, LLM calls, "
                          "per-stage latency and energy (with its source).")


class AnswerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(..., description="The question, in plain words")
    system: Literal[SYSTEMS] = Field("hdrr", description="Which system answers")
    generate: bool = Field(True, description="False: stop after retrieval (no answer text)")
    stream: bool = Field(False, description="Server-sent events: the text as it is written, "
                                            "then the Answer record")


def _ingress(request: Request):
    # Serve runs the app object the Ingress was built with; module functions may see a copy
    return getattr(request.app.state, "ingress", None)


def _error(request: Request, status: int, kind: str, message: str,
           headers: dict | None = None) -> JSONResponse:
    ingress = _ingress(request)
    if ingress is not None:
        ingress.metrics.errors.labels(kind).inc()
    # a message may quote the request (a field name): short, and always encodable
    message = message[:500].encode("utf-8", "backslashreplace").decode("utf-8")
    if request.url.path in openai_api.PATHS:  # OpenAI's shape, and 400 where we say 422
        return JSONResponse(openai_api.error_body(kind, message),
                            status_code=400 if status == 422 else status, headers=headers)
    return JSONResponse({"error": message, "kind": kind}, status_code=status, headers=headers)


@api.exception_handler(ApiError)
async def _api_error(request: Request, exc: ApiError):
    return _error(request, exc.status, exc.kind, exc.message, exc.headers)


@api.exception_handler(RequestValidationError)
async def _invalid(request: Request, exc: RequestValidationError):
    problems = []
    for e in exc.errors():
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        problems.append(f"{where}: {e.get('msg')}")
    return _error(request, 422, "bad_request", "; ".join(problems) or "invalid request")


_ENDPOINTS = {"/v1/answer", "/v1/documents", "/healthz", "/metrics", "/docs", "/openapi.json",
              "/", *openai_api.PATHS}
_PAGE = "/v1/documents/{doc_id}/pages/{page}"
WEB_PAGE = Path(__file__).with_name("web") / "index.html"


_DOCUMENT = "/v1/documents/{doc_id}"


def _endpoint(path: str) -> str:
    """The metrics label of a path: its route, never the ids in it."""
    if path in _ENDPOINTS:
        return path
    if not path.startswith("/v1/documents/"):
        return "other"
    return (_PAGE if "/pages/" in path else _DOCUMENT + "/collections"
            if path.endswith("/collections") else _DOCUMENT)


@api.middleware("http")
async def _limits_and_counts(request: Request, call_next):
    ingress = _ingress(request)
    endpoint = _endpoint(request.url.path)
    try:
        refused = await _admit_request(ingress, request)
        response = refused or await call_next(request)
    except Exception as exc:  # a fault of ours: in the log with an id, never in the reply
        response = _error(request, 500, "internal", incident(exc))
    if ingress is not None:
        ingress.metrics.requests.labels(endpoint, str(response.status_code)).inc()
    return response


async def _admit_request(ingress, request: Request) -> JSONResponse | None:
    """The Gate's checks before any handler runs (``serving.admission.Gate.check_request``):
    the refusal, or None to go on."""
    if ingress is None:
        return None
    try:
        await ingress.gate.check_request(request)
    except ApiError as e:
        return _error(request, e.status, e.kind, e.message, e.headers)
    return None


async def _awaited(response):
    return await response


# what /v1/documents shows of a document: never its path on disk or its hash
_PUBLIC_DOCUMENT_FIELDS = ("doc_id", "company", "ticker", "aliases", "doc_type", "fiscal_year",
                           "fiscal_quarter", "period_end", "filing_date", "sector",
                           "page_count", "char_count", "chunk_count")


def ingress_meter(profile):
    """The Ingress's energy meter. Its own process runs no model on a GPU; on a profile that
    places roles on GPUs those belong to other deployments (other requests share them), so
    they are not read from here (never a host-wide sum): the Generator charges each request
    its token share of its own GPU, and an answer's energy is that share, its scope naming
    what is left out. Otherwise the CPU package's counter (RAPL) where readable."""
    if placement_gpus(profile, list(profile.roles)):
        return UnavailableMeter("the GPUs that served a request belong to other deployments; "
                                "not read from the Ingress")
    return meter_for(["cpu"])


# Module functions the Ingress calls are defined above it: Serve pickles the class when it is
# decorated, with the module's names as they are then (one defined below was a NameError in
# the replica, and the app never became ready).
@serve.deployment
@serve.ingress(api)
class Ingress:
    def __init__(self, config: dict, router, embedder, retriever, light, large, generator):
        self.cfg = AppConfig.model_validate(config)
        self.handles = dict(router=router, embedder=embedder, retriever=retriever, light=light,
                            large=large, generator=generator)
        self.metrics = Metrics()
        self.gate = Gate(self.cfg, self.metrics)  # auth, limits, admission, error replies
        self._pipeline = None
        self._build = threading.Lock()
        self._builder: threading.Thread | None = None
        self._starting = threading.Lock()  # held an instant, never across the build
        self._build_problem: str | None = None
        self._writer: IndexWriter | None = None
        api.state.ingress = self

    # the Pipeline over remote components, built on first use (handles block: not in __init__)
    def pipeline(self):
        with self._build:
            if self._pipeline is None:
                h = self.handles
                prof = _profile(self.cfg)
                variants = {v: RemoteIndex(h["retriever"], v)
                            for v in wait(h["retriever"].variants.remote())}
                self._pipeline = Pipeline(
                    RemoteIndex(h["retriever"]), RemoteEmbedder(h["embedder"]), prof,
                    variants=variants,
                    light=RemoteReranker(h["light"]) if h["light"] else None,
                    large=RemoteReranker(h["large"]) if h["large"] else None,
                    engines={prof.role("generator").model: RemoteLLM(h["generator"])},
                    meter=ingress_meter(prof), router=RemoteRouter(h["router"]),
                    facts=RemoteFacts(h["retriever"]))
            return self._pipeline

    def _warm(self) -> bool:
        """True once the pipeline is built; else its build is started (once, in a thread of
        its own, so probes never queue behind it)."""
        if self._pipeline is not None:
            return True
        with self._starting:  # not self._build: the event loop must never wait for a build
            if self._builder is None or not self._builder.is_alive():
                self._builder = threading.Thread(target=self._try_build, daemon=True)
                self._builder.start()
        return False

    def _try_build(self) -> None:
        try:
            self.pipeline()
            self._build_problem = None
        except Exception as exc:
            self._build_problem = f"connecting to the deployments failed: {incident(exc)}"

    def _admit(self, req: AnswerRequest, grant: Grant | None, on_text=None, *,
               path: str = "/v1/answer") -> asyncio.Future:
        """Start one answer through the Gate (503 when the limit is reached), on the view of
        the pipeline the caller's grant may read; the audit log gets its filings."""
        def work():
            answer = public(self._view(grant).answer(req.question, req.system,
                                                     generate=req.generate, on_text=on_text))
            self.gate.record(grant, path, 200, system=req.system,
                             routed=list(answer.routing.doc_ids if answer.routing else []),
                             cited=[c.doc_id for c in answer.citations])
            return answer

        return self.gate.admit(work)

    def _view(self, grant: Grant | None):
        return self.pipeline().scoped(None if grant is None else grant.collections)

    @api.post("/v1/answer", summary="Answer a question",
              response_description="The Answer record (or an event stream when stream=true)")
    async def answer(self, req: AnswerRequest, request: Request):
        grant = self.gate.authorize(request)
        self.gate.check_question(req.question)
        if req.stream:
            return self._stream(req, grant)
        answer = await self.gate.result(self._admit(req, grant))
        return JSONResponse(answer.to_dict())

    async def _pieces(self, req: AnswerRequest, grant: Grant | None,
                      path: str = "/v1/answer"):
        """An admitted answer as it is written: ("text", piece)…, then ("answer", Answer) or
        ("error", ApiError), the latter also when the deadline passes."""
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue = asyncio.Queue()
        future = self._admit(req, grant, on_text=lambda t: loop.call_soon_threadsafe(
            pieces.put_nowait, t), path=path)
        future.add_done_callback(lambda _: pieces.put_nowait(None))
        deadline = loop.time() + self.cfg.limits.deadline_s
        try:
            while True:
                try:
                    piece = await asyncio.wait_for(pieces.get(),
                                                   max(0.0, deadline - loop.time()))
                except asyncio.TimeoutError:
                    yield "error", ApiError(504, "deadline", "no answer within the deadline "
                                                             f"of {self.cfg.limits.deadline_s:g} s")
                    return
                if piece is None:
                    break
                yield "text", piece
            try:
                yield "answer", future.result()
            except Exception as exc:
                yield "error", self.gate.failure(exc)
        finally:  # the deadline passed or the client closed the stream
            self.gate.give_up(future)

    def _stream(self, req: AnswerRequest, grant: Grant | None) -> StreamingResponse:
        def event(kind: str, data: Any) -> str:
            return f"event: {kind}\ndata: {json.dumps(data)}\n\n"

        async def events():
            async for kind, item in self._pieces(req, grant):
                if kind == "text":
                    yield event("text", {"text": item})
                elif kind == "answer":
                    yield event("answer", item.to_dict())
                else:
                    yield event("error", {"error": item.message, "kind": item.kind})

        return StreamingResponse(events(), media_type="text/event-stream")

    # -- the OpenAI surface: the same auth, checks, admission, deadline and metrics --------
    @api.post("/v1/chat/completions", summary="OpenAI-compatible chat completion",
              response_description="A chat.completion (or chunks when stream=true); the Answer "
                                   "record is in the extension field `finrag`")
    async def chat_completions(self, chat: openai_api.ChatRequest, request: Request):
        grant = self.gate.authorize(request)
        system = openai_api.system_of(chat.model)
        if system is None:
            raise ApiError(404, "not_found", f"model {chat.model!r} does not exist; choose from "
                           + ", ".join(openai_api.model_id(s) for s in SYSTEMS))
        req = AnswerRequest(question=chat.question(), system=system)
        self.gate.check_question(req.question)
        completion = openai_api.Completion(chat.model)
        if not chat.stream:
            answer = await self.gate.result(self._admit(req, grant,
                                                        path="/v1/chat/completions"))
            return JSONResponse(completion.whole(answer))
        with_usage = bool(chat.stream_options and chat.stream_options.include_usage)
        pieces = self._pieces(req, grant, "/v1/chat/completions")

        def data(body: dict) -> str:
            return f"data: {json.dumps(body)}\n\n"

        async def chunks():
            yield data(completion.chunk({"role": "assistant", "content": ""}))
            async for kind, item in pieces:
                if kind == "text":
                    yield data(completion.chunk({"content": item}))
                elif kind == "answer":
                    yield data(completion.chunk({}, "stop", finrag=item.to_dict()))
                    if with_usage:
                        yield data(completion.usage_chunk(item))
                else:
                    self.metrics.errors.labels(item.kind).inc()
                    yield data(openai_api.error_body(item.kind, item.message))
            yield "data: [DONE]\n\n"

        return StreamingResponse(chunks(), media_type="text/event-stream")

    @api.get("/v1/models", summary="The systems, as OpenAI models")
    async def models(self, request: Request):
        self.gate.authorize(request)
        if not self._warm():  # never wait on the build: say so, as /healthz does
            raise ApiError(503, "overloaded", "starting: the models are loading; retry shortly",
                           {"Retry-After": str(self.gate.retry_after())})
        return openai_api.models(self._systems(self._pipeline))

    @staticmethod
    def _systems(pipe) -> list[str]:
        """The systems this deployment can answer with (index variants built or not)."""
        return [s for s in SYSTEMS if s not in VARIANT_OF or VARIANT_OF[s] in pipe.variants]

    # -- the web page and the cited pages it shows ------------------------------------------
    @api.get("/", include_in_schema=False)
    async def web_page(self):
        # the page holds no data: every call it makes carries the bearer token the user gives
        return FileResponse(WEB_PAGE, media_type="text/html; charset=utf-8")

    @api.get(_PAGE, summary="A page of a filing with the cited passage highlighted")
    async def page(self, doc_id: str, page: int, request: Request, chunk: int | None = None):
        grant = self.gate.authorize(request)
        if grant is not None and grant.collections is not None:
            readable = await asyncio.to_thread(lambda: self._view(grant).index.readable)
            if doc_id not in readable:  # the reply of a filing that is not in the index
                self.gate.record(grant, "page", 404, doc=doc_id)
                raise ApiError(404, "not_found", f"no filing {doc_id!r} in the index")
        try:
            view = await asyncio.wait_for(
                self.handles["retriever"].page_view.remote(doc_id, page, chunk),
                self.cfg.limits.deadline_s)
        except asyncio.TimeoutError:
            raise ApiError(504, "deadline", "the page was not rendered within the deadline of "
                                            f"{self.cfg.limits.deadline_s:g} s") from None
        self.gate.record(grant, "page", view["status"], doc=doc_id, page=page)
        if view["status"] != 200:
            raise ApiError(view["status"], "not_found" if view["status"] == 404 else
                           "bad_request", view["error"])
        return {"doc_id": doc_id, "page": view["page"], "page_count": view["page_count"],
                "highlighted": view["highlighted"],
                "image": "data:image/png;base64," + base64.b64encode(view["png"]).decode()}

    @api.get("/v1/documents", summary="The filings in the index, a page at a time")
    async def documents(self, request: Request, offset: int = Query(0, ge=0, le=10**9),
                        limit: int = Query(50, ge=1, le=10**9)):
        grant = self.gate.authorize(request)
        limit = min(limit, self.cfg.limits.max_page_size)
        try:
            docs = await asyncio.wait_for(self.handles["retriever"].documents.remote(),
                                          self.cfg.limits.health_timeout_s * 6)
        except Exception as exc:
            raise self.gate.failure(exc if not isinstance(exc, asyncio.TimeoutError)
                                else DeadlineExceeded()) from None
        if grant is not None and grant.collections is not None:  # only what it may read
            docs = [d for d in docs if grant.collections.intersection(d.get("collections") or [])]
        page = [{k: v for k, v in d.items() if k in _PUBLIC_DOCUMENT_FIELDS}
                for d in docs[offset:offset + limit]]
        self.gate.record(grant, "/v1/documents", 200, count=len(docs))
        more = offset + limit < len(docs)
        return {"count": len(docs), "offset": offset, "limit": limit,
                "next_offset": offset + limit if more else None, "documents": page}

    # -- writing: upload, remove, collections (serving/writes.py says who may) ----------------
    def writer(self) -> IndexWriter:
        if self._writer is None:
            from finrag.retrieval.routing.companies import CompanyTable

            self._writer = IndexWriter(self.cfg.index_dir(),
                                       RemoteEmbedder(self.handles["embedder"]).described(),
                                       CompanyTable.load(self.cfg.companies),
                                       self.cfg.limits.max_upload_bytes)
        return self._writer

    async def _write(self, grant: Grant | None, action: str, work, **what):
        """One write in a thread of its own, run to its end even when the client goes (a
        filing is committed whole or not at all); audited with its status."""
        try:
            result = await asyncio.to_thread(work)
        except ApiError as exc:
            self.gate.record(grant, action, exc.status, **what)
            raise
        except Exception:  # a fault of ours: a 500 with an incident id, and in the audit too
            self.gate.record(grant, action, 500, **what)
            raise
        status, body = result if isinstance(result, tuple) else (200, result)
        self.gate.record(grant, action, status, **what)
        return JSONResponse(body, status_code=status)

    @api.post("/v1/documents", status_code=201, summary="Upload and ingest a filing",
              response_description="The filing's doc id, collections, pages and chunks")
    async def upload(self, upload: DocumentUpload, request: Request):
        grant = self.gate.authorize(request)
        return await self._write(grant, "ingest", lambda: self.writer().ingest(grant, upload),
                                 doc=upload.filename, into=sorted(upload.collections))

    @api.delete(_DOCUMENT, summary="Remove a filing from the index")
    async def remove(self, doc_id: str, request: Request):
        grant = self.gate.authorize(request)
        return await self._write(grant, "remove", lambda: self.writer().remove(grant, doc_id),
                                 doc=doc_id)

    @api.put(_DOCUMENT + "/collections", summary="Add a filing to collections or take it out")
    async def collections(self, doc_id: str, change: CollectionChange, request: Request):
        grant = self.gate.authorize(request)
        return await self._write(
            grant, "collections", lambda: self.writer().change_collections(grant, doc_id, change),
            doc=doc_id, add=change.add, remove=change.remove)

    @api.get("/healthz", summary="Ready when every deployment answers in time")
    async def healthz(self, request: Request):
        problem, docs = await self._health()
        if problem:
            return _error(request, 503, "unavailable", f"not ready: {problem}",
                          {"Retry-After": "5"})
        # with scoped tokens, how many documents the index holds is not for everyone
        docs = docs if self.gate.tokens is None else None
        return {"status": "ok", "profile": self._pipeline.profile.name, "documents": docs,
                "answers_in_flight": self.gate.in_flight,
                "max_in_flight": self.cfg.limits.max_in_flight,
                "systems": self._systems(self._pipeline)}

    async def _health(self) -> tuple[str | None, int]:
        """(what is wrong or None, the documents served). Each deployment must answer a probe
        within ``limits.health_timeout_s``; a generator on one call for longer than an
        answer's deadline, or an answer still running past it, counts as hung."""
        if not self._warm():
            return self._build_problem or "starting (connecting to the deployments)", 0
        h, timeout, deadline = self.handles, self.cfg.limits.health_timeout_s, \
            self.cfg.limits.deadline_s
        probes = {"Retriever": h["retriever"].documents.remote(),
                  "Router": h["router"].stats.remote(),
                  "Embedder": h["embedder"].encode.remote(["ok"]),
                  "Generator": h["generator"].busy_s.remote()}
        for name in ("light", "large"):
            if h[name] is not None:
                probes[f"{name.capitalize()}Reranker"] = h[name].describe.remote()
        names = list(probes)
        results = await asyncio.gather(*(asyncio.wait_for(_awaited(probes[n]), timeout)
                                         for n in names), return_exceptions=True)
        problems = []
        for name, result in zip(names, results):
            if isinstance(result, asyncio.TimeoutError):
                problems.append(f"{name} did not answer within {timeout:g} s")
            elif isinstance(result, BaseException):
                problems.append(f"{name} failed ({incident(result)})")
        busy = results[names.index("Generator")]
        if isinstance(busy, (int, float)) and busy > deadline:
            problems.append(f"Generator has been on one call for {busy:.0f} s, past the "
                            f"answer deadline of {deadline:g} s")
        oldest = self.gate.oldest_start()
        if oldest is not None and time.monotonic() - oldest > deadline + timeout:
            problems.append(f"an answer has run {time.monotonic() - oldest:.0f} s, past the "
                            f"deadline of {deadline:g} s")
        docs = results[0]
        return "; ".join(problems) or None, len(docs) if isinstance(docs, list) else 0

    @api.get("/metrics", summary="Prometheus metrics")
    async def metrics_text(self):
        if self._pipeline is not None:  # the generator's engine statistics, when it answers
            try:
                self.metrics.engine(await asyncio.wait_for(
                    _awaited(self.handles["generator"].engine_stats.remote()),
                    self.cfg.limits.health_timeout_s))
            except Exception as exc:  # the metrics page never fails for them
                log.warning("generator engine statistics unavailable: %s", first_line(exc))
        return Response(self.metrics.render(), media_type=CONTENT_TYPE_LATEST)


def _serve_host() -> str | None:
    """The address Serve's proxies listen on, when Serve is running (None: unknown)."""
    import ray

    if not ray.is_initialized():
        return None
    try:
        from ray.serve.context import _get_global_client

        return _get_global_client().http_config.host
    except Exception:
        return None


def build_app(args: dict | AppConfig | None = None):
    """The whole service as one Serve application, from a config (the ``args`` of
    ``deploy/*.yaml``). Placement, replicas and limits of each deployment come from
    ``deployments:``; deployments the profile does not use are left out."""
    cfg = args if isinstance(args, AppConfig) else AppConfig.model_validate(args or {})
    check_auth(cfg, _serve_host())
    conf = cfg.model_dump(mode="json")
    prof = _profile(cfg)
    embedder = Embedder.options(**cfg.options("Embedder", prof)).bind(conf)
    retriever = Retriever.options(**cfg.options("Retriever")).bind(conf)
    generator = Generator.options(**cfg.options("Generator", prof)).bind(conf)
    light = large = None
    if "light_reranker" in prof.roles:
        light = Reranker.options(name="LightReranker", **cfg.options("LightReranker", prof)).bind(
            conf, "light_reranker")
    if prof.pipeline.large_rerank and "large_reranker" in prof.roles:
        large = Reranker.options(name="LargeReranker", **cfg.options("LargeReranker", prof)).bind(
            conf, "large_reranker")
    shares_llm = prof.role("router").model == prof.role("generator").model
    router = Router.options(**cfg.options("Router", prof)).bind(conf, embedder,
                                                          generator if shares_llm else None)
    # room above the admission limit for /healthz, /metrics and the 503s themselves; past it
    # Serve's own bounded queue answers 503 rather than letting requests wait unseen
    ingress = {"max_ongoing_requests": cfg.limits.max_in_flight + 16,
               "max_queued_requests": cfg.limits.max_in_flight + 16} | cfg.options("Ingress")
    return Ingress.options(**ingress).bind(conf, router, embedder, retriever, light, large,
                                           generator)
