"""The vector index benchmark's projection to a larger corpus and its report: report.md, its
plots, and the snippet docs/benchmarks.md carries (``benchmarks.vector_index`` runs it)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from finrag.benchmarks import report as R
from finrag.benchmarks.vector_index_options import (DOCS_BEGIN, DOCS_END, GIB, HNSW_M,
                                                    MEMORY_SHARE, OPTIONS, STREAM, Settings,
                                                    computed_bytes, nlist_for)


# ---------------------------------------------------------------------------------------------
# projection


def _fixed_bytes(option: str, n: int, d: int) -> float:
    """What of an index does not grow with n: IVF centroids (plus PQ codebooks)."""
    if option in ("ivf", "ivfpq", "ivfsq8"):
        return nlist_for(n) * d * 4 + (256 * d * 4 if option == "ivfpq" else 0)
    return 0.0


def project(result: dict[str, Any], target: int) -> list[dict[str, Any]]:
    """Per option and search setting, from its measured rows: the index size at ``target``
    (measured bytes per vector less the fixed part, times target, plus the target's fixed
    part; VectorIndex's resident size adds its flat index) and p50 (a power law through the
    two largest measured sizes where two exist; else flat ∝ n, IVF ∝ √n (nlist = 4√n at a
    fixed nprobe), HNSW ∝ log n)."""
    d = result["settings"]["dim"]
    measured = [r for r in result["rows"] if r.get("status") == "measured"]
    out = []
    for option in [STREAM, *OPTIONS]:
        mine = sorted((r for r in measured if r["option"] == option), key=lambda r: r["size"])
        if not mine:
            continue
        last = mine[-1]
        size: dict[str, Any] = {}
        if option != STREAM:
            own = last["index_bytes"].get(option, last["index_bytes"].get("flat"))
            per = (own - _fixed_bytes(option, last["size"], d)) / last["size"]
            size = {"bytes_per_vector": per,
                    "index_bytes": per * target + _fixed_bytes(option, target, d)}
            size["resident_bytes"] = size["index_bytes"]
            if option in ("ivf", "hnsw"):  # VectorIndex keeps the flat index beside it
                flat_per = last["index_bytes"]["flat"] / last["size"]
                size["resident_bytes"] += flat_per * target
        for search in last["searches"]:
            pts = [(r["size"], x["p50_ms"]) for r in mine for x in r["searches"]
                   if x["setting"] == search["setting"] and x["p50_ms"]]
            alpha = None
            if len(pts) >= 2 and pts[-1][0] > pts[-2][0] and pts[-2][1] > 0:
                (n1, t1), (n2, t2) = pts[-2], pts[-1]
                alpha = math.log(t2 / t1) / math.log(n2 / n1)
            if alpha is not None and 0.0 <= alpha <= 1.2:
                p50, how = t2 * (target / n2) ** alpha, (f"power law through n={n1:,} and "
                                                         f"n={n2:,} (exponent {alpha:.2f})")
            else:
                n2, t2 = pts[-1]
                odd = "" if alpha is None else f" (fitted exponent {alpha:.2f} rejected)"
                if option in ("flat", STREAM):
                    p50, how = t2 * target / n2, f"∝ n from n={n2:,}{odd}"
                elif option == "hnsw":
                    p50, how = (t2 * math.log(target) / math.log(n2),
                                f"∝ log n from n={n2:,}{odd}")
                else:
                    p50, how = t2 * math.sqrt(target / n2), f"∝ √n from n={n2:,}{odd}"
            out.append({"option": option, "setting": search["setting"], "from_size": last["size"],
                        "from_sizes": [n for n, _ in pts], "recall_at_from": search["recall"],
                        "p50_ms": p50, "p50_how": how, **size})
    return out


# ---------------------------------------------------------------------------------------------
# report


def _gb(v: float | None) -> str:
    return "–" if v is None else f"{v / 1e9:,.2f} GB"


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v:,.3f}"


def _short(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k" if n >= 1000 else str(n)


def plot(result: dict[str, Any], out: Path) -> list[str]:
    plt = R.pyplot()
    rows = [r for r in result["rows"] if r.get("status") == "measured"]
    sizes = result["settings"]["sizes"]
    names = []
    fig, axes = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4), squeeze=False)
    for ax, n in zip(axes[0], sizes):
        for r in (r for r in rows if r["size"] == n):
            xs = [x["p50_ms"] for x in r["searches"]]
            ys = [x["recall"] for x in r["searches"]]
            ax.plot(xs, ys, marker="o", label=r["option"])
            for x in r["searches"]:
                ax.annotate(x["setting"].split("=")[-1], (x["p50_ms"], x["recall"]),
                            fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
        R.plain_log_ticks(ax)
        ax.set_xlabel("p50 ms / query (single query)")
        ax.set_ylabel(f"recall@{result['settings']['k']} vs exact")
        ax.set_title(f"n = {n:,}")
        ax.legend(fontsize=8)
    names.append(R.savefig(fig, out, "recall_latency.png"))

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for option in OPTIONS:
        mine = sorted((r for r in rows if r["option"] == option), key=lambda r: r["size"])
        if mine:
            axes[0].plot([r["size"] for r in mine], [r["bytes_per_vector"] for r in mine],
                         marker="o", label=option)
            axes[1].plot([r["size"] for r in mine], [r["build_s"] for r in mine], marker="o",
                         label=option)
    for ax, label in zip(axes, ("index bytes / vector", "build s (train + add)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("vectors")
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
    names.append(R.savefig(fig, out, "size_build.png"))
    return names


def write_report(result: dict[str, Any], out: Path) -> str:
    s, g = result["settings"], result["generator"]
    target = result["target"]
    lines = R.header(
        "Vector index options past one machine's RAM", result["command"],
        R.config_hash({"settings": {k: v for k, v in s.items() if k != "memory_limit"},
                       "generator": g}),
        [f"Generated vectors: {s['dim']} dims (the gpu profile's BAAI/bge-m3), unit length, "
         f"inner product; {g['centres']:,} clusters (log-normal sizes), each over "
         f"{g['local_dims']} local directions (spread {g['spread']}) plus isotropic noise "
         f"{g['noise']}, seed {g['seed']}; {s['queries']} queries from the same generator, "
         f"not in the base set. faiss {s['faiss']}, {s['threads']} threads. Times are of faiss "
         f"alone (generating the vectors is not counted); search is one query at a time, "
         f"p95 from 30 queries or more. Recall@{s['k']}: share of the exact top {s['k']} "
         f"returned, averaged over the queries."])
    if result.get("partial"):
        lines += ["**Partial: the run stopped before its end; these are the rows it finished.**",
                  ""]
    lines += ["## Measured", "",
              "Memory: `index` is the structure's serialized size (what it holds in RAM); "
              "`RSS peak / kept` are the process's resident memory growth during the build and "
              "after it. `computed peak` is the formula the run checks, before building, "
              "against " + (f"{s['memory_limit'] / GIB:.1f} GiB (`--max-memory-gb`)"
                            if s.get("memory_limit") else
                            f"{MEMORY_SHARE:.0%} of the memory available then") + ".", "",
              "| vectors | option | implementation | build s (train/derive + add) | index | "
              "bytes/vector | RSS peak / kept | computed peak | setting | recall@10 | p50 ms | "
              "p95 ms |", "|---:|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    for r in result["rows"]:
        head = f"| {r['size']:,} | {r['option']} | {r['implementation']} |"
        peak = _gb(r["computed"]["peak"])
        if r.get("status") != "measured":
            lines.append(f"{head} **not run**: {r['reason']} | | | | {peak} | | | | |")
            continue
        if r["option"] == STREAM:
            x = r["searches"][0]
            lines.append(f"{head} – (no index: blocks streamed) | – | – | – | {peak} | "
                         f"exact ({x['queries']} queries timed) | 1 (by definition) | "
                         f"{_ms(x['p50_ms'])} | {_ms(x['p95_ms'])} |")
            continue
        parts = " + ".join(f"{k} {_gb(v)}" for k, v in r["index_bytes"].items())
        first = r.get("train_s", r.get("derive_s", 0.0))
        build = f"{r['build_s']:,.1f} ({first:,.1f} + {r['add_s']:,.1f})"
        rss = (f"{_gb(r['rss_peak_delta'])} / {_gb(r['rss_retained_delta'])}"
               if r.get("rss_peak_delta") is not None else "–")
        for j, x in enumerate(r["searches"]):
            lead = (f"{head} {build} | {parts} | {r['bytes_per_vector']:,.1f} | {rss} | {peak} |"
                    if j == 0 else "| | | | | | | | |")
            lines.append(f"{lead} {x['setting']} | {x['recall']:.4f} | {_ms(x['p50_ms'])} | "
                         f"{_ms(x['p95_ms'])} |")
    lines += ["", "IVF lists: VectorIndex's rule, nlist = min(4√n, n/39). ivf is VectorIndex's "
              "(trained by faiss on up to 256 vectors a list; its `derive` time is the training "
              "and add of the derived index, its `add` the flat index's); ivfpq "
              f"(m = {s['pq_m']}, 8 bits) and ivfsq8 are plain faiss trained on "
              f"{s['train_per_list']} vectors a list. hnsw: M = {HNSW_M}, faiss's "
              "efConstruction 40. VectorIndex's resident memory is its flat index plus the "
              "derived one (both are listed under `index`). flat-stream: exact search with "
              "the base streamed block by block, each query's time the sum of its single-query "
              "searches over the blocks."]
    for r in result["rows"]:
        if r.get("pilot"):
            lines.append(f"- {r['option']} at {r['size']:,}: build projected at "
                         f"{r['projected_build_s']:,.0f} s from a pilot of {r['pilot']['size']:,}.")
    proj = project(result, target)
    lines += ["", f"## Projected to {target:,} vectors of {s['dim']} dims", "",
              "A projection, not a measurement: index size from the measured bytes per vector "
              "of the largest measured row (less the IVF centroids, which are added back at "
              "the projected nlist); p50 as stated per row. Recall is the measured one at that "
              "row's size: at a fixed nprobe recall tends to fall as nlist grows.", ""]
    lines += projection_table(proj, result)
    lines += ["", f"Computed by formula alone (not measured; `computed_bytes`) at "
                  f"{target:,} vectors:", "", *computed_table(_settings_of(result), target)]
    lines += ["", *[f"![{n}]({n})" for n in plot(result, Path(result["out"]))], ""]
    return "\n".join(lines)


def projection_table(proj: list[dict[str, Any]], result: dict[str, Any]) -> list[str]:
    target = result["target"]
    lines = [f"| option | setting | projected index at {_short(target)} | resident (with "
             f"VectorIndex's flat) | projected p50 ms | p50 projected by | recall@10 measured "
             f"at |", "|---|---|---:|---:|---:|---|---|"]
    for p in proj:
        size = _gb(p.get("index_bytes")) if "index_bytes" in p else "– (streamed)"
        res = _gb(p.get("resident_bytes")) if "resident_bytes" in p else "–"
        lines.append(f"| {p['option']} | {p['setting']} | {size} | {res} | {_ms(p['p50_ms'])} | "
                     f"{p['p50_how']} | {p['recall_at_from']:.4f} at {p['from_size']:,} |")
    not_run = sorted({r["option"] for r in result["rows"] if r.get("status") != "measured"}
                     - {p["option"] for p in proj})
    for option in not_run:
        lines.append(f"| {option} | – | never measured in this run: no projection | | | | |")
    return lines


def computed_table(s: Settings, target: int) -> list[str]:
    """Sizes at ``target`` by formula alone (``computed_bytes``): no measurement in them."""
    lines = [f"| option | computed index at {_short(target)} | computed resident | computed "
             f"peak while building |", "|---|---:|---:|---:|"]
    for option in OPTIONS:
        c = computed_bytes(option, target, s)
        lines.append(f"| {option} | {_gb(c['index'])} | {_gb(c['resident'])} | "
                     f"{_gb(c['peak'])} |")
    return lines


def _settings_of(result: dict[str, Any]) -> Settings:
    keep = Settings.__dataclass_fields__
    return Settings(**{k: (tuple(v) if isinstance(v, list) else v)
                       for k, v in result["settings"].items() if k in keep})


def docs_snippet(result: dict[str, Any]) -> str:
    s = result["settings"]
    proj = project(result, result["target"])
    lines = [DOCS_BEGIN, "",
             f"From `{R.shown_path(Path(result['out']) / 'report.md')}` (written by "
             f"`python -m finrag.benchmarks.vector_index --report-only --write-docs "
             f"docs/benchmarks.md`; measured sizes {', '.join(f'{n:,}' for n in s['sizes'])}, "
             f"{s['dim']} dims, {s['threads']} threads). Projected, not measured:", "",
             *projection_table(proj, result), "",
             "Computed by formula (`computed_bytes`: vectors, codes, ids, links, centroids; "
             "IVF's nlist = 4√n), for comparison:", "",
             *computed_table(_settings_of(result), result["target"]), "", DOCS_END]
    return "\n".join(lines)


def write_docs(path: Path, snippet: str) -> None:
    text = path.read_text(encoding="utf-8")
    a, b = text.find(DOCS_BEGIN), text.find(DOCS_END)
    if a < 0 or b < a:
        raise SystemExit(f"{path}: no {DOCS_BEGIN} … {DOCS_END} block to replace")
    path.write_text(text[:a] + snippet + text[b + len(DOCS_END):], encoding="utf-8")


def render(result: dict[str, Any], out: Path, docs: Path | None = None) -> str:
    """Write report.md, its plots and docs_snippet.md into ``out`` (and the snippet into the
    ``docs`` page's block); returns the report."""
    result["out"] = str(out)
    text = write_report(result, out)
    (out / "report.md").write_text(text, encoding="utf-8")
    snippet = docs_snippet(result)
    (out / "docs_snippet.md").write_text(snippet + "\n", encoding="utf-8")
    if docs:
        write_docs(docs, snippet)
    return text
