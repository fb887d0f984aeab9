"""``finrag bench engines``: LLM engine against engine on the same real answer prompts.

Each prompt is the generator's own answer prompt (``retrieval.systems.context.answer_messages``)
for a dev question, with the question's evidence pages as the context (cut to the profile's
context budget at 3.5 characters a token), so every engine reads the same text. Each engine
(and model) runs in a process of its own, one prompt after another as answers arrive at a
C=1 service, greedy, after one warm-up prompt; the process's peak RSS is its memory. A run is
named ``ENGINE`` or ``ENGINE:MODEL`` (the profile's generator model by default); a name ending
in ``+nocache`` runs llama.cpp with its prefix cache off (every prompt read from its start).

    finrag bench engines --profile cpu --engines transformers,llamacpp --questions 30

Prefill tokens/s is the prompt's tokens over the time to the first token; decode tokens/s the
later tokens over the time after it. Outputs are compared with the first engine's, text for
text.

``--contexts K`` also times V-B's context writing (``retrieval.ingest.variants.Contextualizer``,
as ``finrag ingest --variant llmctx`` runs it) on K consecutive chunks of one filing, a quarter
of the way in: each prompt is the filing's opening, then one chunk, so consecutive prompts
share a long prefix, which the llama.cpp engine reads once.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from finrag.benchmarks import report as R

NAME = "engines"
CHARS_PER_TOKEN = 3.5


def add_parser(sub) -> None:
    p = sub.add_parser("engines", help="LLM engines side by side on the same answer prompts: "
                       "prefill and decode tokens/s, p50/p95, peak RSS, identical outputs",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", default="cpu", help="profile whose generator and budgets to use")
    p.add_argument("--engines", default="transformers,llamacpp",
                   help="comma-separated ENGINE or ENGINE:MODEL (first one = the reference)")
    p.add_argument("--questions", type=int, default=30, help="dev questions (tune half first)")
    p.add_argument("--max-tokens", type=int, default=None,
                   help="answer tokens (default: the profile's answer_tokens)")
    p.add_argument("--contexts", type=int, default=0, metavar="K",
                   help="also time V-B contexts for K consecutive chunks of --filing")
    p.add_argument("--filing", type=Path, default=R.SHARED / "pdfs" / "3M_2018_10K.pdf",
                   help="the filing for --contexts (default: 3M's FY2018 10-K)")
    p.add_argument("--name", default=None, help="results folder name (default engines_<profile>)")
    p.add_argument("--out", type=Path, default=None)
    p.set_defaults(func=main)


def answer_prompts(n: int, context_tokens: int,
                   questions_file: Path = R.SHARED / "questions.dev.jsonl") -> list[dict[str, Any]]:
    """The first ``n`` dev questions (tune half, then test) with their answer prompts."""
    from finrag.benchmarks.splits import split_of
    from finrag.retrieval.systems.context import Block, answer_messages

    questions = [json.loads(line) for line in questions_file.read_text().splitlines() if line]
    split = split_of(questions)
    ordered = sorted(questions, key=lambda q: split[q["financebench_id"]] != "tune")
    out = []
    for q in ordered[:n]:
        budget = int(context_tokens * CHARS_PER_TOKEN)
        blocks = []
        for e in q["evidence"]:
            text = " ".join(e["evidence_text"].split())[:budget]
            if not text:
                continue
            page = int(e.get("evidence_page_num", 0)) + 1
            blocks.append(Block(q["doc_name"], page, page, text, 0))
            budget -= len(text)
            if budget <= 0:
                break
        out.append({"id": q["financebench_id"], "split": split[q["financebench_id"]],
                    "messages": answer_messages(q["question"], blocks)})
    return out


# one engine, in its own process ---------------------------------------------------------
def context_cost(engine, filing: Path, k: int, batch_size: int = 4) -> dict[str, Any]:
    """V-B contexts for ``k`` consecutive chunks of ``filing``, as the ingest writes them."""
    from finrag.retrieval.ingest.prepare import parse_file
    from finrag.retrieval.ingest.chunking import chunk_pages
    from finrag.retrieval.ingest.metadata import resolve_metadata
    from finrag.retrieval.ingest.variants import Contextualizer

    parsed = parse_file(filing)
    chunks = chunk_pages(parsed.pages)
    start = len(chunks) // 4
    chunks = chunks[start:start + k]
    writer = Contextualizer(engine, batch_size=batch_size)
    contexts = writer.contextualize(resolve_metadata(filing), parsed, chunks)
    return {"filing": filing.name, "chunks": len(chunks), "first_chunk": start,
            "seconds": writer.seconds, "seconds_per_chunk": writer.seconds / len(chunks),
            "contexts": contexts}


def worker(spec: str, profile_name: str, prompts_file: Path, out_file: Path,
           max_tokens: int, contexts: int = 0, filing: Path | None = None) -> None:
    from finrag.models.llm import SamplingParams
    from finrag.models.profiles import load_config, load_llm

    name, nocache = spec.removesuffix("+nocache"), spec.endswith("+nocache")
    engine_name, _, model = name.partition(":")
    profile = load_config(env={}).active(profile_name)
    roles = {k: v.model_copy() for k, v in profile.roles.items()}
    if model:
        roles["generator"] = roles["generator"].model_copy(update={"model": model})
    profile = profile.model_copy(update={"engine": engine_name, "roles": roles})
    t0 = time.perf_counter()
    engine = load_llm(profile, "generator", **({"prefix_cache": False} if nocache else {}))
    load_s = time.perf_counter() - t0
    prompts = [json.loads(line) for line in prompts_file.read_text().splitlines()]
    params = SamplingParams(max_tokens=max_tokens)
    engine.generate([[{"role": "user", "content": "Say hello."}]], SamplingParams(max_tokens=8))
    with out_file.open("w") as f:
        f.write(json.dumps({"load_s": load_s, "model": profile.role("generator").model}) + "\n")
        for i, p in enumerate(prompts):
            # one at a time: the transformers engine reports the first token's time only so
            c = engine.generate([p["messages"]], params)[0]
            f.write(json.dumps({"id": p["id"], "text": c.text, "prompt_tokens": c.prompt_tokens,
                                "completion_tokens": c.completion_tokens,
                                "latency_s": c.latency_s, "first_token_s": c.first_token_s,
                                "finish_reason": c.finish_reason}) + "\n")
            f.flush()
            print(f"  {spec}: {i + 1}/{len(prompts)} {c.latency_s:.1f} s", file=sys.stderr,
                  flush=True)
        vb = context_cost(engine, filing, contexts) if contexts and filing else None
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        f.write(json.dumps({"peak_rss_mb": rss_mb, "contexts": vb}) + "\n")


def run_engine(spec: str, profile: str, prompts_file: Path, out_file: Path,
               max_tokens: int, contexts: int = 0, filing: Path | None = None) -> None:
    cmd = [sys.executable, "-m", "finrag.benchmarks.engine_compare", "--worker", spec, profile,
           str(prompts_file), str(out_file), str(max_tokens), str(contexts), str(filing or "")]
    done = subprocess.run(cmd, cwd=R.REPO, timeout=4 * 3600)
    if done.returncode:
        raise RuntimeError(f"engine {spec} failed (exit {done.returncode})")


# figures -----------------------------------------------------------------------------------
def summarise(records: list[dict], meta: dict, tail: dict, reference: list[dict] | None) -> dict:
    import numpy as np

    def median(values):
        return float(np.median(values)) if values else None

    lat = [r["latency_s"] for r in records]
    timed = [r for r in records if r["first_token_s"]]
    prefill = [r["prompt_tokens"] / r["first_token_s"] for r in timed]
    decode = [(r["completion_tokens"] - 1) / (r["latency_s"] - r["first_token_s"])
              for r in timed if r["completion_tokens"] > 1 and r["latency_s"] > r["first_token_s"]]
    same = None
    if reference is not None and records:
        ref = {r["id"]: r["text"].strip() for r in reference}
        same = sum(ref.get(r["id"]) == r["text"].strip() for r in records) / len(records)
    vb = tail.get("contexts")
    return {"model": meta["model"], "n": len(records), "load_s": meta["load_s"],
            "context_s_per_chunk": vb["seconds_per_chunk"] if vb else None,
            "context_chunks": vb["chunks"] if vb else None,
            "p50_s": float(np.percentile(lat, 50)) if lat else None,
            "p95_s": float(np.percentile(lat, 95)) if lat else None,
            "prefill_tok_s": median(prefill), "decode_tok_s": median(decode),
            "first_token_p50_s": median([r["first_token_s"] for r in timed]),
            "prompt_tokens_mean": float(np.mean([r["prompt_tokens"] for r in records]))
            if records else None,
            "completion_tokens_mean": float(np.mean([r["completion_tokens"] for r in records]))
            if records else None,
            "peak_rss_mb": tail.get("peak_rss_mb"), "identical_to_reference": same}


def plot(rows: dict[str, dict], runs: dict[str, list[dict]], out: Path) -> list[str]:
    plt = R.pyplot()
    files = []
    vb = [n for n, r in rows.items() if r["context_s_per_chunk"]]
    if vb:
        fig, ax = plt.subplots(figsize=(7, 2.8))
        ax.barh(vb, [rows[n]["context_s_per_chunk"] for n in vb])
        ax.set_xlabel("seconds per V-B chunk context")
        files.append(R.savefig(fig, out, "context_cost.png"))
    names = [n for n in rows if runs[n]]
    if not names:
        return files
    fig, ax = plt.subplots(figsize=(7, 3.6))
    ax.boxplot([[r["latency_s"] for r in runs[n]] for n in names], vert=False)
    ax.set_yticks(range(1, len(names) + 1), names)
    ax.set_xlabel("seconds per answer (one prompt at a time)")
    ax.set_title("Answer latency by engine")
    files.append(R.savefig(fig, out, "latency.png"))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, key, label in ((axes[0], "prefill_tok_s", "prefill tokens/s"),
                           (axes[1], "decode_tok_s", "decode tokens/s")):
        ax.barh(names, [rows[n][key] or 0 for n in names])
        ax.set_xlabel(label + " (median)")
    files.append(R.savefig(fig, out, "tokens_per_s.png"))
    return files


def report(args, rows: dict[str, dict], files: list[str], n_prompts: int, chash: str) -> str:
    ref = next(iter(rows))
    lines = R.header("LLM engines on the same answer prompts", R.command_line(args), chash, [
        "", f"{n_prompts} answer prompts (dev questions, tune half first; context: each "
        f"question's evidence pages, cut at {CHARS_PER_TOKEN} characters a token to the "
        f"profile `{args.profile}`'s context budget), greedy, one prompt at a time after a "
        "warm-up, each engine alone in its own process on this machine. Reference for "
        f"identical outputs: `{ref}`. Energy: unavailable (no meter on this CPU host)."])
    answered = {n: r for n, r in rows.items() if r["n"]}
    if answered:
        lines += ["| engine | model | p50 s | p95 s | first token p50 s | prefill tok/s | "
                  "decode tok/s | prompt / answer tokens | peak RSS MB | load s | identical |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in answered.items():
        lines.append(
            f"| `{name}` | {r['model']} | {r['p50_s']:.2f} | {r['p95_s']:.2f} | "
            f"{R.num(r['first_token_p50_s'], '{:.2f}')} | {R.num(r['prefill_tok_s'], '{:,.0f}')} "
            f"| {R.num(r['decode_tok_s'], '{:,.1f}')} | {r['prompt_tokens_mean']:,.0f} / "
            f"{r['completion_tokens_mean']:,.0f} | {R.num(r['peak_rss_mb'], '{:,.0f}')} | "
            f"{r['load_s']:.1f} | {R.pct(r['identical_to_reference'])} |")
    base = rows[ref]
    lines += ["", "Against the reference (same prompts):", ""] if answered else []
    for name, r in list(answered.items())[1:]:
        lines.append(f"- `{name}`: p50 {base['p50_s'] / r['p50_s']:.2f}× faster, prefill "
                     f"{(r['prefill_tok_s'] or 0) / (base['prefill_tok_s'] or 1):.2f}×, decode "
                     f"{(r['decode_tok_s'] or 0) / (base['decode_tok_s'] or 1):.2f}×.")
    vb = {n: r for n, r in rows.items() if r["context_s_per_chunk"]}
    if vb:
        lines += ["", f"## V-B: seconds per chunk context ({args.filing.name}, "
                  f"{next(iter(vb.values()))['context_chunks']} consecutive chunks a quarter of "
                  "the way in, batches of 4 as `finrag ingest --variant llmctx` writes them)", "",
                  "| engine | s / chunk | 47,732 chunks (the 124 FinanceBench PDFs), hours |",
                  "|---|---:|---:|"]
        for name, r in vb.items():
            lines.append(f"| `{name}` | {r['context_s_per_chunk']:.2f} | "
                         f"{r['context_s_per_chunk'] * 47732 / 3600:,.0f} |")
    lines += ["", *[f"![{f}]({f})" for f in files], ""]
    return "\n".join(lines)


def main(args) -> int:
    from finrag.models.profiles import load_config

    profile = load_config(env={}).active(args.profile)
    max_tokens = args.max_tokens or profile.pipeline.answer_tokens
    out = R.results_dir(args.name or f"{NAME}_{args.profile}", args.out)
    prompts = answer_prompts(args.questions, profile.pipeline.context_tokens)
    prompts_file = out / "prompts.jsonl"
    prompts_file.write_text("".join(json.dumps(p) + "\n" for p in prompts))
    specs = [s.strip() for s in args.engines.split(",") if s.strip()]
    rows, runs = {}, {}
    for spec in specs:
        print(f"engine {spec}: {len(prompts)} prompts", file=sys.stderr, flush=True)
        run_file = out / f"run_{spec.replace(':', '_').replace('/', '_')}.jsonl"
        run_engine(spec, args.profile, prompts_file, run_file, max_tokens, args.contexts,
                   args.filing)
        lines = [json.loads(line) for line in run_file.read_text().splitlines()]
        meta, records, tail = lines[0], lines[1:-1], lines[-1]
        runs[spec] = records
        rows[spec] = summarise(records, meta, tail, runs[specs[0]] if spec != specs[0] else None)
    files = plot(rows, runs, out)
    chash = R.config_hash({"profile": args.profile, "engines": specs, "n": len(prompts),
                           "max_tokens": max_tokens, "contexts": args.contexts,
                           "filing": args.filing.name})
    R.write_json(out / "summary.json", rows)
    (out / "report.md").write_text(report(args, rows, files, len(prompts), chash))
    print(f"report: {R.shown_path(out / 'report.md')}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) in (7, 9) and sys.argv[1] == "--worker":
        contexts, filing = (int(sys.argv[7]), sys.argv[8]) if len(sys.argv) == 9 else (0, "")
        worker(sys.argv[2], sys.argv[3], Path(sys.argv[4]), Path(sys.argv[5]), int(sys.argv[6]),
               contexts, Path(filing) if filing else None)
    else:
        sys.exit("usage: finrag bench engines ... (the --worker form is internal)")
