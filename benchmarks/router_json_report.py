"""One side-by-side report of two router-extraction runs (``benchmarks.router_eval --engine``):
the same questions, prompt, schema, weights and greedy decoding through two JSON-constraining
engines (transformers + Outlines, vLLM structured outputs).

Per engine: schema-valid count, how the invalid outputs failed, agreement with the question's
own filing, tokens and (untimed: measured beside other work) latency. Across the engines,
question by question: the same extracted tickers, fiscal years, companies, whole JSON.

    python -m finrag.benchmarks.router_eval --compare DIR_A DIR_B --out OUT
"""

from __future__ import annotations

import json
from pathlib import Path

from finrag.benchmarks.report import REPO

# how each engine constrains the router's JSON, as the reports name it
ENGINE_LABELS = {"transformers": "transformers, Outlines JSON-schema constraint",
                 "vllm": "vLLM structured outputs, xgrammar JSON-schema constraint",
                 "llamacpp": "llama.cpp on the 4-bit GGUF, its JSON-schema grammar",
                 "llamacpp-outlines": "llama.cpp on the 4-bit GGUF, Outlines JSON-schema "
                                      "constraint"}

FAILURES = ["truncated", "parse error", "schema violation", "refused"]
# how the constraints treat whitespace and optional fields, which changes what the model writes
WHITESPACE = (
    "Outlines (on transformers and on llama.cpp) allows one optional space between JSON "
    "tokens; llama.cpp's grammar writes every field, in the schema's order, with at most one "
    "space; vLLM's JSON request ran with `disable_any_whitespace` (compact JSON) until it was "
    "given the same grammar (`models.vllm_engine.json_constraint`: every field, one space after "
    "`,` and `:`). The prompt's few-shot answers are written with a space after `:` and `,`, "
    "so where the texts differ the model's next token follows a different context.")


