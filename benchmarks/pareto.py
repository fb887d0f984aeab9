"""``finrag bench pareto``: which configurations are worth running, from measured results.

A configuration is a system as ``finrag bench quality`` ran it: its quality, its cost (LLM
tokens or joules per query) and its latency all come from that one run's answers — a point
never takes quality from one run and cost from another. ``finrag bench perf`` runs judge
nothing, so their levels are listed beside the front (throughput and latency against
concurrency) but are not points of it. The non-dominated ones on (quality ↑, cost ↓, latency ↓)
form the Pareto front; for each named SLA the FACET-style choice (PRISM paper: weighted
geometric mean of capped ratios against the SLA's latency ceiling, cost ceiling and quality
floor — ``benchmarks.stats``) picks among the configurations that meet it. Where every
configuration's energy was measured (NVML or RAPL), FACET also weighs joules per answer against
the SLA's ``energy_max``.

Quality is accuracy (the share of answers labelled correct; default), the judge's average
score (1–10) or P(s≥8) (``--quality``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from finrag.benchmarks import report as R
from finrag.benchmarks import stats
from finrag.benchmarks.serve_load_report import MIN_TAIL_SAMPLES

# Named SLAs on accuracy, tokens per query and seconds per answer, and joules per answer where
# energy is measured. Latency ceilings are for this project's CPU profile (2 cores); on a GPU
# server pass --sla with the service's own figures.
SLAS = {
    "interactive": {"latency_max": 30.0, "cost_max": 4000.0, "quality_min": 0.25,
                    "energy_max": 2000.0,
                    "weights": {"latency": 2.0, "cost": 1.0, "quality": 1.0, "energy": 1.0}},
    "analyst-batch": {"latency_max": 300.0, "cost_max": 100000.0, "quality_min": 0.40,
                      "energy_max": 20000.0,
                      "weights": {"latency": 0.5, "cost": 1.0, "quality": 2.0, "energy": 1.0}},
    "low-cost": {"latency_max": 120.0, "cost_max": 1500.0, "quality_min": 0.15,
                 "energy_max": 1000.0,
                 "weights": {"latency": 1.0, "cost": 2.0, "quality": 1.0, "energy": 2.0}},
}
QUALITY = {"accuracy": ("accuracy (share labelled correct)", lambda v: v["labels"]["correct"]),
           "average": ("judge's average score (1–10)", lambda v: v.get("average")),
           "correctness": ("correctness P(s≥8)", lambda v: v.get("correctness"))}


def without_energy(sla: dict[str, Any]) -> dict[str, Any]:
    """The SLA on latency, cost and quality alone (energy not measured)."""
    out = {k: v for k, v in sla.items() if k != "energy_max"}
    out["weights"] = {k: v for k, v in (sla.get("weights") or {}).items() if k != "energy"}
    return out


def parse_sla(text: str) -> tuple[str, dict[str, Any]]:
    """``NAME:latency_max=30,cost_max=4000,quality_min=5[,w_latency=2,…]`` → (name, SLA)."""
    name, _, spec = text.partition(":")
    if not name or not spec:
        raise ValueError(f"--sla wants NAME:latency_max=…,cost_max=…,quality_min=…, got {text!r}")
    sla: dict[str, Any] = {"weights": {}}
    for part in spec.split(","):
        key, _, value = part.partition("=")
        key = key.strip()
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"--sla {name}: {part!r} is not KEY=NUMBER") from None
        if key.startswith("w_"):
            sla["weights"][key[2:]] = number
        elif key in ("latency_max", "cost_max", "quality_min", "energy_max", "cap"):
            sla[key] = number
        else:
            raise ValueError(f"--sla {name}: unknown key {key!r}")
    stats.facet_score({"latency": 1, "cost": 1, "quality": 1}, sla)  # validates the bounds
    return name, sla


def configurations(quality: dict, *, quality_key: str, cost_key: str) -> list[dict[str, Any]]:
    """Rows {name, source, system, quality, cost, latency, energy}, each from one system's
    answers in one quality run."""
    rows = []
    for system, v in quality["systems"].items():
        cost = v["tokens_per_query"] if cost_key == "tokens" else v.get("joules_per_query")
        rows.append({"name": system, "source": "quality run (one answer at a time)",
                     "system": system, "quality": QUALITY[quality_key][1](v), "cost": cost,
                     "latency": v["latency_s"]["p50"], "energy": v.get("joules_per_query"),
                     "energy_source": v.get("energy_source"), "judged": v.get("judged")})
    return rows


def perf_levels(perfs: list[dict]) -> list[dict[str, Any]]:
    """Each perf run's levels: throughput, latency and cost against concurrency (no quality)."""
    rows = []
    modes = [p["meta"]["mode"] for p in perfs]
    for perf in perfs:
        m = perf["meta"]
        run = f" ({perf['folder']})" if modes.count(m["mode"]) > 1 and perf.get("folder") else ""
        for lv in perf["levels"]:
            p50, p95 = lv["latency_ms"]["p50"], lv["latency_ms"].get("p95")
            if (lv.get("ok") or 0) < MIN_TAIL_SAMPLES:
                p95 = None  # a tail from too few answers (runs made before the rule)
            rows.append({"name": f"{m['system']} {m['mode']} C={lv['concurrency']}{run}",
                         "requests": lv.get("ok"), "answers_per_s": lv["answers_per_s"],
                         "p50_s": None if p50 is None else p50 / 1000,
                         "p95_s": None if p95 is None else p95 / 1000,
                         "tokens": (lv["prompt_tokens"] or 0) + (lv["completion_tokens"] or 0),
                         "joules": lv["energy"].get("joules_per_answer")})
    return rows


