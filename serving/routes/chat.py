"""The OpenAI surface (``POST /v1/chat/completions``, ``GET /v1/models``): the systems as
models, with the same auth, checks, admission, deadline and metrics as ``/v1/answer``; the
shapes are ``serving.openai_api``'s."""

import contextlib
import json
from typing import Any, AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from finrag.retrieval.systems.pipelines import Pipeline
from finrag.retrieval.systems.recipes import SYSTEMS, VARIANT_OF
from finrag.serving import openai_api
from finrag.serving.admission import ApiError
from finrag.serving.routes.replies import AnswerRequest, EndingStream, what_was_read

router = APIRouter()


class ChatRoutes:
    @router.post("/v1/chat/completions", summary="OpenAI-compatible chat completion",
                 response_model=None,
                 response_description="A chat.completion (or chunks when stream=true); the "
                                      "Answer record is in the extension field `finrag`")
    async def chat_completions(self, chat: openai_api.ChatRequest,
                               request: Request) -> JSONResponse | StreamingResponse:
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
            audit.end(200, **what_was_read(answer))
            return JSONResponse(completion.whole(answer))
        with_usage = bool(chat.stream_options and chat.stream_options.include_usage)
        future, queue, on_end = self._started(req, grant, audit)
        pieces = self._pieces(future, queue, audit, on_end)

        def data(body: dict) -> str:
            return f"data: {json.dumps(body)}\n\n"

        async def chunks() -> AsyncIterator[str]:
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

        return EndingStream(chunks(), on_end, media_type="text/event-stream")

    @router.get("/v1/models", summary="The systems, as OpenAI models", response_model=None)
    async def models(self, request: Request) -> dict[str, Any]:
        self.gate.authorize(request)
        if not self._warm():  # never wait on the build: say so, as /healthz does
            raise ApiError(503, "overloaded", "starting: the models are loading; retry shortly",
                           {"Retry-After": str(self.gate.retry_after())})
        return openai_api.models(self._systems(self._pipeline))

    @staticmethod
    def _systems(pipe: Pipeline) -> list[str]:
        """The systems this deployment can answer with (index variants built or not)."""
        return [s for s in SYSTEMS if s not in VARIANT_OF or VARIANT_OF[s] in pipe.variants]
