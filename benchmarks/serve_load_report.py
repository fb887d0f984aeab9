"""The load benchmark's figures and report (``benchmarks/serve_load.py`` runs the load): the
outcome of each request, percentiles, the summary of a level, the server's own counters read
from /metrics, and the markdown report with its plots."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

from finrag.benchmarks.ingest_search import pct

ANSWER_PATH = "/v1/answer"
COUNTER = "finrag_requests_total"

# outcomes of one request; only the first two are expected under load
OK, REJECTED = "ok", "rejected"  # 200 Answer; 503 with Retry-After
REJECTED_NO_RETRY_AFTER = "rejected_no_retry_after"
HTTP_ERROR, BAD_BODY = "http_error", "bad_body"  # another status; a 200 that is no Answer
TIMEOUT, CONN_ERROR, CLIENT_ERROR = "timeout", "conn_error", "client_error"  # no reply
EXPECTED = (OK, REJECTED)


# pure figures ---------------------------------------------------------------------------
MIN_TAIL_SAMPLES = 30  # a p95/p99 from fewer samples is not reported


def percentile(values: list[float], q: float) -> float | None:
    """The q-quantile (0..1, linear between order statistics); None for no values, and None
    for a tail quantile (q > 0.9) of fewer than ``MIN_TAIL_SAMPLES`` values."""
    if not values or (q > 0.9 and len(values) < MIN_TAIL_SAMPLES):
        return None
    return pct(list(values), q)


def _r(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def classify(status: int | None, retry_after: str | None, body: dict | None) -> str:
    """The outcome of one reply (``status`` None: no reply, see the caller)."""
    if status == 200:
        ok = isinstance(body, dict) and "answer" in body and isinstance(body.get("usage"), dict)
        return OK if ok else BAD_BODY
    if status == 503:
        return REJECTED if retry_after else REJECTED_NO_RETRY_AFTER
    return HTTP_ERROR


def summarise(rows: list[dict], wall_s: float, sent: int | None = None) -> dict:
    """A level's figures from its per-request rows (see ``send_answer`` for their fields).
    ``sent``: requests the workers issued (default: one per row); replies are rows with an
    HTTP status, so lost = sent − replies counts timeouts, connection errors and requests
    that left no row at all."""
    sent = len(rows) if sent is None else sent
    outcomes = Counter(r["outcome"] for r in rows)
    replied = [r for r in rows if r.get("status") is not None]
    oks = [r for r in rows if r["outcome"] == OK]
    lat = [r["latency_ms"] for r in oks]
    other = Counter(str(r["status"]) for r in rows if r["outcome"] in (HTTP_ERROR, BAD_BODY))
    kinds = Counter(r.get("error_kind") or "?" for r in rows
                    if r.get("status") not in (None, 200))

    def mean(key: str) -> float | None:
        vals = [r[key] for r in oks if r.get(key) is not None]
        return _r(sum(vals) / len(vals), 2) if vals else None

    stages: dict[str, list[float]] = {}
    for r in oks:
        for stage, ms in (r.get("timings_ms") or {}).items():
            if stage != "total" and isinstance(ms, (int, float)):
                stages.setdefault(stage, []).append(float(ms))
    measured = [r for r in oks if r.get("joules") is not None]
    if measured:
        energy = {"joules_per_answer": _r(sum(r["joules"] for r in measured) / len(measured), 3),
                  "answers_measured": len(measured),
                  "source": ", ".join(sorted({str(r.get("energy_source")) for r in measured})),
                  "scope": ", ".join(sorted({str(r.get("energy_scope")) for r in measured}))}
    else:
        sources = sorted({str(r.get("energy_source")) for r in oks
                          if r.get("energy_source") not in (None, "unavailable")})
        energy = {"joules_per_answer": None, "answers_measured": 0,
                  "source": "unavailable" + (f" (source {', '.join(sources)}, no joules)"
                                             if sources else "")}
    rejected = [r["latency_ms"] for r in rows if r["outcome"] == REJECTED]
    server_total = [r["server_total_ms"] for r in oks if r.get("server_total_ms") is not None]
    return {
        "sent": sent,
        "replies": len(replied),
        "ok": outcomes[OK],
        "rejected_503": outcomes[REJECTED],
        "rejected_503_without_retry_after": outcomes[REJECTED_NO_RETRY_AFTER],
        "other_errors_by_status": dict(sorted(other.items())),
        "error_kinds": dict(sorted(kinds.items())),
        "timeouts": outcomes[TIMEOUT],
        "connection_errors": outcomes[CONN_ERROR],
        "client_errors": outcomes[CLIENT_ERROR],
        "lost": sent - len(replied),
        "unexpected": sum(n for o, n in outcomes.items() if o not in EXPECTED),
        "wall_s": round(wall_s, 3),
        "answers_per_s": round(outcomes[OK] / wall_s, 4) if wall_s > 0 else None,
        "latency_ms": {"p50": _r(percentile(lat, 0.5)), "p95": _r(percentile(lat, 0.95)),
                       "p99": _r(percentile(lat, 0.99)),
                       "mean": _r(sum(lat) / len(lat)) if lat else None,
                       "max": _r(max(lat)) if lat else None},
        "server_total_ms_p50": _r(percentile(server_total, 0.5)),
        "rejection_latency_ms_p50": _r(percentile(rejected, 0.5)),
        "retry_after_s": sorted({r["retry_after"] for r in rows if r.get("retry_after")}),
        "prompt_tokens": mean("prompt_tokens"),
        "completion_tokens": mean("completion_tokens"),
        "llm_calls": mean("llm_calls"),
        "cpu_seconds": mean("cpu_seconds"),
        "stage_p50_ms": {s: _r(percentile(v, 0.5)) for s, v in stages.items()},  # run order
        "stage_ms": {s: {"p50": _r(percentile(v, 0.5)), "p95": _r(percentile(v, 0.95)),
                         "p99": _r(percentile(v, 0.99)), "mean": _r(sum(v) / len(v))}
                     for s, v in stages.items()},
        "energy": energy,
    }

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?\s*$')

_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_counter(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """The samples of one metric in Prometheus text: [(labels, value)]."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m or m.group(1) != name:
            continue
        labels = {k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                  for k, v in _LABEL.findall(m.group(3) or "")}
        try:
            out.append((labels, float(m.group(4))))
        except ValueError:
            continue
    return out


