"""What every route shares: the answer request, error replies, an answer request's audit line,
a stream that knows when it ends, and what an answer may show of a deployment's errors."""

import logging
import uuid
from typing import Any, Literal

from fastapi import Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from finrag.retrieval.answer import Answer
from finrag.retrieval.systems.recipes import SYSTEMS
from finrag.serving import openai_api
from finrag.serving.admission import Gate
from finrag.serving.tokens import Grant

log = logging.getLogger("finrag.serve")


class AnswerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(..., description="The question, in plain words")
    system: Literal[SYSTEMS] = Field("hdrr", description="Which system answers")
    generate: bool = Field(True, description="False: stop after retrieval (no answer text)")
    stream: bool = Field(False, description="Server-sent events: the text as it is written, "
                                            "then the Answer record")


def ingress_of(request: Request) -> Any:
    """The Ingress serving ``request``. Serve freezes a copy of the FastAPI app when the
    Ingress class is decorated, so the app a request reaches is not the module's ``api`` the
    Ingress's constructor marks: in a replica the Ingress is Serve's servable object."""
    ingress = getattr(request.app.state, "ingress", None)
    if ingress is None:
        try:
            from ray import serve

            ingress = serve.get_replica_context().servable_object
        except Exception:  # not in a Serve replica (the app called in process)
            return None
    return ingress


def error_reply(request: Request, status: int, kind: str, message: str,
                headers: dict | None = None) -> JSONResponse:
    ingress = ingress_of(request)
    if ingress is not None:
        ingress.metrics.errors.labels(kind).inc()
    # a message may quote the request (a field name): short, and always encodable
    message = message[:500].encode("utf-8", "backslashreplace").decode("utf-8")
    if request.url.path in openai_api.PATHS:  # OpenAI's shape, and 400 where we say 422
        return JSONResponse(openai_api.error_body(kind, message),
                            status_code=400 if status == 422 else status, headers=headers)
    return JSONResponse({"error": message, "kind": kind}, status_code=status, headers=headers)


class AnswerAudit:
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


class EndingStream(StreamingResponse):
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


_LLM_FAILED = " | router LLM failed: "


def logged(text: str) -> str:
    """Log an error's text with a short id; the client gets only the id."""
    number = uuid.uuid4().hex[:12]
    log.error("incident %s: %s", number, text)
    return f"incident {number}; the service log has the details"


def private_errors(answer: Answer) -> None:
    """Take the text of errors of deployment calls out of an answer (a Ray error names
    processes, nodes and addresses): the router LLM's in ``routing.detail`` goes to the log
    with an id."""
    routing = answer.routing
    if routing is not None and _LLM_FAILED in (routing.detail or ""):
        head, _, error = routing.detail.partition(_LLM_FAILED)
        routing.detail = f"{head} | router LLM failed ({logged(error)})"


def what_was_read(answer: Answer) -> dict[str, Any]:
    """What an answer's audit line names: the filings routed to and cited."""
    return {"routed": list(answer.routing.doc_ids if answer.routing else []),
            "cited": [c.doc_id for c in answer.citations]}
