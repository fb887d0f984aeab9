"""GPU smoke run: every role of the pipeline on CUDA with tiny random models built on the spot.

    python -m finrag.benchmarks.gpu_smoke                  # a GPU host: CUDA device 0
    python -m finrag.benchmarks.gpu_smoke --device cpu     # dry run of the same code (CI)

It needs what a bare GPU host with torch and transformers has: no vLLM, no faiss-gpu, no
network and no weights. The models are random (a 2-layer Llama with a BPE tokenizer trained
here, a 2-layer BERT encoder and cross-encoder on the same tokenizer), so the answers are noise:
the run checks that every role places, runs and is measured on the device, and reports per
query each role's latency, NVML joules of exactly that device (or "unavailable"), and the
generator's tokens/s alone and batched. Finishes in well under 10 minutes (about a minute on
one GPU). Writes ``benchmarks/results/gpu_smoke_<device>/`` (report.md, smoke.json, a PNG
when matplotlib is there). Without CUDA and without ``--device cpu`` it exits with status 2
and says why.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROLES = ("embed", "search", "light_rerank", "large_rerank", "route", "generate")
PASSAGES = 64  # the corpus the queries search: chunk-sized random finance sentences
TOP_N, TOP_M = 16, 4  # light stage keeps 16 of the top 32, the large stage scores 4


def _cuda_problem(device: str) -> str | None:
    import torch

    if not device.startswith("cuda"):
        return None
    if torch.version.cuda is None:
        return (f"no CUDA: torch {torch.__version__} is a CPU build. Run this on a GPU host "
                "with a CUDA build of torch, or pass --device cpu for a dry run")
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return ("no CUDA device: torch was built with CUDA but sees none (driver, "
                "CUDA_VISIBLE_DEVICES?). Pass --device cpu for a dry run")
    index = int(device.split(":")[1]) if ":" in device else 0
    if index >= torch.cuda.device_count():
        return f"{device} asked for, torch sees {torch.cuda.device_count()} CUDA device(s)"
    return None


def _meter(device: str):
    """NVML over exactly this device (never the host's other GPUs); unavailable on the CPU."""
    from finrag.models.energy import MeterUnavailable, NVMLMeter, UnavailableMeter, nvml_index

    if not device.startswith("cuda"):
        return UnavailableMeter("a CPU run: GPU energy only")
    try:
        return NVMLMeter([nvml_index(device)])
    except MeterUnavailable as e:
        return UnavailableMeter(str(e))


class TinyEncoder:
    """A random 2-layer BERT on the tiny tokenizer: mean-pooled unit vectors (the embedder)
    and a one-logit head on query/passage pairs (the cross-encoder)."""

    def __init__(self, tokenizer, device: str, dtype, seed: int = 0):
        import torch
        from transformers import BertConfig, BertForSequenceClassification, BertModel

        config = BertConfig(vocab_size=len(tokenizer), hidden_size=128, num_hidden_layers=2,
                            num_attention_heads=2, intermediate_size=256,
                            max_position_embeddings=512, num_labels=1,
                            pad_token_id=tokenizer.pad_token_id)
        torch.manual_seed(seed)
        self.tok, self.device = tokenizer, device
        self.encoder = BertModel(config).to(device, dtype).eval()
        self.cross = BertForSequenceClassification(config).to(device, dtype).eval()

    def _batch(self, texts, pairs=None):
        enc = self.tok(texts, pairs, padding=True, truncation=True, max_length=256,
                       return_tensors="pt", add_special_tokens=False)
        enc.pop("token_type_ids", None)
        return enc.to(self.device)

    def embed(self, texts: list[str]):
        import torch

        enc = self._batch(texts)
        with torch.inference_mode():
            hidden = self.encoder(**enc).last_hidden_state.float()
        mask = enc["attention_mask"].unsqueeze(-1).float()
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def cross_scores(self, query: str, passages: list[str]) -> list[float]:
        import torch

        enc = self._batch([query] * len(passages), passages)
        with torch.inference_mode():
            return self.cross(**enc).logits.view(-1).float().cpu().tolist()


def run(device: str, queries: int, answer_tokens: int, work: Path) -> dict:
    import random

    import torch

    from finrag.models.llm import SamplingParams
    from finrag.models.rerankers import LLMRelevanceScorer
    from finrag.models.tiny_model import _corpus, build_tiny_llm
    from finrag.models.transformers_engine import TransformersEngine

    started = time.perf_counter()
    t = time.perf_counter()
    llm_dir = build_tiny_llm(work / "tiny-llm")
    engine = TransformersEngine(llm_dir, model_id="tiny-llama (random)", device=device)
    encoder = TinyEncoder(engine.tokenizer, device, engine.model.dtype)
    scorer = LLMRelevanceScorer(engine, batch_size=TOP_M)
    build_s = time.perf_counter() - t

    rng = random.Random(1)
    corpus = [line for line in _corpus(rng, PASSAGES) if not line.startswith("{")][:PASSAGES]
    index = encoder.embed(corpus)  # the vector index: exact inner product on the device
    questions = [f"What was {rng.choice(['AAPL', 'KO', 'NVDA', 'JPM'])} revenue in "
                 f"FY{rng.randint(2015, 2024)}?" for _ in range(queries)]
    meter = _meter(device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    # warm-up: kernels, allocator, tokenizer caches (not counted)
    engine.generate([questions[0]], SamplingParams(max_tokens=4))
    scorer.score(questions[0], corpus[:2])
    encoder.cross_scores(questions[0], corpus[:2])

    rows = []
    for q in questions:
        row: dict = {"query": q}
        with meter.measure() as whole:
            times = {}
            for role in ROLES:
                sync()
                t0 = time.perf_counter()
                if role == "embed":
                    vector = encoder.embed([q])[0]
                elif role == "search":
                    top = torch.topk(index @ vector, k=2 * TOP_N).indices.tolist()
                elif role == "light_rerank":
                    light = encoder.cross_scores(q, [corpus[i] for i in top])
                    kept = [top[i] for i in sorted(range(len(top)), key=lambda i: -light[i])]
                elif role == "large_rerank":
                    scorer.score(q, [corpus[i] for i in kept[:TOP_M]])
                elif role == "route":
                    engine.generate([[{"role": "user", "content": f"Tickers in: {q}"}]],
                                    SamplingParams(max_tokens=16))
                else:
                    context = "\n".join(corpus[i] for i in kept[:TOP_M])
                    done = engine.generate(
                        [[{"role": "user", "content": f"{context}\n\nQuestion: {q}"}]],
                        SamplingParams(max_tokens=answer_tokens))[0]
                    row["completion_tokens"] = done.completion_tokens
                sync()
                times[role] = (time.perf_counter() - t0) * 1000
        row["ms"] = times
        row["joules"] = whole.reading.joules
        row["energy_source"] = whole.reading.source
        rows.append(row)

    # the generator alone, one prompt and a batch of 8 (tokens/s of decoding, EOS honoured)
    prompts = [[{"role": "user", "content": q}] for q in questions[:8]]
    throughput = {}
    for label, batch in (("single", prompts[:1]), ("batch", prompts)):
        sync()
        with meter.measure() as m:
            out = engine.generate(batch, SamplingParams(max_tokens=answer_tokens))
            sync()
        tokens = sum(c.completion_tokens for c in out)
        throughput[label] = {"prompts": len(batch), "completion_tokens": tokens,
                             "seconds": round(m.reading.seconds, 4),
                             "tokens_per_s": round(tokens / m.reading.seconds, 1),
                             "joules": m.reading.joules,
                             "joules_per_token": (round(m.reading.joules / tokens, 6)
                                                  if m.reading.joules is not None and tokens
                                                  else None)}
    placed = {"generator": str(engine.model.device), "embedder": str(encoder.encoder.device),
              "light_reranker": str(encoder.cross.device),
              "large_reranker": str(scorer.engine.model.device), "vectors": str(index.device)}
    info = {"torch": torch.__version__, "device": device,
            "device_name": (torch.cuda.get_device_name(device) if device.startswith("cuda")
                            else "CPU"),
            "dtype": str(engine.model.dtype), "energy": getattr(meter, "scope", None)
            or getattr(meter, "reason", None)}
    return {"info": info, "placed": placed, "build_s": round(build_s, 2), "rows": rows,
            "throughput": throughput, "seconds": round(time.perf_counter() - started, 2)}


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 \
        else values[0]


def report(result: dict, out: Path, command: str, settings: dict) -> Path:
    from finrag.benchmarks.report import config_hash, header, write_json

    rows, info = result["rows"], result["info"]
    n = len(rows)
    lines = header(f"GPU smoke: every role on {info['device']} ({info['device_name']})",
                   command, config_hash(settings), [f"torch {info['torch']}, {info['dtype']}; tiny random models "
                                  f"built here (answers are noise: placement and cost only); "
                                  f"{n} queries, {result['seconds']} s in all"])
    lines += ["## Where each role ran", "", "| role | device |", "|---|---|"]
    lines += [f"| {role} | {dev} |" for role, dev in result["placed"].items()]
    tails = n >= 30
    lines += ["", f"## Per query ({n} queries{'' if tails else '; fewer than 30: medians only'})",
              "", "| stage | p50 ms |" + (" p95 ms |" if tails else ""),
              "|---|---:|" + ("---:|" if tails else "")]
    for role in ROLES:
        ms = [r["ms"][role] for r in rows]
        lines.append(f"| {role} | {statistics.median(ms):.2f} |"
                     + (f" {_pct(ms, 95):.2f} |" if tails else ""))
    joules = [r["joules"] for r in rows]
    source = rows[0]["energy_source"]
    if None in joules:
        energy = f"unavailable ({info['energy']})"
    else:
        energy = (f"{statistics.median(joules):.3f} J per query (median, {source}, "
                  f"{info['energy']}: this device only)")
    lines += ["", f"Energy: {energy}.", "", "## Generator tokens/s", "",
              "| prompts | completion tokens | s | tokens/s | J/token |", "|---:|---:|---:|---:|---:|"]
    for t in result["throughput"].values():
        jt = "unavailable" if t["joules_per_token"] is None else f"{t['joules_per_token']:.5f}"
        lines.append(f"| {t['prompts']} | {t['completion_tokens']} | {t['seconds']:.3f} | "
                     f"{t['tokens_per_s']:.1f} | {jt} |")
    try:
        from finrag.benchmarks.report import pyplot, savefig

        plt = pyplot()
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.barh(list(ROLES), [statistics.median(r["ms"][role] for r in rows) for role in ROLES])
        ax.set_xlabel("median ms per query")
        ax.set_title(f"tiny models on {info['device']}")
        lines += ["", f"![per-role latency]({savefig(fig, out, 'roles.png')})"]
    except ImportError:
        lines += ["", "(matplotlib is not installed: no plot)"]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    write_json(out / "smoke.json", result)
    return out / "report.md"


def main(argv: list[str] | None = None) -> int:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.gpu_smoke", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda:0", help="cuda[:N] (default cuda:0) or cpu (dry run)")
    p.add_argument("--queries", type=int, default=40, help="queries through every role (40)")
    p.add_argument("--answer-tokens", type=int, default=64, help="generator max tokens (64)")
    p.add_argument("--out", type=Path, default=None,
                   help="report folder (default benchmarks/results/gpu_smoke_<device>)")
    args = p.parse_args(argv)
    problem = _cuda_problem(args.device)
    if problem:
        print(f"gpu_smoke: {problem}", file=sys.stderr)
        return 2
    from finrag.benchmarks.report import results_dir

    out = results_dir(f"gpu_smoke_{args.device.split(':')[0]}", args.out)
    with tempfile.TemporaryDirectory(prefix="finrag-gpu-smoke-") as work:
        print(f"building tiny models and running {args.queries} queries on {args.device}…",
              file=sys.stderr)
        result = run(args.device, args.queries, args.answer_tokens, Path(work))
    command = "python -m finrag.benchmarks.gpu_smoke " + " ".join(argv if argv is not None else sys.argv[1:])
    path = report(result, out, command.strip(), {"device": args.device, "queries": args.queries,
                                                 "answer_tokens": args.answer_tokens})
    print(path.read_text())
    print(json.dumps({"report": str(path), "seconds": result["seconds"]}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
