"""The whole FinanceBench ingest by embedder runtime: sentence-transformers (torch, float32),
OpenVINO at the cpu profile's default precision, and OpenVINO int8, in one run.

    python -m finrag.benchmarks.ingest_runtime [--keep var/fb-index] [--sides torch,auto,int8]

Each side is a real sequential `finrag ingest` of every PDF of the folder into a fresh index,
on the cpu profile with only its embedder's runtime and precision set (a FINRAG_CONFIG YAML),
all cores. Before the timed runs each side ingests the smallest PDF once into a throw-away
index, so the one-off model conversion and quantization are cached and not in any figure.
``--keep`` keeps the torch side's index (the vectors today's indexes hold) for
``benchmarks/embedder_runtime``'s retrieval check. The issue's goal: the whole ingest ≥ 4x
faster than on torch. Timed work: run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from finrag.benchmarks import report as R
from finrag.benchmarks.ingest_scaling import ingest

# side: (label, the cpu profile's embedder role settings)
SIDES = {
    "torch": ("sentence-transformers (torch, float32)",  # the profile's int8 is OpenVINO's
              {"runtime": "torch", "precision": "auto"}),
    "auto": ("OpenVINO, precision auto (bfloat16 on a CPU with it)",
             {"runtime": "openvino", "precision": "auto"}),
    "int8": ("OpenVINO, int8", {"runtime": "openvino", "precision": "int8"}),
}
GOAL = 4.0


def _config(folder: Path, profile: str, side: str) -> Path:
    path = folder / f"{side}.yaml"
    path.write_text(json.dumps({"profiles": {profile: {"roles": {"embedder": SIDES[side][1]}}}}))
    return path  # JSON is YAML


def run(args) -> dict[str, Any]:
    pdfs = sorted(Path(args.pdfs).glob("*.pdf"))
    if not pdfs:
        raise SystemExit(f"no PDFs in {args.pdfs}")
    if args.keep and args.keep.exists():
        raise SystemExit(f"{args.keep} exists: --keep writes a new index")
    sides = args.sides.split(",")
    smallest = min(pdfs, key=lambda p: p.stat().st_size)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for side in sides:
            config = _config(Path(tmp), args.profile, side)
            print(f"{side}: warming up on {smallest.name} ...", file=sys.stderr, flush=True)
            ingest([smallest], args.metadata, [], None, args.profile, config=config)
        for side in sides:
            print(f"{side}: {len(pdfs)} PDFs ...", file=sys.stderr, flush=True)
            result = ingest(pdfs, args.metadata, [], None, args.profile,
                            config=_config(Path(tmp), args.profile, side),
                            index=args.keep if side == "torch" else None)
            runs.append({"side": side, "label": SIDES[side][0],
                         "embedder": SIDES[side][1]} | result)
            print(f"  {result['pages'] / result['seconds']:.1f} pages/s "
                  f"({result['seconds']:.0f} s)", file=sys.stderr, flush=True)
    return {"pdfs": len(pdfs), "profile": args.profile, "cpus": os.cpu_count(), "runs": runs,
            "kept": R.shown_path(args.keep) if args.keep else None}


def _label(run_: dict) -> str:
    return SIDES[run_["side"]][0] if run_["side"] in SIDES else run_["label"]


def plot(result: dict, out: Path) -> str:
    plt = R.pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    labels = [_label(r).replace(", ", "\n").replace(" (", "\n(") for r in result["runs"]]
    bottom = [0.0] * len(labels)
    for stage, colour in (("parse_seconds", "C0"), ("embed_seconds", "C1"),
                          ("write_seconds", "C2")):
        values = [r[stage] for r in result["runs"]]
        ax.bar(labels, values, bottom=bottom, color=colour, label=stage.split("_")[0])
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.scatter(labels, [r["seconds"] for r in result["runs"]], color="k", zorder=3,
               label="ingest seconds")
    ax.set_ylabel("seconds")
    ax.legend(fontsize=8)
    ax.set_title(f"finrag ingest, {result['pdfs']} PDFs, {result['cpus']} cores")
    return R.savefig(fig, out, "ingest_runtime.png")


def write_report(result: dict, out: Path) -> None:
    runs = {r["side"]: r for r in result["runs"]}
    first = result["runs"][0]
    chash = R.config_hash({"pdfs": result["pdfs"], "profile": result["profile"],
                           "sides": list(runs),
                           "code": R.code_version("retrieval", "serving", "models")})
    png = plot(result, out)
    lines = R.header("The whole ingest by embedder runtime", result["command"], chash, [
        "", f"All {result['pdfs']} FinanceBench PDFs: {first['pages']:,} pages, "
            f"{first['chunks']:,} chunks; sequential `finrag ingest` on the "
            f"`{result['profile']}` profile with its embedder's runtime set; "
            f"{result['cpus']} cores; one run a side, alone on the machine, model caches "
            f"warmed first."])
    lines += ["| embedder | ingest s | pages/s | parse s | embed s | chunks/s embedded | "
              "write s | process s | torch's time / this |", "|---|---|---|---|---|---|---|---|---|"]
    torch = runs.get("torch")
    for r in result["runs"]:
        ratio = f"**{torch['seconds'] / r['seconds']:.2f}x**" if torch else "–"
        lines.append(f"| {_label(r)} | {r['seconds']:.0f} | {r['pages'] / r['seconds']:.1f} | "
                     f"{r['parse_seconds']:.0f} | {r['embed_seconds']:.0f} | "
                     f"{r['chunks'] / r['embed_seconds']:.1f} | {r['write_seconds']:.0f} | "
                     f"{r['process_seconds']:.0f} | {ratio} |")
    if torch:
        best = max((r for r in result["runs"] if r is not torch),
                   key=lambda r: torch["seconds"] / r["seconds"], default=None)
        if best is not None:
            x = torch["seconds"] / best["seconds"]
            lines += ["", f"- Fastest: {_label(best)}, **{x:.2f}x** the torch ingest "
                          f"(goal ≥ {GOAL:.0f}x: {'met' if x >= GOAL else 'not met'}).",
                      f"- Its embedding took {best['embed_seconds']:.0f} s of its "
                      f"{best['seconds']:.0f}: at that embedding rate, with no parse and no "
                      f"write, the ingest would be "
                      f"{torch['seconds'] / best['embed_seconds']:.2f}x the torch one."]
    lines += ["", "Ingest seconds are the ingest's own (its summary's `seconds`: from the "
                  "first file to the last commit); process seconds add Python's start and "
                  "loading the models. Parse, embed and write are the stages' seconds inside "
                  "it; the next file is parsed in a thread while one is embedded, so the "
                  "stages' seconds add up to more than the ingest's.",
              "", f"![stages]({png})", ""]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.ingest_runtime",
                                description=__doc__.splitlines()[0])
    p.add_argument("--pdfs", type=Path, default=R.SHARED / "pdfs")
    p.add_argument("--metadata", type=Path, default=R.SHARED / "documents.jsonl")
    p.add_argument("--sides", default=",".join(SIDES), help="of " + ", ".join(SIDES))
    p.add_argument("--profile", default="cpu")
    p.add_argument("--keep", type=Path, help="keep the torch side's index here (a new folder)")
    p.add_argument("--name", default="ingest_runtime_cpu")
    p.add_argument("--out", type=Path, help="results folder (default benchmarks/results/NAME)")
    p.add_argument("--report-only", action="store_true",
                   help="write the report again from the run's results.json")
    args = p.parse_args(argv)
    unknown = set(args.sides.split(",")) - set(SIDES)
    if unknown:
        p.error(f"unknown side(s) {', '.join(sorted(unknown))}; of {', '.join(SIDES)}")
    out = R.results_dir(args.name, args.out)
    if args.report_only:
        result = json.loads((out / "results.json").read_text())
    else:
        command = "python -m finrag.benchmarks.ingest_runtime " + " ".join(
            sys.argv[1:] if argv is None else argv)
        result = run(args) | {"command": command}
        R.write_json(out / "results.json", result)
    write_report(result, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
