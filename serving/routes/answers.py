"""``POST /v1/answer``: a question through the pipeline the caller may read, admitted by the
Gate, whole or as server-sent events (``text``… then ``answer``)."""

import asyncio
import contextlib
import json
from typing import Any, AsyncIterator, Callable

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from finrag.retrieval.answer import Answer
from finrag.retrieval.systems.pipelines import Pipeline
from finrag.serving.admission import ApiError, public
from finrag.serving.routes.replies import (AnswerAudit, AnswerRequest, EndingStream,
                                           private_errors, what_was_read)
from finrag.serving.tokens import Grant

router = APIRouter()

Started = tuple[asyncio.Future, asyncio.Queue, Callable[[], None]]


class AnswerRoutes:
    """The answer path of the Ingress; ``pipeline()`` is the Ingress's."""

    @router.post("/v1/answer", summary="Answer a question", response_model=None,
                 response_description="The Answer record (or an event stream when stream=true)")
    async def answer(self, req: AnswerRequest, request: Request) -> JSONResponse | StreamingResponse:
        grant = self.gate.authorize(request)
        audit = self._audit(request, grant)
        audit.what["system"] = req.system
        self.gate.check_question(req.question)
        if req.stream:
            return self._stream(req, grant, audit)
        answer = await self.gate.result(self._admit(req, grant))
        audit.end(200, **what_was_read(answer))
        return JSONResponse(answer.to_dict())

    def _view(self, grant: Grant | None) -> Pipeline:
        """The pipeline as the caller's grant may read it."""
        return self.pipeline().scoped(None if grant is None else grant.collections)

    def _admit(self, req: AnswerRequest, grant: Grant | None,
               on_text: Callable[[str], None] | None = None) -> asyncio.Future:
        """Start one answer through the Gate (503 when the limit is reached), on the view of
        the pipeline the caller's grant may read. Its audit line is the request's
        (``AnswerAudit``), written when the request ends."""
        def work() -> Answer:
            answer = public(self._view(grant).answer(req.question, req.system,
                                                     generate=req.generate, on_text=on_text))
            private_errors(answer)
            return answer

        return self.gate.admit(work)

    def _audit(self, request: Request, grant: Grant | None) -> AnswerAudit:
        """The request's audit line, due since the middleware let it through."""
        audit = getattr(request.state, "answer_audit", None)
        if audit is None:
            audit = request.state.answer_audit = AnswerAudit(self.gate, grant, request.url.path)
        return audit

    def _started(self, req: AnswerRequest, grant: Grant | None, audit: AnswerAudit) -> Started:
        """A streamed answer admitted before its reply begins (so 503 is a status, not an
        event), and what runs at the stream's end whatever it is: (future, pieces, on_end)."""
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue = asyncio.Queue()
        future = self._admit(req, grant, on_text=lambda t: loop.call_soon_threadsafe(
            pieces.put_nowait, t))
        future.add_done_callback(lambda _: pieces.put_nowait(None))
        audit.streamed = True

        def on_end() -> None:  # the deadline passed or the client closed the stream
            self.gate.give_up(future)
            audit.end(499, ended="client_closed")

        return future, pieces, on_end

    async def _pieces(self, future: asyncio.Future, pieces: asyncio.Queue,
                      audit: AnswerAudit, on_end: Callable[[], None]
                      ) -> AsyncIterator[tuple[str, Any]]:
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
            audit.end(200, **what_was_read(answer))  # once the answer went out
        finally:
            on_end()

    def _stream(self, req: AnswerRequest, grant: Grant | None,
                audit: AnswerAudit) -> StreamingResponse:
        def event(kind: str, data: Any) -> str:
            return f"event: {kind}\ndata: {json.dumps(data)}\n\n"

        future, pieces, on_end = self._started(req, grant, audit)

        async def events() -> AsyncIterator[str]:
            async with contextlib.aclosing(self._pieces(future, pieces, audit, on_end)) as all_:
                async for kind, item in all_:
                    if kind == "text":
                        yield event("text", {"text": item})
                    elif kind == "answer":
                        yield event("answer", item.to_dict())
                    else:
                        yield event("error", {"error": item.message, "kind": item.kind})

        return EndingStream(events(), on_end, media_type="text/event-stream")
