"""Two revisions of finrag, one in-process perf workload, one run: is the newer one slower?

    python -m finrag.benchmarks.perf_compare --before 54368ea --after HEAD \\
        --index var/fb-index --profile cpu --requests 30

Each revision is checked out in a temporary git worktree (outside the repository; removed
after) and runs in its own worker process with that worktree first on ``sys.path``, so the
worker imports the revision's own ``retrieval``/``models``/``benchmarks`` (as ``finrag.…``
through a link named ``finrag`` to the worktree where the revision is that package; by their
bare names in revisions before it). Each worker reports the files it imported, and the run
stops if one is not from its worktree. Both workers load
their pipeline (same index, same profile) and answer ``--warmup`` questions first; then the
parent hands them the same questions, in the same order, at concurrency 1, in blocks of
``--block`` questions, alternating A B B A A B ... so that drift of the machine (heat, other
load, caches) falls on both sides. Only one worker computes at a time: the other waits for its
next block. Each block goes through ``benchmarks.perf.in_process`` of the worker's revision
(the same function in both as long as the harness did not change: its source hash is compared
and shown).

The report (``benchmarks/results/perf_compare_<profile>/``): p50 / p95 (p95 only with >= 30
answers per side) and mean latency per answer, p50 and mean per stage, tokens and LLM calls per
answer, CPU seconds, and the after/before ratio of the p50 of the total latency and of each
stage with a bootstrap interval of that ratio of medians (questions resampled in pairs: both
sides answered the same ones). It also counts the answers that are identical on both sides
(they may differ where routing or retrieval changed between the revisions; reported, not a
failure). Timed work: run it alone on the machine.

Module-level imports are standard-library only: a worker runs this file inside another
revision's worktree and imports that revision's modules, never this checkout's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SIDES = ("before", "after")


# --- worker: runs inside a revision's worktree ------------------------------------------------

def _package_prefix(root: Path) -> str:
    """``finrag.`` where the revision is the ``finrag`` package (its root holds the package's
    ``__init__.py``); empty for revisions whose floors were top-level packages."""
    return "finrag." if (root / "__init__.py").is_file() else ""


class _Recording:
    """A pipeline whose ``answer_many`` keeps the answers, so the rows of ``perf.in_process``
    can be matched to the answers' text."""

    def __init__(self, pipe):
        self.pipe, self.answers = pipe, []

    def answer_many(self, *args, **kwargs):
        out = self.pipe.answer_many(*args, **kwargs)
        self.answers.extend(out)
        return out


def _answer_record(answer) -> dict[str, Any]:
    d = answer.to_dict()
    context = (d.get("retrieved") or {}).get("context") or []
    return {"answer": d.get("answer") or "", "error": d.get("error"),
            "context_ids": [c.get("chunk_id") for c in context],
            "routing_docs": ((d.get("routing") or {}).get("doc_ids") or [])}


