"""Ingest pages/s: the sequential path against Ray Data with 1 and 2 single-threaded workers,
measured in one run, and the time for 50,000 filings projected from the stage profile.

    python -m finrag.benchmarks.ingest_scaling [--pdfs DIR] [--every 10] [--rounds 2]

Each side is a real `finrag ingest` (its own process, a fresh index, the cpu profile's
embedder: MiniLM on OpenVINO) of the same filings: every ``--every``-th PDF of the folder,
sorted. The sides run in turn, in reversed order on every other round. Pages/s is the ingest's
own time (its summary's ``seconds``); for Ray that includes connecting to a Ray started for the
run, which is also shown apart. Timed work: run it alone on the machine.

The projection multiplies the per-core stage costs of the 2-worker Ray runs (worker seconds of
parsing per page, of embedding per chunk; writer seconds per page) out to more cores; it
assumes per-core scaling holds, which the 1 → 2 worker ratio is the measured evidence for.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from finrag.benchmarks import report as R

# (name, extra `finrag ingest` arguments, OMP_NUM_THREADS or None for the machine's cores)
SIDES = [
    ("sequential, 1 thread", [], "1"),
    ("sequential, all cores", [], None),
    ("ray, 1 worker x 1 thread", ["--ray", "--workers", "1", "--threads", "1"], None),
    ("ray, 2 workers x 1 thread", ["--ray", "--workers", "2", "--threads", "1"], None),
]
# an enterprise's S&P 500 filings over ten years (the figure)
FILINGS, PAGES = 50_000, 7_500_000


def ingest(pdfs: list[Path], metadata: Path, extra: list[str], threads: str | None,
           profile: str, *, config: Path | None = None, index: Path | None = None
           ) -> dict[str, Any]:
    """One real `finrag ingest` of ``pdfs`` into a fresh index (``index``, kept; else a
    temporary one), its JSON summary's figures and the process's wall seconds. ``config``: a
    FINRAG_CONFIG YAML over the packaged profiles."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.pop("OMP_NUM_THREADS", None)
    env.pop("FINRAG_CONFIG", None)
    if threads:
        env["OMP_NUM_THREADS"] = threads
    if config:
        env["FINRAG_CONFIG"] = str(config)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "finrag.serving.cli", "ingest", *map(str, pdfs),
               "--metadata", str(metadata), "--index", str(index or Path(tmp) / "index"),
               "--profile", profile, "--json", "-q", *extra]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=7200)
        wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(extra) or 'sequential'} ingest failed:\n"
                           f"{done.stderr[-3000:]}")
    summary = json.loads(done.stdout)
    return {k: summary[k] for k in ("added", "failed", "pages", "chunks", "seconds",
                                    "parse_seconds", "embed_seconds", "write_seconds",
                                    "mode", "ray_start_seconds")} | {"process_seconds": wall}


def run(args) -> dict[str, Any]:
    pdfs = sorted(Path(args.pdfs).glob("*.pdf"))[::args.every]
    if not pdfs:
        raise SystemExit(f"no PDFs in {args.pdfs}")
    runs = []
    for r in range(args.rounds):
        order = SIDES if r % 2 == 0 else SIDES[::-1]
        for name, extra, threads in order:
            print(f"round {r + 1}/{args.rounds}: {name} ...", file=sys.stderr, flush=True)
            result = ingest(pdfs, args.metadata, extra, threads, args.profile)
            runs.append({"side": name, "round": r + 1} | result)
            print(f"  {result['pages'] / result['seconds']:.1f} pages/s "
                  f"({result['seconds']:.1f} s)", file=sys.stderr, flush=True)
    return {"pdfs": [p.name for p in pdfs], "profile": args.profile, "rounds": args.rounds,
            "cpus": os.cpu_count(), "runs": runs}