def plot(rows: list[dict], front: list[dict], out: Path, cost_label: str, quality_label: str) -> str:
    plt = R.pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    usable = [r for r in rows if None not in (r["quality"], r["cost"], r["latency"])]
    if usable:
        sc = ax.scatter([r["cost"] for r in usable], [r["quality"] for r in usable],
                        c=[r["latency"] for r in usable], cmap="viridis_r", s=70,
                        edgecolors=["red" if r in front else "none" for r in usable],
                        linewidths=2, zorder=3)
        fig.colorbar(sc, ax=ax, label="p50 latency, s")
        for r in usable:
            ax.annotate(r["name"], (r["cost"], r["quality"]), textcoords="offset points",
                        xytext=(6, 4), fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel(cost_label + " (log)")
    ax.set_ylabel(quality_label)
    ax.set_title("quality against cost; red ring: non-dominated on (quality, cost, latency)")
    return R.savefig(fig, out, "pareto.png")


def add_parser(sub) -> None:
    p = sub.add_parser("pareto", help="the non-dominated configurations and the FACET choice "
                       "for named SLAs, from quality and perf results",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--quality-results", type=Path, default=R.RESULTS / "quality_cpu",
                   help="a `bench quality` results folder (default benchmarks/results/quality_cpu)")
    p.add_argument("--perf-results", default="", help="comma-separated `bench perf` results "
                   "folders (default: none)")
    p.add_argument("--quality", choices=tuple(QUALITY), default="accuracy",
                   help="quality figure: accuracy (default), the judge's average score or "
                   "P(s>=8)")
    p.add_argument("--cost", choices=("tokens", "joules"), default="tokens")
    p.add_argument("--min-questions", type=int, default=10, help="leave out configurations "
                   "whose quality was judged on fewer questions (default 10)")
    p.add_argument("--sla", action="append", default=[], metavar="NAME:KEY=V,…",
                   help="an SLA of your own (latency_max s, cost_max, quality_min, w_latency, "
                   "w_cost, w_quality, cap); repeatable; replaces the built-in ones")
    p.add_argument("--name", default=None, help="results folder name (default pareto_<profile>)")
    p.add_argument("--out", type=Path, default=None)
    p.set_defaults(func=main)


def _load(folder: Path) -> dict:
    path = folder / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no results.json (run the bench command first)")
    return json.loads(path.read_text())


def main(args) -> int:
    quality = _load(args.quality_results)
    perfs = [_load(Path(f)) | {"folder": Path(f).name}
             for f in args.perf_results.split(",") if f.strip()]
    slas = dict(parse_sla(s) for s in args.sla) if args.sla else SLAS
    rows = configurations(quality, quality_key=args.quality, cost_key=args.cost)
    levels = perf_levels(perfs)
    missing = [r["name"] for r in rows if None in (r["quality"], r["cost"], r["latency"])]
    few = [r["name"] for r in rows if r["name"] not in missing
           and (r.get("judged") or 0) < args.min_questions]
    usable = [r for r in rows if r["name"] not in missing and r["name"] not in few]
    energy = bool(usable) and all(r["energy"] is not None for r in usable)
    if not energy:  # FACET weighs only what was measured
        slas = {n: without_energy(sla) for n, sla in slas.items()}
    sources = sorted({src for r in rows for src in (r.get("energy_source") or [])})
    front = stats.pareto_front(usable, maximize=("quality",), minimize=("cost", "latency"))
    choices = {}
    for name, sla in slas.items():
        res = stats.facet_choice(usable, sla)
        choices[name] = {"sla": sla, "best": res["best"]["name"] if res["best"] else None,
                         "scores": {e["row"]["name"]: {"score": e["score"],
                                                       "meets_sla": e["meets_sla"],
                                                       "ratios": e["ratios"]}
                                    for e in res["scored"]}}
    profile = quality.get("profile", "cpu")
    out = R.results_dir(args.name or f"pareto_{profile}", args.out)
    cost_label = "LLM tokens per query" if args.cost == "tokens" else "joules per query"
    quality_label = QUALITY[args.quality][0]
    chash = R.config_hash({"quality": quality.get("config_hash"),
                           "perf": [p["meta"].get("config_hash") for p in perfs],
                           "slas": slas, "quality_key": args.quality, "cost": args.cost})
    R.write_json(out / "results.json", {"command": R.command_line(args), "config_hash": chash,
                                        "rows": rows, "perf_levels": levels,
                                        "energy_axis": energy, "energy_sources": sources,
                                        "front": [r["name"] for r in front],
                                        "excluded": missing, "too_few_questions": few,
                                        "choices": choices})
    png = plot(rows, front, out, cost_label, quality_label)
    lines = R.header(f"Pareto front and FACET choice — profile `{profile}`", R.command_line(args),
                     chash)
    lines += [f"Configurations from `{args.quality_results}`: quality ({quality_label}), "
              f"cost ({cost_label}) and latency (p50 seconds per answer, this machine) of each "
              "come from that one run's answers. "
              + ("FACET weighs energy too (joules per answer; source "
                 f"{', '.join(sources)})." if energy else
                 f"Energy was not measured (source: {', '.join(sources) or 'unavailable'}), so "
                 "FACET weighs latency, cost and quality only."), ""]
    if missing:
        lines += [f"Left out (a figure was not measured): {', '.join(missing)}.", ""]
    if few:
        lines += [f"Left out of the front and the choice (quality judged on fewer than "
                  f"{args.min_questions} questions): {', '.join(few)}.", ""]
    lines += ["| configuration | judged | quality | cost | p50 latency s | non-dominated | "
              + " | ".join(f"FACET {n}" for n in slas) + " |",
              "|---|---:|---:|---:|---:|---|" + "---:|" * len(slas)]
    for r in rows:
        facet = []
        for n in slas:
            sc = choices[n]["scores"].get(r["name"])
            facet.append("–" if sc is None else f"{sc['score']:.2f}"
                         + ("" if sc["meets_sla"] else " ✗"))
        lines.append(f"| {r['name']} | {r.get('judged') or '–'} | {R.num(r['quality'], '{:.3f}')} | "
                     f"{R.num(r['cost'], '{:,.0f}')} | {R.num(r['latency'], '{:.1f}')} | "
                     f"{'yes' if r in front else ''} | " + " | ".join(facet) + " |")
    lines += ["", "✗: misses at least one bound of that SLA (not eligible).", "",
              "## The choice per SLA", ""]
    for n, c in choices.items():
        s = c["sla"]
        w = s.get("weights") or {}
        joules = (f", energy ≤ {s['energy_max']:,.0f} J" if s.get("energy_max") is not None
                  else "")
        lines.append(f"- **{n}** (latency ≤ {s['latency_max']:g} s, cost ≤ {s['cost_max']:,.0f}, "
                     f"quality ≥ {s['quality_min']:g}{joules}; weights "
                     + ", ".join(f"{d} {w.get(d, 1):g}" for d in
                                 ("latency", "cost", "quality", "energy")
                                 if d != "energy" or joules) + "): "
                     + (f"**{c['best']}**" if c["best"] else "no configuration meets it"))
    if levels:
        lines += ["", "## Throughput against concurrency (perf runs; no quality measured, so "
                  "not points of the front)", "",
                  "| run and level | requests | answers/s | p50 s | p95 s | tokens/answer | "
                  "joules/answer |", "|---|---:|---:|---:|---:|---:|---:|"]
        for lv in levels:
            lines.append(f"| {lv['name']} | {lv['requests'] or '–'} | "
                         f"{R.num(lv['answers_per_s'], '{:.3f}')} | {R.num(lv['p50_s'])} | "
                         f"{R.num(lv['p95_s'])} | {R.num(lv['tokens'], '{:,.0f}')} | "
                         f"{R.num(lv['joules'])} |")
    lines += ["", f"![{png}]({png})", ""]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    print("non-dominated: " + ", ".join(r["name"] for r in front))
    for n, c in choices.items():
        print(f"SLA {n}: {c['best'] or 'none meets it'}")
    print(f"report: {out / 'report.md'}")
    return 0