def requests_by_code(text: str, endpoint: str = ANSWER_PATH) -> dict[str, float]:
    """``finrag_requests_total`` of one endpoint, by status code."""
    counts: dict[str, float] = {}
    for labels, value in parse_counter(text, COUNTER):
        if labels.get("endpoint") == endpoint:
            code = labels.get("code", "?")
            counts[code] = counts.get(code, 0.0) + value
    return counts


def counter_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    """after − before per code, codes with no change left out."""
    delta = {c: after.get(c, 0.0) - before.get(c, 0.0) for c in set(before) | set(after)}
    return {c: int(round(v)) for c, v in sorted(delta.items()) if round(v)}


def client_by_code(rows: list[dict]) -> dict[str, int]:
    return dict(sorted(Counter(str(r["status"]) for r in rows
                               if r.get("status") is not None).items()))

# report ---------------------------------------------------------------------------------
def draw_plots(levels: list[dict], rows: list[dict], out: Path, title: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cs = [lv["concurrency"] for lv in levels]
    files = []

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    rps = [lv["answers_per_s"] or 0 for lv in levels]
    ax.plot(cs, rps, "o-", color="#2471a3", label="answers (200) per s")
    for c, v in zip(cs, rps):
        ax.annotate(f"{v:.3g}", (c, v), textcoords="offset points", xytext=(0, 6),
                    ha="center", fontsize=8)
    rej = [lv["rejected_503"] / lv["wall_s"] if lv["wall_s"] else 0 for lv in levels]
    if any(rej):
        ax.plot(cs, rej, "s--", color="#c0392b", label="503 rejections per s")
    ax.set_xscale("log", base=2)
    ax.set_xticks(cs, [str(c) for c in cs])
    ax.set_xlabel("concurrent clients (closed loop)")
    ax.set_ylabel("per second")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Throughput — {title}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=120)
    plt.close(fig)
    files.append("throughput.png")

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for key, style, colour in (("p50", "o-", "#2471a3"), ("p95", "s--", "#c0392b")):
        vals = [lv["latency_ms"][key] for lv in levels]
        pts = [(c, v / 1000) for c, v in zip(cs, vals) if v is not None]
        if pts:
            ax.plot(*zip(*pts), style, color=colour, label=f"{key} of 200s")
    ax.set_xscale("log", base=2)
    ax.set_xticks(cs, [str(c) for c in cs])
    ax.set_xlabel("concurrent clients (closed loop)")
    ax.set_ylabel("latency (s)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Answer latency — {title}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "latency.png", dpi=120)
    plt.close(fig)
    files.append("latency.png")

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    cmap = plt.get_cmap("plasma")
    for j, c in enumerate(cs):
        xs = sorted(r["latency_ms"] / 1000 for r in rows
                    if r["phase"] == f"c={c}" and r["outcome"] == OK)
        if xs:
            ys = [0.0] + [(i + 1) / len(xs) for i in range(len(xs))]
            ax.step([xs[0]] + xs, ys, where="post", color=cmap(0.85 * j / max(len(cs) - 1, 1)),
                    label=f"C={c} ({len(xs)} answers)")
    ax.set_xlabel("latency of 200s (s)")
    ax.set_ylabel("fraction of answers")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"Latency CDF per level — {title}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "latency_cdf.png", dpi=120)
    plt.close(fig)
    files.append("latency_cdf.png")
    return files


def _s(ms: float | None) -> str:
    return "–" if ms is None else f"{ms / 1000:.2f}"


def _n(v, fmt: str = "{:,.1f}") -> str:
    return "–" if v is None else fmt.format(v)


def _codes(d: dict | None) -> str:
    return "–" if d is None else (", ".join(f"{k}: {v}" for k, v in d.items()) or "none")


def level_table(levels: list[dict]) -> list[str]:
    lines = ["| C | sent | 200 | 503 | 503 no Retry-After | other errors | timeouts / conn. "
             "errors | lost | wall s | answers/s | p50 s | p95 s | p99 s |",
             "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for lv in levels:
        lat = lv["latency_ms"]
        lines.append(
            f"| {lv['concurrency']} | {lv['sent']} | {lv['ok']} | {lv['rejected_503']} | "
            f"{lv['rejected_503_without_retry_after']} | "
            f"{_codes(lv['other_errors_by_status']) if lv['other_errors_by_status'] else '0'} | "
            f"{lv['timeouts']} / {lv['connection_errors']} | {lv['lost']} | {lv['wall_s']:.1f} | "
            f"{_n(lv['answers_per_s'], '{:.3f}')} | {_s(lat['p50'])} | {_s(lat['p95'])} | "
            f"{_s(lat['p99'])} |")
    return lines


def cost_table(levels: list[dict]) -> list[str]:
    stages = list(dict.fromkeys(s for lv in levels for s in lv["stage_p50_ms"]))
    lines = ["| C | server total p50 s | prompt tok | completion tok | LLM calls | energy J/answer "
             "| " + " | ".join(f"{s} p50 ms" for s in stages) + " |",
             "|---:|---:|---:|---:|---:|---|" + "---:|" * len(stages)]
    for lv in levels:
        e = lv["energy"]
        energy = (f"{e['joules_per_answer']:.1f} ({e['source']}, {e['answers_measured']} "
                  f"answers)" if e["joules_per_answer"] is not None else e["source"])
        lines.append(
            f"| {lv['concurrency']} | {_s(lv['server_total_ms_p50'])} | "
            f"{_n(lv['prompt_tokens'])} | {_n(lv['completion_tokens'])} | "
            f"{_n(lv['llm_calls'], '{:.2f}')} | {energy} | "
            + " | ".join(_n(lv["stage_p50_ms"].get(s), "{:,.0f}") for s in stages) + " |")
    return lines


def report(res: dict, plots: list[str]) -> str:
    m = res["meta"]
    how = "started by this run" if m["started"] else "already running"
    limit = m["max_in_flight"] if m["max_in_flight"] is not None else "unknown"
    sending = format(m["max_seconds"], "g") if m["max_seconds"] else "no"
    lines = [f"# Serve load — {m['target_desc']}", "",
             f"Command: `{m['command']}`", "",
             f"Machine: {m['machine']}. Target {m['url']} ({how}); "
             f"profile `{m['profile']}`, index `{m['index']}`, system `{m['system']}`, "
             f"generation {'on' if m['generate'] else 'off'}, max_in_flight {limit}. "
             f"{m['questions']} questions from `{m['questions_file']}`, cycled from the first at "
             f"every level. Per level: at most {m['requests'] or 'unbounded'} requests and "
             f"{sending} s of sending; client timeout "
             f"{m['timeout']:g} s; a worker pauses {m['reject_pause']:g} s after a 503. "
             f"{m['warmup']} warm-up request(s) first, not counted in the levels.", "",
             "## Per concurrency level", "",
             "Closed loop: C clients, each sending its next request when the last one's reply "
             "came. answers/s = 200s per wall second of the level; latency of 200s as the client "
             "saw it; lost = sent − HTTP replies of any kind (must be 0).", ""]
    lines += level_table(res["levels"])
    lines += ["", "Cost of an answer (means over the 200s) and per-stage p50 from the Answer's "
                  "`timings_ms`:", ""]
    lines += cost_table(res["levels"])
    ov = res.get("overload")
    if ov:
        s = ov["summary"]
        others = s["other_errors_by_status"]
        lines += ["", "## Overload probe", "",
                  f"{ov['n']} requests released at one instant (each connected first) against "
                  f"max_in_flight {limit}: {s['ok']} answered (200), {s['rejected_503']} "
                  f"rejected with 503 + Retry-After ({', '.join(s['retry_after_s']) or '–'} s), "
                  f"{s['rejected_503_without_retry_after']} 503 without Retry-After, "
                  f"{sum(others.values())} other ({_codes(others) if others else 'none'}), "
                  f"{s['timeouts']} timeouts, {s['connection_errors']} connection errors, "
                  f"**{s['lost']} lost**. Rejections came back in "
                  f"{_s(s['rejection_latency_ms_p50'])} s (p50); the answers took "
                  f"{_s(s['latency_ms']['p50'])} s (p50), {_s(s['latency_ms']['max'])} s "
                  "(max).", ""]
        if ov.get("note"):
            lines += [ov["note"], ""]
    lines += ["## The server's count beside the client's", "",
              f"Delta of `{COUNTER}{{endpoint=\"{ANSWER_PATH}\"}}` from /metrics around each "
              "phase, by status code, and the replies the client got:", "",
              "| phase | server (by code) | client (by code) | agree |", "|---|---|---|---|"]
    for ph in res["metrics"]:
        agree = "–" if ph["server"] is None else ("yes" if ph["agree"] else "**no**")
        server = _codes(ph["server"]) if ph["server"] is not None else ph.get("error", "–")
        lines.append(f"| {ph['phase']} | {server} | {_codes(ph['client'])} | {agree} |")
    lines += ["", "## Notes", "",
              f"- On this {os.cpu_count()}-core machine the client, Ray and every model share the "
              "cores: absolute numbers are only comparable with other runs here, between levels "
              "and between systems, never with a server.",
              "- Client latency includes the Serve proxy and HTTP; the server total is the "
              "pipeline's own `timings_ms.total`.",
              "- /metrics is one Ingress replica's registry: with several Ingress replicas the "
              "server column covers only the replica that answered the scrape.",
              ]
    if res["failures"]:
        lines += ["", "## Failed checks", ""] + [f"- {f}" for f in res["failures"]]
    lines += [""] + [f"![{p}]({p})" for p in plots] + [""]
    return "\n".join(lines)