def worker(root: Path) -> int:
    """Serve blocks read from stdin as JSON lines; one JSON reply line each on the real
    stdout (everything the libraries print goes to stderr)."""
    import inspect

    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def send(obj: dict) -> None:
        reply.write(json.dumps(obj, default=str) + "\n")
        reply.flush()

    try:
        import importlib

        package = _package_prefix(root)
        floors = [importlib.import_module(package + name)
                  for name in ("retrieval", "models", "benchmarks")]
        perf = importlib.import_module(package + "benchmarks.perf")
        try:  # the pipeline options: in serving/ since #60, in retrieval/ before
            options = importlib.import_module(package + "serving.options")
        except ImportError:
            options = importlib.import_module(package + "retrieval.systems.options")
        add_pipeline_options, load_pipeline = options.add_pipeline_options, options.load_pipeline

        files = {m.__name__: str(Path(m.__file__).resolve().parent) for m in floors}
        start = json.loads(sys.stdin.readline())
        parser = argparse.ArgumentParser()
        add_pipeline_options(parser)
        args = parser.parse_args(["--index", start["index"], "--profile", start["profile"]])
        t0 = time.perf_counter()
        pipe = load_pipeline(args)
        recorder = _Recording(pipe)

        def run(qs: list[dict]) -> tuple[list[dict], float]:
            recorder.answers.clear()
            t = time.perf_counter()
            res = perf.in_process(recorder, qs, [1], requests=len(qs), system=start["system"],
                                  generate=start["generate"], warmup=0, progress=False)
            wall = time.perf_counter() - t
            rows = [{**r, **_answer_record(a)} for r, a in zip(res["rows"], recorder.answers)]
            return rows, wall

        if start["warmup"]:
            run(start["warmup"])
        try:
            import torch
            threads = torch.get_num_threads()
        except ImportError:
            threads = None
        harness = hashlib.sha256(inspect.getsource(perf.in_process).encode()).hexdigest()[:12]
        send({"ready": True, "files": files, "root": str(root.resolve()),
              "load_and_warmup_s": round(time.perf_counter() - t0, 2), "torch_threads": threads,
              "harness": harness, "profile": pipe.profile.name,
              "cascade": pipe.profile.cascade.model_dump(),
              "pipeline": pipe.settings.model_dump(), "models": pipe.model_ids()})
        for line in sys.stdin:
            msg = json.loads(line)
            if msg.get("stop"):
                break
            rows, wall = run(msg["questions"])
            send({"block": msg["block"], "rows": rows, "wall_s": round(wall, 3)})
        pipe.close()
        return 0
    except Exception as e:  # the parent shows it with the worker's log
        import traceback

        send({"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()})
        return 1


# --- parent: worktrees, workers, alternation ------------------------------------------------

def resolve(rev: str) -> dict[str, str]:
    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        sha = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    except subprocess.CalledProcessError:
        raise ValueError(f"{rev!r} is not a commit of this repository") from None
    return {"rev": rev, "commit": sha, "subject": git("log", "-1", "--format=%s", sha),
            "date": git("log", "-1", "--format=%cI", sha)}


def block_order(requests: int, block: int) -> list[tuple[int, int, str]]:
    """(first question, how many, side) in the order they run: A B, B A, A B, ... so neither
    side always goes first."""
    if requests < 1 or block < 1:
        raise ValueError("--requests and --block must be >= 1")
    order = []
    for k, start in enumerate(range(0, requests, block)):
        n = min(block, requests - start)
        for side in (SIDES if k % 2 == 0 else SIDES[::-1]):
            order.append((start, n, side))
    return order


class Worker:
    """One revision's worker process (its worktree first on sys.path)."""

    def __init__(self, side: str, root: Path, python: str, log: Path):
        path = root
        if _package_prefix(root):  # `finrag` must name this worktree, not the installed one
            path = root.parent / f"{side}-import-path"
            path.mkdir(exist_ok=True)
            (path / "finrag").symlink_to(root, target_is_directory=True)
        env = {**os.environ, "PYTHONPATH": str(path), "HF_HUB_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false", "PYTHONDONTWRITEBYTECODE": "1"}
        self.side, self.root, self.log = side, root, log
        self._log = log.open("w")
        self._buf = b""
        # -P: this file's folder is not put first on sys.path (the worktree's modules are)
        self.proc = subprocess.Popen([python, "-P", str(Path(__file__).resolve()), "--worker",
                                     str(root)], cwd=root, env=env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=self._log)

    def send(self, obj: dict) -> None:
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        self.proc.stdin.flush()

    def receive(self, timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the {self.side} worker sent nothing in {timeout_s:.0f} s"
                                   + self.tail())
            ready, _, _ = select.select([fd], [], [], min(left, 5.0))
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"the {self.side} worker exited "
                                       f"({self.proc.wait()})" + self.tail())
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        msg = json.loads(line)
        if "error" in msg:
            raise RuntimeError(f"the {self.side} worker failed: {msg['error']}\n"
                               f"{msg.get('traceback', '')}" + self.tail())
        return msg

    def tail(self, n: int = 3000) -> str:
        self._log.flush()
        text = self.log.read_text(errors="replace")[-n:]
        return f"\n--- {self.side} worker log (end) ---\n{text}" if text.strip() else ""

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send({"stop": True})
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def _check_imports(side: str, ready: dict) -> None:
    root = Path(ready["root"])
    wrong = {m: f for m, f in ready["files"].items() if not Path(f).is_relative_to(root)}
    if wrong:
        raise RuntimeError(f"the {side} worker imported {wrong} from outside its worktree")


def _relabel(obj, prefix: str, label: str):
    """``obj`` with ``prefix`` replaced by ``label`` in every string (the worktrees are gone
    once the run ends; their paths would only leak this machine's folders into the report)."""
    if isinstance(obj, dict):
        return {k: _relabel(v, prefix, label) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_relabel(v, prefix, label) for v in obj]
    return obj.replace(prefix, label) if isinstance(obj, str) else obj


def run_compare(revs: dict[str, dict], *, index: Path, profile: str, questions: list[dict],
                requests: int, block: int, system: str, generate: bool, warmup: int,
                python: str, timeout_s: float, progress: bool = True) -> dict[str, Any]:
    """Worktrees, workers, the alternating blocks; returns rows and worker facts per side."""
    tmp = Path(tempfile.mkdtemp(prefix="finrag-perf-compare-"))
    trees: dict[str, Path] = {}
    workers: dict[str, Worker] = {}
    say = (lambda m: print(m, file=sys.stderr, flush=True)) if progress else (lambda m: None)
    try:
        for side in SIDES:
            trees[side] = tmp / side
            subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(trees[side]),
                            revs[side]["commit"]], cwd=REPO, check=True, capture_output=True)
        warm = [questions[i % len(questions)] for i in range(warmup)]
        ready = {}
        for side in SIDES:  # one at a time: loading is CPU work too
            say(f"{side} ({revs[side]['commit'][:10]}): loading the pipeline ...")
            workers[side] = Worker(side, trees[side], python, tmp / f"{side}.log")
            workers[side].send({"index": str(index.resolve()), "profile": profile,
                                "system": system, "generate": generate, "warmup": warm})
            ready[side] = workers[side].receive(timeout_s)
            _check_imports(side, ready[side])
            # the resolved path first: the other may be a part of it (/tmp in /private/tmp)
            for prefix in sorted({str(tmp.resolve()), str(tmp)}, key=len, reverse=True):
                ready[side] = _relabel(ready[side], prefix, "<temporary worktree>")
            say(f"{side}: ready in {ready[side]['load_and_warmup_s']:.0f} s")
        rows: dict[str, list[dict]] = {s: [] for s in SIDES}
        order = block_order(requests, block)
        load = {"start": os.getloadavg()}
        t0 = time.perf_counter()
        for k, (start, n, side) in enumerate(order):
            qs = [questions[(start + i) % len(questions)] for i in range(n)]
            workers[side].send({"block": k, "questions": qs})
            msg = workers[side].receive(timeout_s)
            for i, r in enumerate(msg["rows"]):
                rows[side].append({**r, "seq": start + i, "block": k})
            lat = sorted(r["latency_ms"] for r in msg["rows"])
            say(f"block {k + 1}/{len(order)} {side}: {n} answers in {msg['wall_s']:.1f} s "
                f"(median {lat[len(lat) // 2] / 1000:.2f} s)")
        load["end"] = os.getloadavg()
        return {"rows": rows, "ready": ready, "order": order, "loadavg": load,
                "wall_s": round(time.perf_counter() - t0, 2)}
    finally:
        for w in workers.values():
            w.close()
        for path in trees.values():
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=REPO,
                           capture_output=True)
        subprocess.run(["git", "worktree", "prune"], cwd=REPO, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


# --- figures --------------------------------------------------------------------------------


# --- command --------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from finrag.benchmarks import report as R

    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.perf_compare",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--before", required=True, help="the older revision (a commit, tag, ...)")
    p.add_argument("--after", default="HEAD", help="the newer revision (default HEAD; a "
                   "worktree of the commit: uncommitted changes are not measured)")
    p.add_argument("--index", type=Path, required=True, help="index folder both sides read")
    p.add_argument("--profile", default="cpu")
    p.add_argument("--questions", type=Path, default=R.SHARED / "questions.dev.jsonl")
    p.add_argument("--system", default="hdrr")
    p.add_argument("--no-generate", action="store_true", help="stop after retrieval")
    p.add_argument("--requests", type=int, default=30, help="answers per side (p95 from 30)")
    p.add_argument("--block", type=int, default=5, help="questions per block (sides alternate "
                   "block by block)")
    p.add_argument("--warmup", type=int, default=1, help="answers per side before timing")
    p.add_argument("--timeout-s", type=float, default=1800.0, help="longest wait for one "
                   "worker reply (a load, a block)")
    p.add_argument("--python", default=sys.executable, help="interpreter of the workers")
    p.add_argument("--name", default=None, help="results folder name (default "
                   "perf_compare_<profile>)")
    p.add_argument("--out", type=Path, default=None, help="results folder (overrides --name)")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    args.prog, args.argv = p.prog, sys.argv[1:] if argv is None else argv
    return args