def load_run(folder: Path) -> tuple[dict, dict[str, dict]]:
    """A run's results.json and its rows by question id."""
    summary = json.loads((folder / "results.json").read_text())
    rows = {}
    for line in (folder / "routes.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            rows[row["id"]] = row
    return summary, rows


def _fields(route: dict | None, key: str):
    if route is None:
        return None
    if key == "companies":
        return sorted({c.strip().lower() for c in route[key]})
    return sorted(set(route[key]))


def cross_agreement(rows_a: dict[str, dict], rows_b: dict[str, dict], ids: list[str]) -> dict:
    """Per question of ``ids``, whether both engines gave valid JSON and the same tickers, fiscal
    years, companies (case-insensitive sets) and the same whole object."""
    out = {"questions": len(ids), "both_valid": 0, "tickers": 0, "fiscal_years": 0,
           "companies": 0, "tickers_and_years": 0, "identical_json": 0,
           "same_prompt_tokens": 0, "same_field": {}, "differences": []}
    for qid in ids:
        a, b = rows_a[qid], rows_b[qid]
        if a["usage"].get("prompt_tokens") == b["usage"].get("prompt_tokens"):
            out["same_prompt_tokens"] += 1
        if not (a["valid"] and b["valid"]):
            if a["valid"] or b["valid"]:
                out["differences"].append({"id": qid, "what": "validity",
                                           "a": a["failure"] or "valid",
                                           "b": b["failure"] or "valid"})
            continue
        out["both_valid"] += 1
        same = {k: _fields(a["route"], k) == _fields(b["route"], k)
                for k in ("tickers", "fiscal_years", "companies")}
        for k, v in same.items():
            out[k] += v
        out["tickers_and_years"] += same["tickers"] and same["fiscal_years"]
        out["identical_json"] += a["route"] == b["route"]
        for k in a["route"]:  # every field as written, order included
            out["same_field"][k] = out["same_field"].get(k, 0) + (a["route"][k] == b["route"][k])
        for k in ("companies", "tickers", "fiscal_years"):
            if not same[k]:
                out["differences"].append({"id": qid, "what": k, "a": a["route"][k],
                                           "b": b["route"][k]})
    return out


def engine_stats(rows: list[dict]) -> dict:
    n = len(rows)
    lat = [r["usage"]["latency_s"] for r in rows if "latency_s" in r["usage"]]
    return {
        "questions": n,
        "valid": sum(r["valid"] for r in rows),
        "failures": {k: sum(r.get("failure") == k for r in rows) for k in FAILURES},
        "company_agrees": sum(r["company_match"] for r in rows),
        "year_agrees": sum(r["year_match"] for r in rows),
        "both_agree": sum(r["company_match"] and r["year_match"] for r in rows),
        "empty_metric": sum(r["valid"] and not r["route"]["metric"] for r in rows),
        "empty_search_query": sum(r["valid"] and not r["route"]["search_query"] for r in rows),
        "mean_prompt_tokens": sum(r["usage"].get("prompt_tokens", 0) for r in rows) / n,
        "mean_completion_tokens": sum(r["usage"].get("completion_tokens", 0) for r in rows) / n,
        "max_completion_tokens": max(r["usage"].get("completion_tokens", 0) for r in rows),
        "mean_latency_s": sum(lat) / len(lat) if lat else None,
    }


def write_comparison(folders: list[Path], out: Path, command: str) -> dict:
    """Compare the questions both runs have rows for; writes report.md, results.json and
    router_json.png into ``out``."""
    (sa, ra), (sb, rb) = (load_run(Path(f)) for f in folders)
    if sa.get("model") != sb.get("model"):
        raise ValueError(f"the runs used different models: {sa.get('model')} vs {sb.get('model')}")
    ids = [qid for qid in ra if qid in rb]
    if not ids:
        raise ValueError(f"no question has rows in both {folders[0]} and {folders[1]}")
    names = [sa.get("engine", "transformers"), sb.get("engine", "transformers")]
    stats = {name: engine_stats([rows[q] for q in ids]) for name, rows in zip(names, (ra, rb))}
    for name, rows in zip(names, (ra, rb)):  # a run may hold more questions than the other
        stats[name]["run_questions"] = len(rows)
        stats[name]["run_valid"] = sum(r["valid"] for r in rows.values())
    cross = cross_agreement(ra, rb, ids)
    out.mkdir(parents=True, exist_ok=True)
    results = {"command": command, "model": sa["model"], "runs": [str(f) for f in folders],
               "run_commands": [sa.get("command"), sb.get("command")],
               "attempts": [sa.get("attempts"), sb.get("attempts")],
               "engines": stats, "cross": cross}
    (out / "results.json").write_text(json.dumps(results, indent=2))
    _plot(stats, cross, sa["model"], out / "router_json.png")
    (out / "report.md").write_text(_report(results, names, folders, out))
    return results


def _rel(path: Path, base: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)


def _report(results: dict, names: list[str], folders: list[Path], out: Path) -> str:
    stats, cross = results["engines"], results["cross"]
    n = cross["questions"]
    lines = [
        f"# Router JSON: {' vs '.join(names)} on {n} questions", "",
        f"Side by side: the {n} questions both runs hold rows for.", "",
        f"Model: {results['model']}, the same weights on both engines ("
        + ("the packaged 4-bit GGUF itself on llama.cpp, its float32 conversion on the others"
           if any(n.startswith("llamacpp") for n in names) else "one float32 folder")
        + "), the same chat prompt (`retrieval/routing/schema.py`, `router_messages`), the same schema "
        f"(`RouterOutput`), greedy decoding, {results['attempts'][0]} / {results['attempts'][1]} "
        "attempt(s) a question (1 = the greedy decode alone, no sampled retry).", "",
        "Runs (rows per engine, resumable):", "",
    ]
    for name, folder, cmd in zip(names, folders, results["run_commands"]):
        lines.append(f"- {name} ({ENGINE_LABELS.get(name, name)}): `{_rel(folder, REPO)}` — "
                     f"`{cmd}`")
    lines += [f"- this report: `{results['command']}`", "",
              *(["The vLLM run is made with the vLLM venv's python (`.venv-vllm/bin/python`), "
                 "the others with the main venv's (`.venv/bin/python`).", ""]
                if "vllm" in names else []),
              "| | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]

    def row(label, fmt):
        lines.append(f"| {label} | " + " | ".join(fmt(stats[e]) for e in names) + " |")

    row("schema-valid", lambda s: f"**{s['valid']}/{s['questions']}**")
    if any(s["run_questions"] != n for s in stats.values()):
        row("schema-valid over all the run's questions (not only the shared ones)",
            lambda s: f"{s['run_valid']}/{s['run_questions']}")
    for kind in FAILURES:
        row(f"invalid: {kind}", lambda s, k=kind: str(s["failures"][k]))
    row("company agrees with the filing", lambda s: f"{s['company_agrees']}/{s['questions']}")
    row("fiscal year agrees with the filing", lambda s: f"{s['year_agrees']}/{s['questions']}")
    row("both agree", lambda s: f"{s['both_agree']}/{s['questions']}")
    row("empty `metric` (valid outputs)", lambda s: f"{s['empty_metric']}/{s['valid']}")
    row("empty `search_query` (valid outputs)",
        lambda s: f"{s['empty_search_query']}/{s['valid']}")
    row("mean prompt tokens", lambda s: f"{s['mean_prompt_tokens']:.1f}")
    row("mean / max completion tokens",
        lambda s: f"{s['mean_completion_tokens']:.1f} / {s['max_completion_tokens']}")
    row("mean latency s (measured beside other work: not a timing)",
        lambda s: "-" if s["mean_latency_s"] is None else f"{s['mean_latency_s']:.2f}")
    lines += [
        "", "Failure kinds: *truncated* = cut off at max_tokens, *parse error* = not JSON, "
        "*schema violation* = JSON the grammar allowed but pydantic rejects (e.g. a length or "
        "pattern bound), *refused* = no output (the engine rejected the request or wrote "
        "nothing).", "",
        f"## The two engines question by question ({n} questions)", "",
        "| same … | questions |", "|---|---:|",
        f"| both schema-valid | {cross['both_valid']}/{n} |",
        f"| tickers | {cross['tickers']}/{cross['both_valid']} |",
        f"| fiscal years | {cross['fiscal_years']}/{cross['both_valid']} |",
        f"| tickers and fiscal years | {cross['tickers_and_years']}/{cross['both_valid']} |",
        f"| companies (case-insensitive) | {cross['companies']}/{cross['both_valid']} |",
        f"| whole JSON object | {cross['identical_json']}/{cross['both_valid']} |",
        f"| prompt tokens | {cross['same_prompt_tokens']}/{n} |", "",
        "Each field exactly as written (lists in their order): "
        + ", ".join(f"`{k}` {v}/{cross['both_valid']}" for k, v in cross["same_field"].items())
        + ".", "",
        "Over the questions both engines answered with valid JSON, as sets. " + WHITESPACE, "",
        "![router JSON](router_json.png)", "", "## Differences", "",
    ]
    if cross["differences"]:
        lines += [f"| question | field | {names[0]} | {names[1]} |", "|---|---|---|---|"]
        for d in cross["differences"]:
            lines.append(f"| {d['id']} | {d['what']} | `{json.dumps(d['a'])}` | "
                         f"`{json.dumps(d['b'])}` |")
    else:
        lines.append("(none: every field compared agrees)")
    return "\n".join(lines) + "\n"


def _plot(stats: dict, cross: dict, model: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(stats)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), width_ratios=[1.3, 1])
    metrics = [("schema-valid", "valid"), ("company", "company_agrees"),
               ("fiscal year", "year_agrees"), ("company+year", "both_agree")]
    width = 0.8 / len(names)
    colors = ["#2471a3", "#229954"]
    for j, name in enumerate(names):
        s = stats[name]
        vals = [s[key] / s["questions"] for _, key in metrics]
        ys = [i + (j - 0.5) * width for i in range(len(metrics))]
        left.barh(ys, vals, width, label=name, color=colors[j % 2])
        for y, v in zip(ys, vals):
            left.text(v, y, f" {v:.0%}", va="center", fontsize=8)
    left.set_yticks(range(len(metrics)), [m for m, _ in metrics])
    left.invert_yaxis()
    left.set_xlim(0, 1.18)
    left.set_title("per engine (vs the question's filing)", fontsize=9)
    left.legend(fontsize=8, loc="lower right")
    both = cross["both_valid"] or 1
    pairs = [("tickers", "tickers"), ("fiscal years", "fiscal_years"),
             ("companies", "companies"), ("whole JSON", "identical_json")]
    vals = [cross[key] / both for _, key in pairs]
    right.barh([p for p, _ in pairs], vals, color="#7d3c98")
    for y, v in enumerate(vals):
        right.text(v, y, f" {v:.0%}", va="center", fontsize=8)
    right.invert_yaxis()
    right.set_xlim(0, 1.18)
    right.set_title(f"same answer on both engines ({cross['both_valid']} both valid)", fontsize=9)
    fig.suptitle(f"Router JSON, {model.split('/')[-1]}: {' vs '.join(names)} "
                 f"on {cross['questions']} questions", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
