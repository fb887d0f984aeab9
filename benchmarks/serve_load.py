"""Closed-loop load on the Serve app's ``POST /v1/answer``: throughput, latency, rejections.

At each concurrency level C, C worker threads each send a request, wait for its reply, then
send the next, until ``--requests`` have been sent at that level or ``--max-seconds`` have
passed (then no new request is sent; those in flight are awaited, each bounded by the client
``--timeout``). Every request is accounted for: a 200, a 503 with Retry-After (admission limit
reached), another HTTP status, a client timeout or a connection error; "lost" = sent − HTTP
replies must be 0. An overload probe then fires ``--overload N`` requests at the same instant,
and the server's own ``finrag_requests_total`` counter (from /metrics, before and after each
phase) is set beside the client's counts.

    python -m finrag.benchmarks.serve_load --start --index DIR --profile cpu \\
        --questions FILE --concurrency 1,2,4,8 --requests 16 --overload 12
    python -m finrag.benchmarks.serve_load --url http://127.0.0.1:8000 --questions FILE

Only the standard library speaks HTTP here. Writes benchmarks/results/<name>/{report.md,
results.json, throughput.png, latency.png, latency_cdf.png}. Exits 1 when a request was lost
or got an unexpected reply (another status than 200/503, a 503 without Retry-After, a 200
that is not an Answer record), 130 on Ctrl-C.
The figures and the report are ``benchmarks/serve_load_report.py``'s.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import shlex
import signal
import socket
import sys
import threading
import time
import urllib.parse
from pathlib import Path

from finrag.benchmarks.serve_load_report import (ANSWER_PATH, CLIENT_ERROR, CONN_ERROR, EXPECTED, OK,
                                          REJECTED, REJECTED_NO_RETRY_AFTER, TIMEOUT, _codes,
                                          classify, client_by_code, counter_delta, draw_plots,
                                          level_table, report, requests_by_code, summarise)

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"

STOP = threading.Event()  # set on Ctrl-C/SIGTERM: workers send nothing more


# HTTP -----------------------------------------------------------------------------------
class Target:
    def __init__(self, url: str, token: str | None = None):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"--url must be http://HOST:PORT[/prefix], got {url!r}")
        self.url = url.rstrip("/")
        self.host, self.port = parts.hostname, parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.token = token

    def headers(self, extra: dict | None = None) -> dict:
        h = {"Accept": "application/json", **(extra or {})}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        return h

    def get(self, path: str, timeout: float = 30.0) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request("GET", self.prefix + path, headers=self.headers())
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()


def answer_fields(data: dict) -> dict:
    """The figures of a load row taken from an Answer record (an HTTP reply's body or
    ``Answer.to_dict()``)."""
    usage, energy = data.get("usage") or {}, data.get("energy") or {}
    timings = data.get("timings_ms") or {}
    return dict(prompt_tokens=usage.get("prompt_tokens"),
                completion_tokens=usage.get("completion_tokens"),
                llm_calls=usage.get("llm_calls"), timings_ms=timings,
                server_total_ms=timings.get("total"), joules=energy.get("joules"),
                energy_source=energy.get("source"), energy_scope=energy.get("scope"),
                cpu_seconds=energy.get("cpu_seconds"),
                routing=(data.get("routing") or {}).get("status"),
                answer_chars=len(data.get("answer") or ""),
                citations=len(data.get("citations") or []))


def send_answer(target: Target, payload: dict, timeout: float,
                barrier: threading.Barrier | None = None) -> dict:
    """One ``POST /v1/answer``, as a row: outcome, status, latency and, for an Answer, its
    usage, per-stage timings and energy. Never raises. ``barrier``: connect first, then wait
    for the others before sending (the overload probe); latency starts at the send."""
    body = json.dumps(payload).encode()
    row: dict = {"status": None, "outcome": CLIENT_ERROR, "latency_ms": None}
    conn = http.client.HTTPConnection(target.host, target.port, timeout=timeout)
    t0 = time.perf_counter()
    try:
        try:
            conn.connect()
        finally:
            if barrier is not None:
                try:
                    barrier.wait(timeout=timeout)
                except threading.BrokenBarrierError:
                    pass
                t0 = time.perf_counter()
        row["t_send"] = time.time()
        conn.request("POST", target.prefix + ANSWER_PATH, body=body, headers=target.headers(
            {"Content-Type": "application/json", "Content-Length": str(len(body))}))
        resp = conn.getresponse()
        raw = resp.read()
        row["latency_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        row["status"] = resp.status
        row["retry_after"] = resp.getheader("Retry-After")
        try:
            data = json.loads(raw or b"null")
        except ValueError:
            data = None
        row["outcome"] = classify(resp.status, row["retry_after"], data)
        if resp.status != 200 and isinstance(data, dict):
            row["error_kind"] = data.get("kind")
            row["error"] = str(data.get("error") or data.get("detail") or "")[:300]
        elif resp.status != 200:
            row["error"] = raw[:300].decode("utf-8", "replace")
        if row["outcome"] == OK:
            row.update(answer_fields(data))
    except (TimeoutError, socket.timeout) as exc:
        row.update(outcome=TIMEOUT, error=f"no reply within {timeout:g} s ({exc})")
    except (ConnectionError, OSError, http.client.HTTPException) as exc:
        row.update(outcome=CONN_ERROR, error=f"{type(exc).__name__}: {exc}"[:300])
    except Exception as exc:  # a bug here must still leave its row
        row.update(outcome=CLIENT_ERROR, error=f"{type(exc).__name__}: {exc}"[:300])
    finally:
        conn.close()
    if row["latency_ms"] is None:
        row["latency_ms"] = round((time.perf_counter() - t0) * 1000, 2)
    return row


def scrape(target: Target) -> tuple[dict[str, float] | None, str | None]:
    try:
        status, raw = target.get("/metrics")
    except (OSError, http.client.HTTPException) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    if status != 200:
        return None, f"/metrics answered {status}"
    return requests_by_code(raw.decode("utf-8", "replace")), None


# load -----------------------------------------------------------------------------------
class Printer:
    def __init__(self, stream=sys.stderr):
        self.lock, self.stream = threading.Lock(), stream

    def __call__(self, label: str, n: int, total: int | None, q: dict, row: dict) -> None:
        what = {OK: "200", REJECTED: f"503 retry-after {row.get('retry_after')}"}.get(
            row["outcome"], f"{row['status'] or '---'} {row['outcome']}"
            + (f" {row['error_kind']}" if row.get("error_kind") else ""))
        extra = ""
        if row["outcome"] == OK:
            extra = (f"  {row.get('prompt_tokens')}+{row.get('completion_tokens')} tok, "
                     f"{row.get('llm_calls')} LLM calls")
        elif row.get("error") and row["outcome"] not in EXPECTED:
            extra = f"  {row['error'][:100]}"
        with self.lock:
            print(f"[{label}] {n}/{total or '?'} {q.get('id') or '#' + str(q['_i'])}: {what} "
                  f"in {row['latency_ms'] / 1000:.2f} s{extra}", file=self.stream, flush=True)


def _wait(threads: list[threading.Thread]) -> None:
    """Join, but stay interruptible by Ctrl-C."""
    for t in threads:
        while t.is_alive():
            t.join(0.2)


def run_level(target: Target, questions: list[dict], concurrency: int, *, requests: int | None,
              max_seconds: float | None, timeout: float, system: str, generate: bool,
              reject_pause: float, label: str, progress: Printer) -> tuple[list[dict], dict]:
    """Closed loop at one concurrency: rows of every request and the bookkeeping."""
    lock = threading.Lock()
    rows: list[dict] = []
    state = {"sent": 0, "done": 0}
    start = time.perf_counter()
    wall0 = time.time()

    def claim() -> int | None:
        with lock:
            if STOP.is_set():
                return None
            if requests is not None and state["sent"] >= requests:
                return None
            if max_seconds is not None and time.perf_counter() - start >= max_seconds:
                return None
            state["sent"] += 1
            return state["sent"] - 1

    def worker(w: int) -> None:
        while (seq := claim()) is not None:
            q = questions[seq % len(questions)]
            row = send_answer(target, {"question": q["question"], "system": system,
                                       "generate": generate}, timeout)
            row.update(phase=label, concurrency=concurrency, worker=w, seq=seq,
                       question_id=q.get("id") or q["_i"],
                       t_start_s=round(row.get("t_send", time.time()) - wall0, 3),
                       t_end_s=round(time.perf_counter() - start, 3))
            with lock:
                rows.append(row)
                state["done"] += 1
                n = state["done"]
            progress(label, n, requests, q, row)
            if row["outcome"] in (REJECTED, REJECTED_NO_RETRY_AFTER) and reject_pause > 0:
                time.sleep(reject_pause)

    threads = [threading.Thread(target=worker, args=(w,), daemon=True, name=f"load-{w}")
               for w in range(concurrency)]
    for t in threads:
        t.start()
    _wait(threads)
    wall = time.perf_counter() - start
    rows.sort(key=lambda r: r["seq"])
    return rows, {"sent": state["sent"], "wall_s": wall}


def overload_probe(target: Target, questions: list[dict], n: int, *, timeout: float,
                   system: str, generate: bool, progress: Printer) -> tuple[list[dict], dict]:
    """``n`` requests released at one instant (each connected first, then a barrier)."""
    barrier = threading.Barrier(n)
    rows: list[dict] = [None] * n  # type: ignore[list-item]
    done = [0]
    lock = threading.Lock()
    start = time.perf_counter()

    def one(i: int) -> None:
        q = questions[i % len(questions)]
        row = send_answer(target, {"question": q["question"], "system": system,
                                   "generate": generate}, timeout, barrier=barrier)
        row.update(phase="overload", concurrency=n, worker=i, seq=i,
                   question_id=q.get("id") or q["_i"],
                   t_end_s=round(time.perf_counter() - start, 3))
        rows[i] = row
        with lock:
            done[0] += 1
            k = done[0]
        progress("overload", k, n, q, row)

    threads = [threading.Thread(target=one, args=(i,), daemon=True, name=f"burst-{i}")
               for i in range(n)]
    for t in threads:
        t.start()
    _wait(threads)
    return [r for r in rows if r is not None], {"sent": n, "wall_s": time.perf_counter() - start}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_questions(path: Path) -> list[dict]:
    out = []
    for i, line in enumerate(path.read_text().splitlines()):
        if line.strip():
            q = json.loads(line)
            if not str(q.get("question") or "").strip():
                raise ValueError(f"{path}:{i + 1}: no \"question\"")
            out.append({**q, "_i": len(out)})
    if not out:
        raise ValueError(f"{path}: no questions")
    return out


# main -----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.serve_load", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="a running app, e.g. http://127.0.0.1:8000")
    where.add_argument("--start", action="store_true",
                       help="start the app on a local Ray for this run, and stop it after")
    p.add_argument("--index", type=Path, help="index folder (--start)")
    p.add_argument("--profile", help="profile (--start; default: the config file's)")
    p.add_argument("--config", type=Path, default=None,
                   help="Serve config whose app args --start uses (default deploy/cpu.yaml)")
    p.add_argument("--max-in-flight", type=int, default=None,
                   help="limits.max_in_flight of the started app (default: the config's)")
    p.add_argument("--port", type=int, default=0, help="port of the started app (0: a free one)")
    p.add_argument("--start-timeout", type=float, default=900.0)
    p.add_argument("--questions", type=Path, required=True, help="JSONL with \"question\"")
    p.add_argument("--system", default="hdrr")
    p.add_argument("--no-generate", action="store_true", help="stop after retrieval")
    p.add_argument("--concurrency", default="1,2,4,8", help="levels, e.g. 1,2,4,8")
    p.add_argument("--requests", type=int, default=16, help="requests per level (0: no bound)")
    p.add_argument("--max-seconds", type=float, default=600.0,
                   help="per level: no new request after this (0: no bound)")
    p.add_argument("--timeout", type=float, default=None,
                   help="client timeout of one request (default: the app's deadline + 30 s, "
                        "330 s with --url)")
    p.add_argument("--reject-pause", type=float, default=0.25,
                   help="seconds a worker waits after a 503 before its next request")
    p.add_argument("--warmup", type=int, default=1, help="requests sent before the levels")
    p.add_argument("--overload", type=int, default=0,
                   help="N simultaneous requests after the levels (N > max_in_flight; 0: skip)")
    p.add_argument("--token-env", default="FINRAG_API_TOKEN",
                   help="environment variable holding the bearer token, if the app wants one")
    p.add_argument("--name", default=None,
                   help="results folder under benchmarks/results (default serve_load_<profile>)")
    p.add_argument("--out", type=Path, default=None, help="results folder (overrides --name)")
    args = p.parse_args(argv)

    try:
        levels_c = [int(c) for c in args.concurrency.split(",") if c.strip()]
    except ValueError:
        p.error("--concurrency takes integers, e.g. 1,2,4,8")
    if not levels_c or min(levels_c) < 1:
        p.error("--concurrency needs levels ≥ 1")
    requests = args.requests or None
    max_seconds = args.max_seconds or None
    if requests is None and max_seconds is None:
        p.error("give --requests or --max-seconds: a level must be bounded")
    if args.start and args.index is None:
        p.error("--start needs --index")
    if args.start and not (args.index / "catalog.sqlite").is_file():
        p.error(f"{args.index}: not an index folder (no catalog.sqlite)")
    if args.url:
        try:
            Target(args.url)
        except ValueError as exc:
            p.error(str(exc))
    if args.url and (args.index or args.max_in_flight or args.config):
        p.error("--index, --config and --max-in-flight configure an app started with --start")
    try:
        questions = load_questions(args.questions)
    except (OSError, ValueError) as exc:
        p.error(str(exc))
    command = "python -m finrag.benchmarks.serve_load " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))

    service = None
    cfg = None
    if args.start:
        from finrag.serving.server import DEFAULT_CONFIG
        from finrag.serving.config import load_serve_file

        cfg = load_serve_file(args.config or DEFAULT_CONFIG).app_config()
        update: dict = {"index": str(args.index)}
        if args.profile:
            update["profile"] = args.profile
        if args.max_in_flight:
            update["limits"] = cfg.limits.model_copy(update={"max_in_flight": args.max_in_flight})
        cfg = cfg.model_copy(update=update)
    profile = args.profile or (cfg.profile if cfg else None)
    name = args.name or f"serve_load_{profile or ('url' if args.url else 'default')}"
    out = args.out or RESULTS / name
    timeout = args.timeout or ((cfg.limits.deadline_s + 30) if cfg else 330.0)
    token = os.environ.get(args.token_env, "").strip() or None
    progress = Printer()

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        if args.start:
            from finrag.serving.server import Service

            service = Service(cfg, port=args.port or _free_port())
            service.start(timeout=args.start_timeout,
                          progress=lambda msg: print(msg, file=sys.stderr, flush=True))
            url = service.url
        else:
            url = args.url
        target = Target(url, token)
        try:
            status, raw = target.get("/healthz", timeout=60)
            health = json.loads(raw or b"{}") if status == 200 else {}
        except (OSError, ValueError, http.client.HTTPException) as exc:
            print(f"error: {url}/healthz: {exc}", file=sys.stderr)
            return 1
        if status != 200:
            print(f"error: {url}/healthz answered {status}: {raw[:200]!r}", file=sys.stderr)
            return 1
        max_in_flight = health.get("max_in_flight", cfg.limits.max_in_flight if cfg else None)
        profile = health.get("profile", profile)
        print(f"{url}: ready, profile {profile}, {health.get('documents')} documents, "
              f"max_in_flight {max_in_flight}", file=sys.stderr, flush=True)
        result = run_all(target, questions, args, levels_c, requests, max_seconds, timeout,
                         max_in_flight, progress)
    except KeyboardInterrupt:
        STOP.set()
        print("interrupted: no report written", file=sys.stderr, flush=True)
        return 130
    finally:
        STOP.set()
        if service is not None:
            print("stopping the app …", file=sys.stderr, flush=True)
            t = time.perf_counter()
            service.stop()
            print(f"stopped in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)

    meta = {"command": command, "url": url, "started": bool(args.start),
            "target_desc": f"profile {profile}" if profile else url,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                       f"{platform.python_version()}",
            "cores": os.cpu_count(), "profile": profile,
            "index": str(args.index) if args.index else "(the running app's)",
            "documents": health.get("documents"), "system": args.system,
            "generate": not args.no_generate, "max_in_flight": max_in_flight,
            "questions_file": str(args.questions), "questions": len(questions),
            "concurrency": levels_c, "requests": requests, "max_seconds": max_seconds,
            "timeout": timeout, "reject_pause": args.reject_pause, "warmup": args.warmup,
            "overload": args.overload, "ended": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    result = {"meta": meta, **result}
    result["failures"] = failures(result, strict_metrics=bool(args.start))
    out.mkdir(parents=True, exist_ok=True)
    title = f"{profile or url}, {args.system}" + (", no generation" if args.no_generate else "")
    plots = draw_plots(result["levels"], result["rows"], out, title)
    (out / "results.json").write_text(json.dumps(result, indent=2))
    (out / "report.md").write_text(report(result, plots))
    print("\n".join(level_table(result["levels"])))
    if result.get("overload"):
        s = result["overload"]["summary"]
        print(f"overload {args.overload}: {s['ok']} × 200, {s['rejected_503']} × 503 with "
              f"Retry-After, {s['unexpected']} unexpected, {s['lost']} lost")
    print(f"wrote {out / 'report.md'}")
    for f in result["failures"]:
        print(f"FAILED: {f}", file=sys.stderr)
    return 1 if result["failures"] else 0


def run_all(target: Target, questions: list[dict], args, levels_c: list[int],
            requests: int | None, max_seconds: float | None, timeout: float,
            max_in_flight: int | None, progress: Printer) -> dict:
    generate = not args.no_generate
    rows: list[dict] = []
    metrics: list[dict] = []

    def phase(label: str, fn):
        before, err = scrape(target)
        got, book = fn()
        after, err2 = scrape(target)
        server = counter_delta(before, after) if before is not None and after is not None \
            else None
        client = client_by_code(got)
        metrics.append({"phase": label, "server": server, "client": client,
                        "agree": server == client if server is not None else None,
                        **({"error": err or err2} if server is None else {})})
        rows.extend(got)
        return got, book

    if args.warmup:
        phase("warm-up", lambda: run_level(
            target, questions, 1, requests=args.warmup, max_seconds=None, timeout=timeout,
            system=args.system, generate=generate, reject_pause=args.reject_pause,
            label="warmup", progress=progress))
    levels = []
    for c in levels_c:
        label = f"c={c}"
        got, book = phase(label, lambda: run_level(
            target, questions, c, requests=requests, max_seconds=max_seconds, timeout=timeout,
            system=args.system, generate=generate, reject_pause=args.reject_pause, label=label,
            progress=progress))
        levels.append({"concurrency": c, **summarise(got, book["wall_s"], book["sent"])})
    overload = None
    if args.overload:
        got, book = phase(f"overload {args.overload}", lambda: overload_probe(
            target, questions, args.overload, timeout=timeout, system=args.system,
            generate=generate, progress=progress))
        note = None
        if max_in_flight is not None and args.overload <= max_in_flight:
            note = (f"The probe's {args.overload} requests do not exceed max_in_flight "
                    f"{max_in_flight}: no rejection was to be expected.")
        overload = {"n": args.overload, "summary": summarise(got, book["wall_s"], book["sent"]),
                    "note": note}
    return {"levels": levels, "overload": overload, "metrics": metrics, "rows": rows}


def failures(result: dict, strict_metrics: bool) -> list[str]:
    """What makes the run fail: a lost request or an unexpected reply anywhere; with an app
    this run started (nobody else talks to it), the server's count differing from the
    client's."""
    out = []
    phases = [(f"C={lv['concurrency']}", lv) for lv in result["levels"]]
    if result.get("overload"):
        phases.append((f"overload {result['overload']['n']}", result["overload"]["summary"]))
    for label, s in phases:
        if s["lost"]:
            out.append(f"{label}: {s['lost']} request(s) lost (sent {s['sent']}, "
                       f"{s['replies']} replies; {s['timeouts']} timeouts, "
                       f"{s['connection_errors']} connection errors)")
        if s["unexpected"]:
            out.append(f"{label}: {s['unexpected']} unexpected outcome(s): 503 without "
                       f"Retry-After {s['rejected_503_without_retry_after']}, other "
                       f"{_codes(s['other_errors_by_status'])}, kinds "
                       f"{_codes(s['error_kinds'])}, timeouts {s['timeouts']}, connection "
                       f"errors {s['connection_errors']}, client errors {s['client_errors']}")
    warm = [r for r in result["rows"] if r["phase"] == "warmup" and r["outcome"] not in EXPECTED]
    if warm:
        out.append(f"warm-up: {len(warm)} unexpected: {warm[0].get('status')} "
                   f"{warm[0].get('error', '')[:120]}")
    if strict_metrics:
        for ph in result["metrics"]:
            if ph["server"] is not None and not ph["agree"]:
                out.append(f"{ph['phase']}: the server counted {_codes(ph['server'])}, the "
                           f"client got {_codes(ph['client'])}")
    return out


if __name__ == "__main__":
    sys.exit(main())
