"""The native CPU LLM engine: llama.cpp (through llama-cpp-python) behind models.llm's contract.

It runs the packaged GGUF file as it is, with llama.cpp's quantized matrix kernels: no
dequantized float32 copy. One context holds the KV cache; a prompt that begins like the one
before it (the same chat template and instructions, the same document) reuses the cached
prefix and decodes only the rest. Structured output uses llama.cpp's own JSON-schema grammar
(or Outlines' processor on llama.cpp, measured against it in benchmarks/results/router_json_*).

llama-cpp-python is built from source by finrag's install (``pip install '.[llamacpp]'``, see
the Makefile); where the build failed, ``LlamaCppUnavailable`` says so and the transformers
engine stays selectable.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Callable

from pydantic import BaseModel

from finrag.models.llm import (Completion, LLMEngine, SamplingParams, T, generate_json_with_retries,
                        generation_schema, schema_nodes)


class LlamaCppUnavailable(RuntimeError):
    """llama-cpp-python is not importable in this Python (not installed, or its build failed)."""


def available_cores() -> int:
    """The cores this process may use: a Ray actor's or a container's share, not the host's.
    OMP_NUM_THREADS (which Ray sets to an actor's num_cpus) wins over the affinity mask."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def import_llama_cpp():
    try:
        import llama_cpp
    except (ImportError, OSError) as e:  # OSError: the shared library did not load
        raise LlamaCppUnavailable(
            "the llamacpp engine needs llama-cpp-python, built from source by finrag's install "
            "(`make install`, or `pip install '.[llamacpp]'` with a C compiler and CMake); "
            f"importing it failed: {e}. A profile with engine: transformers (e.g. --profile cpu) "
            "needs none of it") from e
    return llama_cpp


def trained_context(path: Path) -> int:
    """The context length a GGUF's model was trained with (its metadata), read without
    loading the weights."""
    from gguf import GGUFReader

    reader = GGUFReader(str(path))
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    field = reader.fields.get(f"{arch}.context_length")
    return int(field.parts[-1][0]) if field is not None else 1 << 30


def json_schema_order(schema: dict) -> list[str]:
    """Property names in the order pydantic declares them, nested models included: llama.cpp's
    schema-to-grammar converter otherwise sorts properties by name, and the order a model
    writes fields in (reasons before verdicts, say) changes what it writes."""
    names: list[str] = []
    for node in schema_nodes(schema):
        properties = node.get("properties")
        if isinstance(properties, dict):
            names += [name for name in properties if name not in names]
    return names


class _Raising:
    """A logits processor that records its exception for the caller to raise: called from
    llama.cpp's C sampler, an exception would otherwise be printed and dropped, and the
    token sampled with no constraint at all."""

    def __init__(self, processor, failed: list[BaseException]):
        self.processor, self.failed = processor, failed

    def __call__(self, input_ids, logits):
        if self.failed:
            return logits
        try:
            return self.processor(input_ids, logits)
        except BaseException as e:  # noqa: BLE001 - re-raised by LlamaCppEngine._complete
            self.failed.append(e)
            return logits


class LlamaCppEngine(LLMEngine):
    def __init__(self, path: str | Path, *, model_id: str | None = None, threads: int | None = None,
                 max_input_tokens: int = 8192, context_tokens: int | None = None,
                 flash_attn: bool = True, batch_tokens: int = 512,
                 json_backend: str = "grammar", prefix_cache: bool = True, device: str = "cpu"):
        if device != "cpu":
            raise ValueError(f"the llamacpp engine runs on the CPU, not {device!r}")
        if json_backend not in ("grammar", "outlines"):
            raise ValueError(f"json_backend is grammar or outlines, not {json_backend!r}")
        self.json_backend = json_backend
        self.prefix_cache = prefix_cache  # False: every prompt read from its first token
        llama_cpp = import_llama_cpp()
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"GGUF file missing: {self.path}")
        self.model_id = model_id or str(path)
        # never past the positions the model was trained on
        n_ctx = min(context_tokens or max_input_tokens + 1024, trained_context(self.path))
        self.max_input_tokens = min(max_input_tokens, n_ctx)
        self.threads = threads or available_cores()
        self.llm = llama_cpp.Llama(
            model_path=str(self.path), n_ctx=n_ctx,
            n_threads=self.threads, n_threads_batch=self.threads, n_batch=batch_tokens,
            flash_attn=flash_attn, verbose=False)
        self._vocab = self.llm._model.vocab
        self._llama_cpp = llama_cpp
        self._lock = threading.Lock()  # one context: one sequence at a time
        self._grammars: dict[str, object] = {}
        self._chat = self._chat_formatter()

    def _chat_formatter(self):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            return None

        def token_text(key: str) -> str:
            token = int(self.llm.metadata.get(key, -1))
            return self.llm.detokenize([token], special=True).decode("utf-8", "ignore") \
                if token >= 0 else ""

        return Jinja2ChatFormatter(template, eos_token=token_text("tokenizer.ggml.eos_token_id"),
                                   bos_token=token_text("tokenizer.ggml.bos_token_id"))

    # prompts ------------------------------------------------------------------------
    def render(self, prompt: str | list[dict]) -> str:
        """Chat messages go through the GGUF's own chat template; strings are used as they are."""
        if isinstance(prompt, str):
            return prompt
        if self._chat is None:
            raise ValueError(f"{self.path.name} has no chat template; pass a plain prompt")
        return self._chat(messages=prompt).prompt

    def token_ids(self, text: str) -> list[int]:
        """Tokens of ``text`` alone (no BOS), special tokens such as <|im_start|> read as such."""
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def count_tokens(self, text: str) -> int:
        return len(self.token_ids(text))

    def prompt_token_ids(self, prompt: str | list[dict]) -> list[int]:
        return self.token_ids(self.render(prompt))

    # scoring ------------------------------------------------------------------------
    def next_token_logprobs(self, prompts: list[str | list[dict]], token_ids: list[int], *,
                            batch_size: int = 1) -> list[list[float]]:
        """Per prompt, the log-probability of each of ``token_ids`` as the next token; each
        prompt is read whole from a cleared context (no prefix reuse), nothing generated."""
        import numpy as np

        out = []
        for prompt in prompts:
            ids = self.prompt_token_ids(prompt)
            self._check_length(len(ids))
            with self._lock:
                self.llm.reset()
                self.llm.eval(ids)
                logits = np.ctypeslib.as_array(
                    self._llama_cpp.llama_get_logits_ith(self.llm.ctx, -1),
                    shape=(self.llm.n_vocab(),)).astype(np.float64)
            top = logits.max()
            logz = top + np.log(np.exp(logits - top).sum())
            out.append([float(logits[t] - logz) for t in token_ids])
        return out

    # generation ---------------------------------------------------------------------
    def _check_length(self, n_prompt: int) -> None:
        if n_prompt > self.max_input_tokens:
            raise ValueError(f"prompt of {n_prompt} tokens exceeds the engine's limit of "
                             f"{self.max_input_tokens}")

    def _complete(self, prompt: str | list[dict], params: SamplingParams, *, grammar=None,
                  processor=None, on_text: Callable[[str], None] | None = None) -> Completion:
        """One prompt, token by token: the hot path."""
        ids = self.prompt_token_ids(prompt)
        self._check_length(len(ids))
        max_tokens = min(params.max_tokens, self.llm.n_ctx() - len(ids))
        hold = max((len(s) for s in params.stop), default=1) - 1  # a stop string may be forming
        out: list[int] = []
        raw = bytearray()  # the answer's bytes: a multi-byte character may span two tokens
        text, shown, finish, first = "", 0, "length", None
        with self._lock:
            t0 = time.perf_counter()
            if params.seed is not None:
                self.llm.set_seed(params.seed)
            failed: list[BaseException] = []
            if processor is not None:
                processor.reset()
                processor = _Raising(processor, failed)
            if not self.prefix_cache:
                self.llm.reset()
            sampled = params.temperature > 0
            tokens = self.llm.generate(
                ids, temp=params.temperature, top_p=params.top_p if sampled else 1.0,
                top_k=0, min_p=0.0, typical_p=1.0, repeat_penalty=1.0, grammar=grammar,
                logits_processor=None if processor is None else [processor])
            for token in tokens:
                first = first or time.perf_counter() - t0
                if self._llama_cpp.llama_vocab_is_eog(self._vocab, token):
                    finish = "stop"
                    break
                out.append(token)
                raw += self.llm.detokenize([token], special=False)
                text = raw.decode("utf-8", "ignore")  # an unfinished character waits
                cut = min((i for i in (text.find(s) for s in params.stop) if i >= 0), default=-1)
                if cut >= 0:
                    text, finish = text[:cut], "stop"
                    break
                if on_text is not None and len(text) - hold > shown:
                    on_text(text[shown:len(text) - hold])
                    shown = len(text) - hold
                if len(out) >= max_tokens:
                    break
            latency = time.perf_counter() - t0
        if failed:  # llama.cpp calls the processor from C, which drops a Python exception
            raise RuntimeError(f"the JSON logits processor failed: {failed[0]!r}") from failed[0]
        if on_text is not None and len(text) > shown:
            on_text(text[shown:])
        return Completion(text, len(ids), len(out), latency, finish, first_token_s=first)

    def generate(self, prompts: list[str | list[dict]], params: SamplingParams | None = None,
                 *, on_text: Callable[[str], None] | None = None) -> list[Completion]:
        """Prompts one after another, each with its own latency: on a CPU a prompt's prefill
        already uses every core, and the next prompt reuses whatever prefix it shares."""
        params = params or SamplingParams()
        if on_text is not None and len(prompts) != 1:
            raise ValueError("on_text streams one prompt at a time")
        return [self._complete(p, params, on_text=on_text) for p in prompts]

    def _constraint(self, schema: type[BaseModel]) -> dict:
        """``_complete``'s keyword for ``schema``: llama.cpp's own GBNF grammar compiled from
        the JSON schema (every field, in pydantic's order), or Outlines' JSON-schema logits
        processor on its llama.cpp backend (``json_backend="outlines"``), one optional space
        between tokens as on the transformers engine."""
        spec = generation_schema(schema)
        key = json.dumps(spec, sort_keys=True)
        if key not in self._grammars:
            if self.json_backend == "outlines":
                import outlines
                from outlines.backends import get_json_schema_logits_processor

                self._grammars[key] = {"processor": get_json_schema_logits_processor(
                    None, outlines.from_llamacpp(self.llm), json.dumps(spec),
                    whitespace_pattern=r"[ ]?")}
            else:
                from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

                gbnf = json_schema_to_gbnf(json.dumps(spec), prop_order=json_schema_order(spec))
                self._grammars[key] = {"grammar": LlamaGrammar.from_string(gbnf, verbose=False)}
        return self._grammars[key]

    def generate_json(self, prompts: list[str | list[dict]], schema: type[T],
                      params: SamplingParams | None = None, *, attempts: int = 3
                      ) -> list[tuple[T, Completion]]:
        """Each prompt's completion under the JSON constraint for ``schema``, then validated
        by pydantic; retries as ``generate_json_with_retries``."""
        constraint = self._constraint(schema)
        return generate_json_with_retries(
            lambda prompt, run: self._complete(prompt, run, **constraint),
            prompts, schema, params, attempts=attempts)
