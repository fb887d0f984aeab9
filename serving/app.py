"""The HTTP service: a FastAPI Ingress over the deployments, composed by ``build_app``.

    POST /v1/answer     {"question", "system", "generate", "stream"} → the Answer record
                        (``stream``: server-sent events ``text``… then ``answer``)
    GET  /v1/documents  the filings in the index
    GET  /v1/documents/{doc_id}/pages/{page}?chunk=ID
                        a page as PNG (base64) with the cited passage highlighted, and its text
    POST /v1/chat/completions, GET /v1/models
                        the OpenAI chat-completions surface (``serving.openai_api``)
    GET  /              the web page: ask, read the answer, open the cited page
    GET  /healthz       ready when every deployment answers (its probe reused a few seconds);
                        to a caller with a valid token also what is served and why not ready
    GET  /metrics       Prometheus text
    GET  /docs          the endpoints as plain HTML (no script); /openapi.json the schema

Every reply carries a Content-Security-Policy (this origin only, the web page's inline script
and style by their hashes), ``frame-ancestors 'none'``, X-Frame-Options, nosniff and
no-referrer. A request a route does not take, or one a write right refuses, is refused before
its body is read.

The Ingress runs the same ``Pipeline`` as the CLI, in a worker thread per request, with its
components replaced by deployment handles (``serving.remote``). It admits at most
``limits.max_in_flight`` answers at once; one more gets 503 with Retry-After at once, so a
client never waits on a hidden queue. An admitted request always gets a reply: the Answer, a
4xx/5xx naming the problem, or 504 past ``limits.deadline_s``. Auth, those limits and the
mapping of failures to replies are ``serving.admission``'s.
"""


import asyncio
import base64
import contextlib
import hashlib
import html
import json
import logging
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import (FileResponse, HTMLResponse, JSONResponse, Response,
                               StreamingResponse)
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ConfigDict, Field
from ray import serve
from starlette.routing import Match

from finrag.models.devices import placement_gpus
from finrag.models.energy import UnavailableMeter, meter_for
from finrag.retrieval.systems.pipelines import Pipeline
from finrag.retrieval.systems.recipes import SYSTEMS, VARIANT_OF
from finrag.serving import openai_api
from finrag.serving.admission import ApiError, Gate, check_auth, first_line, incident, public
from finrag.serving.tokens import Grant
from finrag.serving.writes import CollectionChange, DocumentUpload, IndexWriter
from finrag.serving.config import AppConfig
from finrag.serving.deployments import (Embedder, Generator, Reranker, Retriever, Router, _profile,
                                       variant_dirs)
from finrag.serving.metrics import Metrics
from finrag.serving.remote import (DeadlineExceeded, RemoteEmbedder, RemoteFacts, RemoteIndex,
                            RemoteLLM, RemoteReranker, RemoteRouter, wait)

log = logging.getLogger("finrag.serve")

api = FastAPI(title="finrag", version="1",
              description="Answers questions over SEC filings with document-routed retrieval. "
                          "Every answer carries its citations, routing, tokens, LLM calls, "
                          "per-stage latency and energy (with its source).",
              # FastAPI's Swagger UI and ReDoc load their scripts from a CDN: /docs is ours
              docs_url=None, redoc_url=None)


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


def _hashes(page: str, tag: str) -> str:
    """The CSP sources of a page's inline ``tag`` blocks: the sha256 of each one's text."""
    found = re.findall(rf"<{tag}>(.*?)</{tag}>", page, re.DOTALL)
    return " ".join("'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest())
                    .decode() + "'" for text in found) or "'none'"