def main(argv: list[str] | None = None) -> int:
    from finrag.benchmarks import report as R
    from finrag.benchmarks import serve_load as L

    args = parse_args(argv)
    if args.requests < 1 or args.block < 1 or args.warmup < 0:
        raise ValueError("--requests and --block must be >= 1, --warmup >= 0")
    if not (args.index / "catalog.sqlite").is_file():
        raise FileNotFoundError(f"no index at {args.index} (expected catalog.sqlite)")
    questions = L.load_questions(args.questions)
    revs = {"before": resolve(args.before), "after": resolve(args.after)}
    config = {"before": revs["before"]["commit"], "after": revs["after"]["commit"],
              "profile": args.profile, "index": R.shown_path(args.index.resolve()),
              "questions": R.shown_path(args.questions), "system": args.system,
              "generate": not args.no_generate, "requests": args.requests,
              "block": args.block, "warmup": args.warmup}
    out = R.results_dir(args.name or f"perf_compare_{args.profile}", args.out)
    result = run_compare(revs, index=args.index, profile=args.profile, questions=questions,
                         requests=args.requests, block=args.block, system=args.system,
                         generate=not args.no_generate, warmup=args.warmup,
                         python=args.python, timeout_s=args.timeout_s,
                         progress=not args.quiet)
    result["revs"] = revs
    result["meta"] = {"command": R.command_line(args), "config_hash": R.config_hash(config),
                      "profile": args.profile, "system": args.system,
                      "generate": not args.no_generate, "warmup": args.warmup,
                      "block": args.block, "index": config["index"],
                      "questions_file": config["questions"],
                      "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                                 f"{platform.python_version()}"}
    # here, not at the top: a worker runs this file inside another revision's worktree
    from finrag.benchmarks.perf_compare_report import _ci, plot, report, summarise

    figures = summarise(result)
    files = [plot(result, figures, out, f"{args.profile}, {args.system}")]
    R.write_json(out / "results.json", {**result, "figures": figures})
    (out / "report.md").write_text(report(result, figures, files), encoding="utf-8")
    t = figures["total"]
    print(f"p50 after/before {_ci(t)}; identical answers {figures['same']['answer']} of "
          f"{figures['same']['n']}")
    print(f"report: {out / 'report.md'}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        sys.exit(worker(Path(sys.argv[2])))
    sys.exit(main())
