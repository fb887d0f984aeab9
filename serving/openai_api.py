"""The OpenAI chat-completions surface over finrag's systems.

A client that speaks OpenAI (the ``openai`` SDK, chat UIs, agent frameworks given a base URL)
asks a question as the last user message; ``model`` names the system (``finrag-hdrr``,
``finrag-cbr``, …). The service is stateless: earlier turns and system messages are not read.
Sampling settings (temperature, top_p, max_tokens, …) are accepted and ignored: the profile
fixes them, so that an answer and its measured cost stay comparable across clients.

``usage`` counts the tokens of every LLM call the answer made (router, generator, verifier…),
prompt and completion apart, as OpenAI bills them; an answer from XBRL facts made no call and
counts 0. The whole Answer record rides along in the extension field ``finrag``.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from finrag.retrieval.systems.recipes import SYSTEMS

PREFIX = "finrag-"
CREATED = 1_767_225_600  # 2026-01-01: the model list needs a fixed creation time


def model_id(system: str) -> str:
    return PREFIX + system.replace("_", "-")


def system_of(model: str) -> str | None:
    """The system a model id names, or None."""
    if not model.startswith(PREFIX):
        return None
    system = model[len(PREFIX):].replace("-", "_")
    return system if system in SYSTEMS else None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):  # content parts: only text parts carry a question
            return "\n".join(str(p.get("text", "")) for p in self.content
                             if p.get("type") == "text")
        return self.content or ""


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")

    include_usage: bool = False


class ChatRequest(BaseModel):
    # unknown OpenAI fields (temperature, user, seed, …) are ignored, as clients send many
    model_config = ConfigDict(extra="ignore")

    model: str = Field(..., description="finrag-<system>: see GET /v1/models")
    messages: list[ChatMessage] = Field(..., min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(1, ge=1, le=1, description="one answer per request")

    def question(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user":
                return message.text()
        return ""


def models(systems: list[str]) -> dict[str, Any]:
    return {"object": "list",
            "data": [{"id": model_id(s), "object": "model", "created": CREATED,
                      "owned_by": "finrag"} for s in systems]}


def usage(answer) -> dict[str, int]:
    prompt = sum(c.prompt_tokens for c in answer.calls)
    completion = sum(c.completion_tokens for c in answer.calls)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


class Completion:
    """One chat completion's id and the shape of what is sent for it, whole or in chunks."""

    def __init__(self, model: str):
        self.id = "chatcmpl-" + uuid.uuid4().hex
        self.model = model
        self.created = int(time.time())

    def whole(self, answer) -> dict[str, Any]:
        return {"id": self.id, "object": "chat.completion", "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                             "message": {"role": "assistant", "content": answer.answer}}],
                "usage": usage(answer), "finrag": answer.to_dict()}

    def chunk(self, delta: dict[str, Any], finish: str | None = None,
              **extra: Any) -> dict[str, Any]:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                             "logprobs": None}]} | extra

    def usage_chunk(self, answer) -> dict[str, Any]:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model, "choices": [], "usage": usage(answer)}


# finrag's error kinds as OpenAI error types (the SDK reads error.message, .type and .code)
_TYPES = {"unauthorized": "authentication_error", "overloaded": "server_error",
          "deadline": "timeout", "internal": "server_error", "too_large": "invalid_request_error",
          "bad_request": "invalid_request_error", "not_found": "invalid_request_error"}


def error_body(kind: str, message: str, *, code: str | None = None,
               param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": _TYPES.get(kind, "invalid_request_error"),
                      "param": param, "code": code or kind}}


PATHS = ("/v1/chat/completions", "/v1/models")