def _policy(page: Path) -> str:
    """The Content-Security-Policy of every reply: scripts and styles only the web page's
    own (by hash), pictures of pages as data: URLs, calls to this origin, no framing."""
    text = page.read_text(encoding="utf-8")
    return (f"default-src 'self'; script-src {_hashes(text, 'script')}; "
            f"style-src {_hashes(text, 'style')}; img-src 'self' data:; connect-src 'self'; "
            f"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


SECURITY_HEADERS = {"Content-Security-Policy": _policy(WEB_PAGE), "X-Frame-Options": "DENY",
                    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
_ANSWER_PATHS = ("/v1/answer", "/v1/chat/completions")


class _AnswerAudit:
    """The one audit line of an answer request (/v1/answer, /v1/chat/completions), streamed
    or not, whatever its end: the first ``end`` writes it, later ones do nothing. A stream cut
    short is status 499 with ``ended: client_closed``."""

    def __init__(self, gate: Gate, grant: Grant | None, path: str):
        self.gate, self.grant, self.path = gate, grant, path
        self.what: dict[str, Any] = {}
        self.streamed = False  # its stream writes the line when it ends, not the middleware
        self.written = False

    def end(self, status: int, **what) -> None:
        if not self.written:
            self.written = True
            self.gate.record(self.grant, self.path, status, **{**self.what, **what})


class _WriteSlot:
    """One of ``limits.max_writes``: taken before a write's body is read, given back when the
    request ends without a write, or when its write ends (past the deadline too)."""

    def __init__(self, ingress):
        self.ingress, self.held, self.handed = ingress, True, False
        ingress.writes += 1

    def release(self) -> None:
        if self.held:
            self.held = False
            self.ingress.writes -= 1


def _route_refusal(request: Request) -> ApiError | None:
    """404 for a path no route takes, 405 for a method its route does not take; None when a
    route takes the request."""
    matches = {route.matches(request.scope)[0] for route in request.app.router.routes}
    if Match.FULL in matches:
        return None
    if Match.PARTIAL in matches:
        allowed = ", ".join(sorted(_methods(request.app.router.routes, request.url.path)))
        return ApiError(405, "bad_request", f"{request.method} is not allowed here"
                        + (f"; allowed: {allowed}" if allowed else ""),
                        {"Allow": allowed} if allowed else None)
    return ApiError(404, "not_found", "no such endpoint; GET /docs lists them")


def _methods(routes, path: str) -> set[str]:
    """The methods the routes of ``path`` take (Serve's routes sit in an included router)."""
    found: set[str] = set()
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            found |= _methods(inner.routes, path)
        elif getattr(route, "path_regex", None) is not None and route.path_regex.match(path):
            found |= set(getattr(route, "methods", None) or ())
    return found


@api.middleware("http")
async def _limits_and_counts(request: Request, call_next):
    ingress = _ingress(request)
    endpoint = _endpoint(request.url.path)
    try:
        refused = await _admit_request(ingress, request)
        response = refused or await call_next(request)
    except asyncio.CancelledError:  # the client went away before a reply
        audit = getattr(request.state, "answer_audit", None)
        if audit is not None:
            audit.end(499, ended="client_closed")
        raise
    except Exception as exc:  # a fault of ours: in the log with an id, never in the reply
        response = _error(request, 500, "internal", incident(exc))
    finally:
        slot = getattr(request.state, "write_slot", None)
        if slot is not None and not slot.handed:
            slot.release()
    audit = getattr(request.state, "answer_audit", None)
    if audit is not None and not audit.streamed:
        audit.end(response.status_code)
    response.headers.update(SECURITY_HEADERS)
    if ingress is not None:
        ingress.metrics.requests.labels(endpoint, str(response.status_code)).inc()
    return response


async def _admit_request(ingress, request: Request) -> JSONResponse | None:
    """The Gate's checks before any handler runs (``serving.admission.Gate.check_request``),
    with ours on the headers alone, before the body is read: the route, a free write slot;
    an answer request's audit line is due from then on. The refusal, or None to go on."""
    if ingress is None:
        return None

    def before_body(grant: Grant | None) -> None:
        refusal = _route_refusal(request)
        if refusal is not None:
            raise refusal
        path = request.url.path
        if request.method != "GET" and path.startswith("/v1/documents"):
            request.state.write_slot = ingress.write_slot()
        if request.method == "POST" and path in _ANSWER_PATHS:
            request.state.answer_audit = _AnswerAudit(ingress.gate, grant, path)

    try:
        await ingress.gate.check_request(request, before_body)
    except ApiError as e:
        return _error(request, e.status, e.kind, e.message, e.headers)
    return None


_LLM_FAILED = " | router LLM failed: "


def _logged(text: str) -> str:
    """Log an error's text with a short id; the client gets only the id."""
    number = uuid.uuid4().hex[:12]
    log.error("incident %s: %s", number, text)
    return f"incident {number}; the service log has the details"


def _private_errors(answer) -> None:
    """Take the text of errors of deployment calls out of an answer (a Ray error names
    processes, nodes and addresses): the router LLM's in ``routing.detail``, the query
    expansion's in ``retrieved["expansion"]``. Each goes to the log with an id."""
    routing = answer.routing
    if routing is not None and _LLM_FAILED in (routing.detail or ""):
        head, _, error = routing.detail.partition(_LLM_FAILED)
        routing.detail = f"{head} | router LLM failed ({_logged(error)})"
    for step in answer.retrieved.get("expansion") or []:
        if isinstance(step, dict) and step.get("error"):
            step["error"] = f"the expansion call failed ({_logged(step['error'])})"


def _read(answer) -> dict[str, Any]:
    """What an answer's audit line names: the filings routed to and cited."""
    return {"routed": list(answer.routing.doc_ids if answer.routing else []),
            "cited": [c.doc_id for c in answer.citations]}


class _EndingStream(StreamingResponse):
    """A streamed answer whose end, whatever it is (sent in full, cut short, never begun),
    runs ``on_end``: Starlette never closes a stream's iterator itself."""

    def __init__(self, content, on_end, **kwargs):
        super().__init__(content, **kwargs)
        self.on_end = on_end

    async def __call__(self, scope, receive, send):
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.on_end()


def _docs_page(spec: dict) -> str:
    """/docs: the endpoints of the OpenAPI schema as plain HTML, no script."""
    rows = []
    for path, methods in sorted(spec.get("paths", {}).items()):
        for method, op in methods.items():
            rows.append(f"<tr><td>{html.escape(method.upper())}</td><td><code>"
                        f"{html.escape(path)}</code></td><td>"
                        f"{html.escape(op.get('summary') or '')}</td></tr>")
    title = html.escape(spec.get("info", {}).get("title", "API"))
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} "
            f"API</title></head><body><h1>{title} API</h1><p>The schema: "
            f"<a href=\"/openapi.json\">/openapi.json</a>. Calls under /v1 need "
            f"<code>Authorization: Bearer &lt;token&gt;</code>.</p><table><tr><th>method</th>"
            f"<th>path</th><th>what</th></tr>{''.join(rows)}</table></body></html>")


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
        self.writes = 0  # write slots taken (``_WriteSlot``)
        self._health_kept: tuple[float, str | None, int] | None = None  # when, problem, docs
        self._health_probe: asyncio.Future | None = None
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

    def _admit(self, req: AnswerRequest, grant: Grant | None, on_text=None) -> asyncio.Future:
        """Start one answer through the Gate (503 when the limit is reached), on the view of
        the pipeline the caller's grant may read. Its audit line is the request's
        (``_AnswerAudit``), written when the request ends."""
        def work():
            answer = public(self._view(grant).answer(req.question, req.system,
                                                     generate=req.generate, on_text=on_text))
            _private_errors(answer)
            return answer

        return self.gate.admit(work)

    def _view(self, grant: Grant | None):
        return self.pipeline().scoped(None if grant is None else grant.collections)

    @api.post("/v1/answer", summary="Answer a question",
              response_description="The Answer record (or an event stream when stream=true)")
    async def answer(self, req: AnswerRequest, request: Request):
        grant = self.gate.authorize(request)
        audit = self._audit(request, grant)
        audit.what["system"] = req.system
        self.gate.check_question(req.question)
        if req.stream:
            return self._stream(req, grant, audit)
        answer = await self.gate.result(self._admit(req, grant))
        audit.end(200, **_read(answer))
        return JSONResponse(answer.to_dict())

    def _audit(self, request: Request, grant: Grant | None) -> _AnswerAudit:
        """The request's audit line, due since the middleware let it through."""
        audit = getattr(request.state, "answer_audit", None)
        if audit is None:
            audit = request.state.answer_audit = _AnswerAudit(self.gate, grant, request.url.path)
        return audit

    def _started(self, req: AnswerRequest, grant: Grant | None, audit: _AnswerAudit):
        """A streamed answer admitted before its reply begins (so 503 is a status, not an
        event), and what runs at the stream's end whatever it is: (future, pieces, on_end)."""
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue = asyncio.Queue()
        future = self._admit(req, grant, on_text=lambda t: loop.call_soon_threadsafe(
            pieces.put_nowait, t))
        future.add_done_callback(lambda _: pieces.put_nowait(None))
        audit.streamed = True

        def on_end():  # the deadline passed or the client closed the stream
            self.gate.give_up(future)
            audit.end(499, ended="client_closed")

        return future, pieces, on_end

    async def _pieces(self, future: asyncio.Future, pieces: asyncio.Queue,
                      audit: _AnswerAudit, on_end):
        """An admitted answer as it is written: ("text", piece)…, then ("answer", Answer) or
        ("error", ApiError), the latter also when the deadline passes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.cfg.limits.deadline_s
        try:
            while True:
                try:
                    piece = await asyncio.wait_for(pieces.get(),
                                                   max(0.0, deadline - loop.time()))
                except asyncio.TimeoutError:
                    audit.end(504, ended="deadline")
                    yield "error", ApiError(504, "deadline", "no answer within the deadline "
                                                             f"of {self.cfg.limits.deadline_s:g} s")
                    return
                if piece is None:
                    break
                yield "text", piece
            try:
                answer = future.result()
            except Exception as exc:
                error = self.gate.failure(exc)
                audit.end(error.status, ended="error")
                yield "error", error
                return
            yield "answer", answer
            audit.end(200, **_read(answer))  # once the answer went out
        finally:
            on_end()

    def _stream(self, req: AnswerRequest, grant: Grant | None,
                audit: _AnswerAudit) -> StreamingResponse:
        def event(kind: str, data: Any) -> str:
            return f"event: {kind}\ndata: {json.dumps(data)}\n\n"

        future, pieces, on_end = self._started(req, grant, audit)

        async def events():
            async with contextlib.aclosing(self._pieces(future, pieces, audit, on_end)) as all_:
                async for kind, item in all_:
                    if kind == "text":
                        yield event("text", {"text": item})
                    elif kind == "answer":
                        yield event("answer", item.to_dict())
                    else:
                        yield event("error", {"error": item.message, "kind": item.kind})

        return _EndingStream(events(), on_end, media_type="text/event-stream")

    # -- the OpenAI surface: the same auth, checks, admission, deadline and metrics --------
    @api.post("/v1/chat/completions", summary="OpenAI-compatible chat completion",
              response_description="A chat.completion (or chunks when stream=true); the Answer "
                                   "record is in the extension field `finrag`")
    async def chat_completions(self, chat: openai_api.ChatRequest, request: Request):
        grant = self.gate.authorize(request)
        audit = self._audit(request, grant)
        system = openai_api.system_of(chat.model)
        if system is None:
            raise ApiError(404, "not_found", f"model {chat.model!r} does not exist; choose from "
                           + ", ".join(openai_api.model_id(s) for s in SYSTEMS))
        req = AnswerRequest(question=chat.question(), system=system)
        audit.what["system"] = system
        self.gate.check_question(req.question)
        completion = openai_api.Completion(chat.model)
        if not chat.stream:
            answer = await self.gate.result(self._admit(req, grant))
            audit.end(200, **_read(answer))
            return JSONResponse(completion.whole(answer))
        with_usage = bool(chat.stream_options and chat.stream_options.include_usage)
        future, queue, on_end = self._started(req, grant, audit)
        pieces = self._pieces(future, queue, audit, on_end)

        def data(body: dict) -> str:
            return f"data: {json.dumps(body)}\n\n"

        async def chunks():
            async with contextlib.aclosing(pieces):
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

        return _EndingStream(chunks(), on_end, media_type="text/event-stream")

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

    @api.get("/docs", include_in_schema=False)
    async def api_docs(self):
        return HTMLResponse(_docs_page(api.openapi()))

    @api.get(_PAGE, summary="A page of a filing with the cited passage highlighted")
    async def page(self, request: Request, doc_id: str = PathParam(..., max_length=256),
                   page: int = PathParam(..., ge=1, le=100_000),
                   chunk: int | None = Query(None, ge=0, le=2**63 - 1)):
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
                                       self.cfg.limits.max_upload_bytes,
                                       variants=variant_dirs(self.cfg))
        return self._writer

    def write_slot(self) -> _WriteSlot:
        """A write's slot, or 503 with Retry-After at once when ``limits.max_writes`` run."""
        limit = self.cfg.limits.max_writes
        if self.writes >= limit:
            wait = self.cfg.limits.retry_after_s or 30
            raise ApiError(503, "overloaded", f"overloaded: {self.writes} writes in progress "
                           f"(limit {limit}); retry after {wait} s", {"Retry-After": str(wait)})
        return _WriteSlot(self)

    async def _write(self, request: Request, grant: Grant | None, action: str, work, **what):
        """One write in a worker thread, in the slot the middleware took for it. Past
        ``limits.write_deadline_s`` the client gets 504, and the write is not stopped: it runs
        to its end, as when the client goes (a filing is committed whole or not at all, so
        it is then either in the index or not), holding its slot until then. Its audit line
        is written when it ends, with its status (and ``replied: 504`` when it ended late)."""
        slot = getattr(request.state, "write_slot", None)
        late = False
        future = asyncio.get_running_loop().run_in_executor(None, work)

        def ended(done: asyncio.Future) -> None:
            if slot is not None:
                slot.release()
            exc = asyncio.CancelledError() if done.cancelled() else done.exception()
            result = None if exc is not None else done.result()
            status = (exc.status if isinstance(exc, ApiError) else 500 if exc is not None
                      else result[0] if isinstance(result, tuple) else 200)
            self.gate.record(grant, action, status, **what, **({"replied": 504} if late else {}))

        if slot is not None:
            slot.handed = True
        future.add_done_callback(ended)
        deadline = self.cfg.limits.write_deadline_s
        try:  # shielded: neither the deadline nor a client gone cancels the write
            result = await asyncio.wait_for(asyncio.shield(future), deadline)
        except asyncio.TimeoutError:
            late = True
            raise ApiError(504, "deadline", f"the write did not end within {deadline:g} s; it "
                                            "goes on to its end, all or nothing: look for its "
                                            "result before sending it again") from None
        status, body = result if isinstance(result, tuple) else (200, result)
        return JSONResponse(body, status_code=status)

    @api.post("/v1/documents", status_code=201, summary="Upload and ingest a filing",
              response_description="The filing's doc id, collections, pages and chunks")
    async def upload(self, upload: DocumentUpload, request: Request):
        grant = self.gate.authorize(request)
        return await self._write(request, grant, "ingest",
                                 lambda: self.writer().ingest(grant, upload),
                                 doc=upload.filename, into=sorted(upload.collections))

    @api.delete(_DOCUMENT, summary="Remove a filing from the index")
    async def remove(self, doc_id: str, request: Request):
        grant = self.gate.authorize(request)
        return await self._write(request, grant, "remove",
                                 lambda: self.writer().remove(grant, doc_id), doc=doc_id)

    @api.put(_DOCUMENT + "/collections", summary="Add a filing to collections or take it out")
    async def collections(self, doc_id: str, change: CollectionChange, request: Request):
        grant = self.gate.authorize(request)
        return await self._write(
            request, grant, "collections",
            lambda: self.writer().change_collections(grant, doc_id, change),
            doc=doc_id, add=change.add, remove=change.remove)

    @api.get("/healthz", summary="Ready when every deployment answers in time; with a "
                                 "valid token also what is served, or why not ready")
    async def healthz(self, request: Request):
        detail, grant = self._health_detail(request)
        problem, docs = await self._kept_health()
        if problem:
            return _error(request, 503, "unavailable",
                          f"not ready: {problem}" if detail else "not ready",
                          {"Retry-After": "5"})
        if not detail:
            return {"status": "ok"}
        # how many documents the index holds is only for a caller that reads them all
        docs = docs if grant is None or grant.collections is None else None
        return {"status": "ok", "profile": self._pipeline.profile.name, "documents": docs,
                "answers_in_flight": self.gate.in_flight,
                "max_in_flight": self.cfg.limits.max_in_flight,
                "systems": self._systems(self._pipeline)}

    def _health_detail(self, request: Request) -> tuple[bool, Grant | None]:
        """Whether /healthz shows its caller the detail, and the caller's grant: a caller
        with a valid token (a wrong one gets 401), or anyone where no auth is configured; a
        caller without credentials gets only ok or not ready."""
        proxy = self.cfg.auth.proxy
        if "authorization" not in request.headers and not (
                proxy is not None and proxy.user_header.lower() in request.headers) \
                and not self.gate._open:
            return False, None
        return True, self.gate.authorize(request)

    async def _kept_health(self) -> tuple[str | None, int]:
        """``_health``, its probe of the deployments reused for ``limits.health_cache_s``;
        one probe runs at a time, and callers meanwhile wait for its result."""
        if not self._warm():
            return self._build_problem or "starting (connecting to the deployments)", 0
        kept = self._health_kept
        if kept is not None and time.monotonic() - kept[0] < self.cfg.limits.health_cache_s:
            return kept[1], kept[2]
        if self._health_probe is None or self._health_probe.done():
            self._health_probe = asyncio.ensure_future(self._probe_and_keep())
        return await asyncio.shield(self._health_probe)

    async def _probe_and_keep(self) -> tuple[str | None, int]:
        problem, docs = await self._health()
        self._health_kept = (time.monotonic(), problem, docs)
        return problem, docs

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
    """The address Serve's proxies listen on, when Serve is running (None: no Ray, nothing
    served yet). One that cannot be read is not taken for loopback: a service whose address
    is unknown needs a token as one listening beyond this machine does."""
    import ray

    if not ray.is_initialized():
        return None
    try:
        from ray.serve.context import _get_global_client

        return _get_global_client().http_config.host
    except Exception:
        return "an address Serve did not say"


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
    # room above the admission limit for /healthz, /metrics, refused bodies and the 503s
    # themselves; past it Serve's own bounded queue answers 503 rather than letting requests
    # wait unseen. Serve's router counts a replica's requests from a report that lags a burst,
    # so the room is twice what a burst of refusals (the hardening probes send 30) needs.
    room = cfg.limits.max_in_flight + 32
    ingress = {"max_ongoing_requests": room, "max_queued_requests": room} | cfg.options("Ingress")
    return Ingress.options(**ingress).bind(conf, router, embedder, retriever, light, large,
                                           generator)
