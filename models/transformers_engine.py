"""The CPU LLM engine: a transformers causal LM behind the vLLM-shaped contract in models.llm.

Prompts are batched with left padding; token counts come from the ids the model actually read
and wrote. Structured output masks the logits with an Outlines JSON-schema processor, so every
token keeps the text inside the schema's grammar; the result is then validated by pydantic.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

from pydantic import BaseModel

from finrag.models.llm import Completion, LLMEngine, SamplingParams, T, generate_json_with_retries

_BATCH = 8  # prompts per forward batch: bounds padding waste and memory on CPU
_HELD = 24  # characters a streamed answer holds back at most, waiting for a space


class TransformersEngine(LLMEngine):
    def __init__(self, path: str | Path, *, model_id: str | None = None, threads: int | None = None,
                 max_input_tokens: int = 8192, device: str = "cpu"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        if threads:
            torch.set_num_threads(threads)
        self.model_id = model_id or str(path)
        self.path = Path(path)
        self.max_input_tokens = max_input_tokens
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.device = device
        # half precision on CUDA (bf16 where the GPU has it); float32 on the CPU
        dtype = torch.float32
        if device.startswith("cuda"):
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        self.model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True,
                                                          dtype=dtype).to(device)
        self.model.eval()
        self._outlines = None
        self._json_processors: dict[str, object] = {}

    # prompts ------------------------------------------------------------------------
    def render(self, prompt: str | list[dict]) -> str:
        """Chat messages go through the model's chat template; strings are used as they are."""
        if isinstance(prompt, str):
            return prompt
        return self.tokenizer.apply_chat_template(prompt, tokenize=False,
                                                  add_generation_prompt=True)

    def count_tokens(self, text: str) -> int:
        return len(self.token_ids(text))

    def token_ids(self, text: str) -> list[int]:
        """Tokens of ``text`` alone (no special tokens)."""
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def prompt_token_ids(self, prompt: str | list[dict]) -> list[int]:
        """The token ids the model reads for ``prompt`` (chat lists via the chat template)."""
        return self.token_ids(self.render(prompt))

    # scoring ------------------------------------------------------------------------
    def next_token_logprobs(self, prompts: list[str | list[dict]], token_ids: list[int], *,
                            batch_size: int = 4) -> list[list[float]]:
        """Per prompt, the log-probability of each of ``token_ids`` as the next token; one
        forward pass, nothing generated. Prompts of similar length share a batch, left-padded
        with explicit position ids, so a batch gives what the prompts give one by one."""
        import torch

        encoded = [self.prompt_token_ids(p) for p in prompts]
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        out: list[list[float]] = [[] for _ in encoded]
        pad = self.tokenizer.pad_token_id or 0  # masked out, so any id will do
        wanted = torch.tensor(token_ids)
        for start in range(0, len(order), batch_size):
            batch = [encoded[i] for i in order[start:start + batch_size]]
            width = max(len(p) for p in batch)
            ids = torch.tensor([[pad] * (width - len(p)) + p for p in batch])
            mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in batch])
            positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
            with torch.inference_mode():
                logits = self.model(input_ids=ids.to(self.device),
                                    attention_mask=mask.to(self.device),
                                    position_ids=positions.to(self.device), logits_to_keep=1,
                                    use_cache=False).logits[:, -1, :].float()
            logprobs = torch.log_softmax(logits, dim=-1)[:, wanted.to(self.device)].cpu()
            for i, row in zip(order[start:start + batch_size], logprobs.tolist()):
                out[i] = row
        return out

    # generation ---------------------------------------------------------------------
    def _streamer(self, on_text: Callable[[str], None] | None):
        if on_text is None:
            return None
        from transformers import TextStreamer

        class Pieces(TextStreamer):  # decoded text pieces to a callback, not to stdout
            def put(self, value) -> None:
                """TextStreamer's rule (text up to the last space, a word may still grow; all
                of it at a newline or a CJK character), but a run of over _HELD characters
                without a space (a URL, a rule of dashes) is sent too, all but an unfinished
                UTF-8 character, instead of only at the end."""
                if self.skip_prompt and self.next_tokens_are_prompt:
                    self.next_tokens_are_prompt = False
                    return
                self.token_cache.extend(value.reshape(-1).tolist())
                text = self.tokenizer.decode(self.token_cache, **self.decode_kwargs)
                if text.endswith("\n"):
                    piece, self.token_cache, self.print_len = text[self.print_len:], [], 0
                else:
                    cut = max(text.rfind(" ") + 1, self.print_len)
                    if text and self._is_chinese_char(ord(text[-1])):
                        cut = len(text)
                    elif len(text) - cut > _HELD:
                        cut = max(len(text.rstrip("\ufffd")), self.print_len)
                    piece, self.print_len = text[self.print_len:cut], cut
                self.on_finalized_text(piece)

            def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
                if text:
                    on_text(text)

        return Pieces(self.tokenizer, skip_prompt=True, skip_special_tokens=True)

    def _generate(self, texts: list[str], params: SamplingParams, processor=None, streamer=None):
        """Completions of ``texts`` as one batch: (text, prompt tokens, completion tokens,
        finish reason, seconds to the first token or None for a batch of several)."""
        import torch
        from transformers import LogitsProcessorList
        from transformers.generation.streamers import BaseStreamer

        class FirstToken(BaseStreamer):  # the time of the first token; streams on if asked
            def __init__(self):
                self.puts, self.at, self.t0 = 0, None, time.perf_counter()

            def put(self, value):
                self.puts += 1  # the first put is the prompt itself
                if self.puts == 2:
                    self.at = time.perf_counter() - self.t0
                if streamer is not None:
                    streamer.put(value)

            def end(self):
                if streamer is not None:
                    streamer.end()

        enc = self.tokenizer(texts, return_tensors="pt", padding=True,
                             add_special_tokens=False).to(self.device)
        n_prompt = enc["attention_mask"].sum(dim=1).tolist()
        if max(n_prompt) > self.max_input_tokens:
            raise ValueError(f"prompt of {max(n_prompt)} tokens exceeds the engine's limit of "
                             f"{self.max_input_tokens}")
        kwargs = dict(max_new_tokens=params.max_tokens, pad_token_id=self.tokenizer.pad_token_id)
        if params.temperature > 0:
            kwargs.update(do_sample=True, temperature=params.temperature, top_p=params.top_p)
            if params.seed is not None:
                torch.manual_seed(params.seed)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if params.stop:
            kwargs.update(stop_strings=params.stop, tokenizer=self.tokenizer)
        if processor is not None:
            processor.reset()
            kwargs["logits_processor"] = LogitsProcessorList([processor])
        timer = FirstToken() if len(texts) == 1 else None  # streaming takes one sequence
        if timer is not None:
            kwargs["streamer"] = timer
        with torch.inference_mode():
            out = self.model.generate(**enc, **kwargs)
        new = out[:, enc["input_ids"].shape[1]:]
        results = []
        eos = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        for row, prompt_len in zip(new.tolist(), n_prompt):
            ids = list(row)
            while ids and ids[-1] == self.tokenizer.pad_token_id:  # padding after an early stop
                ids.pop()
            finished = len(ids) < params.max_tokens or (ids and ids[-1] in eos)
            if ids and ids[-1] in eos:
                ids_text = ids[:-1]
            else:
                ids_text = ids
            text = self.tokenizer.decode(ids_text, skip_special_tokens=True)
            for s in params.stop:
                cut = text.find(s)
                if cut >= 0:
                    text, finished = text[:cut], True
            results.append((text, prompt_len, len(ids), "stop" if finished else "length",
                            timer.at if timer is not None else None))
        return results

    def generate(self, prompts: list[str | list[dict]], params: SamplingParams | None = None,
                 *, on_text: Callable[[str], None] | None = None, _processor=None
                 ) -> list[Completion]:
        params = params or SamplingParams()
        texts = [self.render(p) for p in prompts]
        if on_text is not None and len(texts) != 1:
            raise ValueError("on_text streams one prompt at a time")
        completions: list[Completion | None] = [None] * len(texts)
        for batch in self._batches(texts):
            t0 = time.perf_counter()
            rows = self._generate([texts[i] for i in batch], params, _processor,
                                  self._streamer(on_text))
            # one forward batch serves all its prompts: each carries the batch's wall time
            latency = time.perf_counter() - t0
            for i, (text, p, c, reason, first) in zip(batch, rows):
                completions[i] = Completion(text, p, c, latency, reason, first_token_s=first)
        return completions  # type: ignore[return-value]

    def _batches(self, texts: list[str]) -> list[list[int]]:
        """Prompt indices grouped for forward batches of prompts of about the same length.
        On CPU the prefill is compute-bound and a batch is padded to its longest prompt, so
        mixing lengths costs more than batching saves (4 RAG prompts of 759-1,288 tokens: 31 s
        padded together vs 21 s one by one); prompts within 10% of each other batch well. A
        batch also holds at most ``max_input_tokens`` padded tokens, the most one prompt may
        have: the attention of eight whole-document parts at once would not fit in memory."""
        lengths = [len(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: lengths[i])
        batches: list[list[int]] = []
        for i in order:
            if (batches and len(batches[-1]) < _BATCH
                    and lengths[i] <= 1.1 * lengths[batches[-1][0]] + 8
                    and (len(batches[-1]) + 1) * lengths[i] <= self.max_input_tokens):
                batches[-1].append(i)
            else:
                batches.append([i])
        return batches

    def _json_processor(self, schema: type[BaseModel]):
        schema_json = json.dumps(schema.model_json_schema())  # property order = output order
        key = json.dumps(schema.model_json_schema(), sort_keys=True)
        if key not in self._json_processors:
            import outlines
            from outlines.backends import get_json_schema_logits_processor

            if self._outlines is None:
                self._outlines = outlines.from_transformers(self.model, self.tokenizer)
            # one optional space between JSON tokens keeps small models from looping on
            # whitespace, which the default pattern allows without bound
            self._json_processors[key] = get_json_schema_logits_processor(
                None, self._outlines, schema_json, whitespace_pattern=r"[ ]?")
        return self._json_processors[key]

    def generate_json(self, prompts: list[str | list[dict]], schema: type[T],
                      params: SamplingParams | None = None, *, attempts: int = 3
                      ) -> list[tuple[T, Completion]]:
        """Each prompt's completion parsed into ``schema``, one prompt at a time (the Outlines
        processor's state is per sequence batch); retries as ``generate_json_with_retries``."""
        processor = self._json_processor(schema)
        return generate_json_with_retries(
            lambda prompt, run: self.generate([prompt], run, _processor=processor)[0],
            prompts, schema, params, attempts=attempts)