def _by_side(result: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {name: [] for name, _, _ in SIDES}
    for run_ in result["runs"]:
        out[run_["side"]].append(run_)
    return out


def rates(result: dict) -> dict[str, dict[str, float]]:
    """Per side, the median over rounds of pages/s: of the ingest, and less Ray's start."""
    out = {}
    for side, runs in _by_side(result).items():
        out[side] = {
            "pages_per_s": statistics.median(r["pages"] / r["seconds"] for r in runs),
            "pages_per_s_started": statistics.median(
                r["pages"] / (r["seconds"] - (r["ray_start_seconds"] or 0)) for r in runs),
            "seconds": statistics.median(r["seconds"] for r in runs),
            "ray_start_seconds": statistics.median(r["ray_start_seconds"] or 0 for r in runs),
        }
    return out


def projection(result: dict) -> dict[str, Any]:
    """Per-core stage costs of the 2-worker Ray runs, multiplied out (see the module's doc)."""
    runs = _by_side(result)[SIDES[3][0]]
    pages = sum(r["pages"] for r in runs)
    chunks = sum(r["chunks"] for r in runs)
    parse = sum(r["parse_seconds"] for r in runs) / pages  # worker seconds a page
    embed = sum(r["embed_seconds"] for r in runs) / chunks  # worker seconds a chunk
    write = sum(r["write_seconds"] for r in runs) / pages  # writer seconds a page
    per_page = chunks / pages
    cpu_node = 16 / (parse + embed * per_page)  # pages/s, parse and embed on 16 cores
    gpu_node = 16 / parse  # pages/s when a GPU embeds at least as fast
    writer = 1 / write  # pages/s one writer commits
    rows = []
    for label, node_rate, nodes in (("one 16-core node, embedding on its CPUs", cpu_node, 1),
                                    ("one 16-core GPU node", gpu_node, 1),
                                    ("8 such GPU nodes", gpu_node, 8)):
        rate = min(node_rate * nodes, writer)
        rows.append({"setting": label, "pages_per_s": rate,
                     "writer_bound": node_rate * nodes > writer,
                     "days": PAGES / rate / 86400,
                     "gpu_chunks_per_s_needed": node_rate * nodes * per_page
                     if "GPU" in label else None})
    return {"parse_s_per_page": parse, "embed_s_per_chunk": embed, "write_s_per_page": write,
            "chunks_per_page": per_page, "writer_pages_per_s": writer, "rows": rows}


def plot(result: dict, out: Path) -> str:
    plt = R.pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    by_side = _by_side(result)
    names = list(by_side)
    for i, name in enumerate(names):
        values = [r["pages"] / r["seconds"] for r in by_side[name]]
        ax.scatter([i] * len(values), values, color="C0", zorder=3)
        ax.bar(i, statistics.median(values), color="C0", alpha=0.4)
    ax.set_xticks(range(len(names)), [n.replace(", ", "\n") for n in names], fontsize=8)
    ax.set_ylabel("pages / s (bars: median; dots: rounds)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"finrag ingest, {len(result['pdfs'])} PDFs, {result['cpus']} cores")
    return R.savefig(fig, out, "ingest_scaling.png")


def write_report(result: dict, out: Path) -> None:
    r = rates(result)
    names = [name for name, _, _ in SIDES]
    first = result["runs"][0]
    chash = R.config_hash({"pdfs": result["pdfs"], "profile": result["profile"],
                           "code": R.code_version("retrieval", "serving", "models")})
    png = plot(result, out)
    lines = R.header("Ingest on Ray Data against the sequential ingest", result["command"],
                     chash, [
        "", f"{len(result['pdfs'])} FinanceBench PDFs ("
            + ("all of the folder" if result["every"] == 1 else
               f"every {result['every']}th of the folder, sorted")
            + f"): {first['pages']:,} pages, {first['chunks']:,} chunks. Profile "
            f"`{result['profile']}`; {result['cpus']} cores; {result['rounds']} "
            f"round{'s' if result['rounds'] != 1 else ''}, the sides in turn"
            + (". Medians over rounds." if result["rounds"] > 1 else ".")])
    lines += ["| side | pages/s | seconds | Ray start, s | pages/s less Ray's start |",
              "|---|---|---|---|---|"]
    for name in names:
        x = r[name]
        lines.append(f"| {name} | {x['pages_per_s']:.1f} | {x['seconds']:.1f} | "
                     f"{x['ray_start_seconds']:.1f} | {x['pages_per_s_started']:.1f} |")
    two, one = r[names[3]], r[names[2]]
    seq1 = r[names[0]]
    lines += ["", f"- Ray, 2 workers against 1: **{two['pages_per_s'] / one['pages_per_s']:.2f}x** "
                  f"pages/s (goal ≥ 1.6x).",
              f"- Ray, 1 worker against the sequential path at one thread: "
              f"**{one['pages_per_s'] / seq1['pages_per_s']:.2f}x** "
              f"({one['pages_per_s_started'] / seq1['pages_per_s']:.2f}x less Ray's start; "
              f"goal: no slower).",
              f"- Ray, 2 workers against the sequential path on all cores: "
              f"{two['pages_per_s'] / r[names[1]]['pages_per_s']:.2f}x.", "",
              "Every run, as its summary gave it:", "",
              "| round | side | pages/s | parse s | embed s | write s | process s |",
              "|---|---|---|---|---|---|---|"]
    for x in result["runs"]:
        lines.append(f"| {x['round']} | {x['side']} | {x['pages'] / x['seconds']:.1f} | "
                     f"{x['parse_seconds']:.1f} | {x['embed_seconds']:.1f} | "
                     f"{x['write_seconds']:.1f} | {x['process_seconds']:.1f} |")
    p = projection(result)
    lines += ["", "Parse and embed seconds are worker seconds (on Ray, summed over the workers); "
                  "write seconds are the one writer's, statement facts included.", "",
              "## 50,000 filings, projected", "",
              f"From the 2-worker Ray runs: {p['parse_s_per_page'] * 1000:.1f} ms of one core "
              f"to parse a page, {p['embed_s_per_chunk'] * 1000:.1f} ms to embed a chunk "
              f"(MiniLM on OpenVINO, one thread), {p['chunks_per_page']:.2f} chunks a page, "
              f"{p['write_s_per_page'] * 1000:.2f} ms of the writer a page (so one writer "
              f"commits at most {p['writer_pages_per_s']:,.0f} pages/s). "
              f"{PAGES:,} pages ({FILINGS:,} filings). A projection, not a measurement: it "
              f"assumes the per-core costs hold on other machines and that workers scale "
              f"per core.", "",
              "| setting | pages/s | days | GPU embedding needed, chunks/s |", "|---|---|---|---|"]
    for row in p["rows"]:
        need = (f"{row['gpu_chunks_per_s_needed']:,.0f} (not measured here: no GPU)"
                if row["gpu_chunks_per_s_needed"] else "—")
        bound = " (writer-bound)" if row["writer_bound"] else ""
        lines.append(f"| {row['setting']} | {row['pages_per_s']:,.0f}{bound} | "
                     f"{row['days']:.2f} | {need} |")
    lines += ["", "On a GPU node the projection holds only if its GPU(s) embed at least the "
                  "chunks/s in the last column (the gpu profile's embedder is BGE-M3, larger "
                  "than MiniLM); the bound is then parsing or the one writer, whichever is "
                  "lower. A writer-bound row gains nothing from more nodes: past that rate the "
                  "commits, not the workers, set the pace.", "", f"![pages/s]({png})", ""]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.ingest_scaling",
                                description=__doc__.splitlines()[0])
    p.add_argument("--pdfs", type=Path, default=R.SHARED / "pdfs")
    p.add_argument("--metadata", type=Path, default=R.SHARED / "documents.jsonl")
    p.add_argument("--every", type=int, default=10, help="every N-th PDF, sorted (10)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--profile", default="cpu")
    p.add_argument("--name", default="ingest_scaling_cpu")
    p.add_argument("--out", type=Path, help="results folder (default benchmarks/results/NAME)")
    p.add_argument("--report-only", action="store_true",
                   help="write the report again from the run's results.json")
    args = p.parse_args(argv)
    out = R.results_dir(args.name, args.out)
    if args.report_only:
        result = json.loads((out / "results.json").read_text())
    else:
        command = "python -m finrag.benchmarks.ingest_scaling " + " ".join(
            sys.argv[1:] if argv is None else argv)
        result = run(args) | {"command": command, "every": args.every}
        R.write_json(out / "results.json", result)
    write_report(result, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
