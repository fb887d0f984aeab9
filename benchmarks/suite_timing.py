"""Where the test suite's time goes: a pytest plugin that records, for one run, each test's
setup/call/teardown, each fixture's setup, and how often the costly things happen (a model
loaded, Ray started, a Serve app deployed, an index built, a subprocess started, a sleep),
written as JSON for ``finrag bench test-suite`` to turn into a report.

Enabled by ``-p finrag.benchmarks.suite_timing`` with ``FINRAG_SUITE_TIMING=<file.json>``;
without the variable it records nothing and costs nothing."""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import subprocess
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

OUT_ENV = "FINRAG_SUITE_TIMING"


class _Recorder:
    def __init__(self, out: Path):
        self.out = out
        self.started = time.time()
        self.t0 = time.perf_counter()
        self.current = ""           # the test being run (its setup, call or teardown)
        self.tests: dict[str, dict] = {}
        self.fixtures: list[dict] = []
        # (kind, detail) -> per test: [count, seconds]
        self.events: dict[tuple[str, str], dict[str, list]] = defaultdict(
            lambda: defaultdict(lambda: [0, 0.0]))
        self.lock = threading.Lock()

    def note(self, kind: str, detail: str, seconds: float) -> None:
        with self.lock:
            slot = self.events[(kind, scrub(detail))][self.current or "<collection>"]
            slot[0] += 1
            slot[1] += seconds

    def counted(self, kind: str, detail_of):
        def wrap(fn):
            @functools.wraps(fn)
            def timed(*args, **kwargs):
                start = time.perf_counter()
                try:
                    return fn(*args, **kwargs)
                finally:
                    if threading.current_thread() is threading.main_thread():
                        self.note(kind, detail_of(args, kwargs), time.perf_counter() - start)
            return timed
        return wrap

    def dump(self, exitstatus) -> None:
        events = [{"kind": k, "detail": d,
                   "per_test": {t: {"count": c, "seconds": round(s, 3)}
                                for t, (c, s) in per.items()}}
                  for (k, d), per in self.events.items()]
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.write_text(json.dumps({
            "started": self.started, "wall_s": round(time.perf_counter() - self.t0, 2),
            "exitstatus": int(exitstatus), "tests": self.tests, "fixtures": self.fixtures,
            "events": events}, indent=1))


_rec: _Recorder | None = None

_ABSOLUTE = re.compile(r"(?<![\w.])/[^\s'\",)\]]+")


def scrub(detail: str) -> str:
    """A detail without this machine's paths: each absolute path as its last part (a clone's
    folder, the user's cache and pytest's temporary folders differ from run to run)."""
    return _ABSOLUTE.sub(lambda m: ".../" + Path(m.group(0).rstrip("/")).name, detail)


def _patch(rec: _Recorder) -> None:
    """Wrap, in this process, what costs time: the first call of each is counted per test."""
    real_sleep = time.sleep

    def sleep(seconds):
        if threading.current_thread() is threading.main_thread():
            rec.note("sleep", f"{float(seconds):g} s", float(seconds))
        return real_sleep(seconds)
    time.sleep = sleep

    def argv_of(args, kwargs):  # Popen.__init__(self, args, ...)
        argv = args[1] if len(args) > 1 else kwargs.get("args", "")
        if isinstance(argv, (list, tuple)):
            parts = [Path(str(a)).name if i == 0 else str(a) for i, a in enumerate(argv[:4])]
            return " ".join(parts).split("\n")[0][:80]
        return str(argv).split("\n")[0][:60]
    subprocess.Popen.__init__ = rec.counted("subprocess", argv_of)(subprocess.Popen.__init__)

    def name_arg(args, kwargs):
        for a in list(args[:2]) + list(kwargs.values()):
            if isinstance(a, str):
                return a
            if hasattr(a, "name") and isinstance(getattr(a, "name"), str):
                return a.name
        return ""
    try:
        from finrag.models import embedders, profiles
        embedders.load_embedder = rec.counted("load embedder", name_arg)(embedders.load_embedder)
        profiles.load_llm = rec.counted("load LLM", lambda a, k: str(
            getattr(a[0], "name", "") if a else ""))(profiles.load_llm)
        from finrag.retrieval.indexer import Ingestor
        Ingestor.run = rec.counted("build index (Ingestor.run)", lambda a, k: "")(Ingestor.run)
    except ImportError:
        pass
    try:
        import ray
        ray.init = rec.counted("ray.init", lambda a, k: str(a[0] if a else k.get("address", "")
                                                           or "local"))(ray.init)
        from ray import serve
        serve.run = rec.counted("serve.run", lambda a, k: str(k.get("name", "")))(serve.run)
    except ImportError:
        pass


def pytest_configure(config):
    global _rec
    out = os.environ.get(OUT_ENV)
    if out and _rec is None:
        _rec = _Recorder(Path(out))
        _patch(_rec)


def pytest_collection_finish(session):
    """Which tests say in a docstring what they check (one over 60 s must say why)."""
    if _rec is None:
        return
    for item in session.items:
        doc = (getattr(getattr(item, "obj", None), "__doc__", None) or "").strip()
        _rec.tests.setdefault(item.nodeid, {"outcome": "passed"})["docstring"] = bool(doc)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if _rec is not None:
        _rec.current = item.nodeid
    yield
    if _rec is not None:
        _rec.current = ""


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    start = time.perf_counter()
    yield
    if _rec is not None:
        seconds = time.perf_counter() - start
        if seconds >= 0.05:
            _rec.fixtures.append({
                "fixture": fixturedef.argname, "scope": fixturedef.scope,
                "where": (fixturedef.baseid or "") or "tests/conftest.py",
                "test": _rec.current, "seconds": round(seconds, 3),
                "docstring": bool((getattr(fixturedef.func, "__doc__", None) or "").strip())})


def pytest_runtest_logreport(report):
    if _rec is None:
        return
    entry = _rec.tests.setdefault(report.nodeid, {"outcome": "passed"})
    entry[report.when] = round(report.duration, 3)
    if report.failed:
        entry["outcome"] = "failed"
    elif report.skipped and entry["outcome"] != "failed":
        entry["outcome"] = "skipped"
        if isinstance(report.longrepr, tuple):
            entry["reason"] = str(report.longrepr[2])[:200]


def pytest_sessionfinish(session, exitstatus):
    if _rec is not None:
        _rec.dump(exitstatus)


# --- the report ------------------------------------------------------------------------------

def _module(nodeid: str) -> str:
    return nodeid.split("::")[0]


def _total(entry: dict) -> float:
    return sum(entry.get(k, 0.0) for k in ("setup", "call", "teardown"))


def by_module(run: dict) -> dict[str, dict]:
    """Per test file: tests, outcomes and seconds (setup + call + teardown, so a module
    fixture's cost is its module's)."""
    out: dict[str, dict] = {}
    for nodeid, entry in run["tests"].items():
        m = out.setdefault(_module(nodeid), {"tests": 0, "seconds": 0.0, "passed": 0,
                                             "skipped": 0, "failed": 0})
        m["tests"] += 1
        m["seconds"] += _total(entry)
        m[entry.get("outcome", "passed")] += 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["seconds"]))


def by_fixture(run: dict) -> list[dict]:
    """Fixture setups of 0.05 s or more: how many times each was set up and for how long."""
    agg: dict[tuple, dict] = {}
    for f in run["fixtures"]:
        a = agg.setdefault((f["fixture"], f["scope"], f["where"]),
                           {"fixture": f["fixture"], "scope": f["scope"], "where": f["where"],
                            "setups": 0, "seconds": 0.0})
        a["setups"] += 1
        a["seconds"] += f["seconds"]
    return sorted(agg.values(), key=lambda a: -a["seconds"])


def by_event(run: dict) -> list[dict]:
    merged: dict[tuple[str, str], dict] = {}
    for e in run["events"]:
        key = (e["kind"], scrub(e["detail"]))
        m = merged.setdefault(key, {"kind": key[0], "detail": key[1], "count": 0,
                                    "seconds": 0.0, "per": set()})
        for test, p in e["per_test"].items():
            m["count"] += p["count"]
            m["seconds"] += p["seconds"]
            m["per"].add(test)
    out = [{**{k: v for k, v in m.items() if k != "per"}, "tests": len(m["per"])}
           for m in merged.values()]
    return sorted(out, key=lambda e: (e["kind"], -e["seconds"]))


def _mmss(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return f"{int(seconds // 60)} min {seconds % 60:04.1f} s"


FAST_COLD = "make test-fast, no embedding cache"  # its first run (tests/embedding_cache.py)


def write_report(out: Path, runs: dict[str, dict], walls: dict[str, dict],
                 replaced: dict[str, str], command: str) -> Path:
    """``runs``: label -> a timing JSON; ``walls``: label -> measured wall seconds of
    ``make test``, ``.ci/run``, ``make test-fast`` (and how each was run); ``replaced``: a test
    of the first run that the last one no longer has -> the test(s) that check it now."""
    from finrag.benchmarks.report import pyplot, savefig

    out.mkdir(parents=True, exist_ok=True)
    plt = pyplot()
    labels = list(runs)
    first, last = runs[labels[0]], runs[labels[-1]]
    lines = ["# The test suite: where its time goes", "", f"Command: `{command}`", "",
             "Measured on this project's two-core machine, nothing else running, each from a "
             "fresh clone with warm package caches (the wheel cache, the prepared weights in "
             "the user's cache). Figures per test are pytest's own (setup + call + teardown); "
             "fixture setups are timed by `benchmarks/suite_timing.py` (a pytest plugin), "
             "which also counts, in the pytest process, the costly calls below.", ""]
    # a run of `test_suite_run.sh LABEL --fast-only` has wall times and no timing JSON
    timed = labels + [lab for lab in walls if lab not in runs]
    lines += ["## Wall times", "", "| run | " + " | ".join(timed) + " | goal |",
              "|---|" + "---|" * (len(timed) + 1)]
    goals = {"make test": "≤ 15 min", ".ci/run": "≤ 25 min", "make test-fast": "≤ 3 min",
             FAST_COLD: "≤ 3 min", "pytest (make test's)": ""}
    for what, goal in goals.items():
        if what == FAST_COLD and not any(FAST_COLD in w for w in walls.values()):
            continue
        row = [_mmss(walls.get(lab, {}).get(what)) if what != "pytest (make test's)"
               else _mmss(runs[lab]["wall_s"] if lab in runs else None) for lab in timed]
        lines.append(f"| {what} | " + " | ".join(row) + f" | {goal} |")
    notes = [f"- {lab}: {walls[lab]['note']}" for lab in timed if walls.get(lab, {}).get("note")]
    lines += ["", *notes, ""]

    lines += ["## Tests and modules", "", "| | " + " | ".join(labels) + " |",
              "|---|" + "---|" * len(labels)]
    for what, fn in (("test modules", lambda r: len(by_module(r))),
                     ("tests", lambda r: len(r["tests"])),
                     ("passed", lambda r: sum(e["outcome"] == "passed" for e in r["tests"].values())),
                     ("skipped", lambda r: sum(e["outcome"] == "skipped" for e in r["tests"].values())),
                     ("failed", lambda r: sum(e["outcome"] == "failed" for e in r["tests"].values()))):
        lines.append(f"| {what} | " + " | ".join(str(fn(runs[lab])) for lab in labels) + " |")
    lines.append("")
    skips = sorted({e.get("reason", "") for e in last["tests"].values()
                    if e["outcome"] == "skipped"})
    if skips:
        lines += [f"Skipped in the {labels[-1]} run, and why:", ""]
        lines += [f"- {s}" for s in skips] + [""]

    gone = sorted(set(first["tests"]) - set(last["tests"]))
    lines += ["## Tests replaced", "",
              f"{len(gone)} test(s) of the {labels[0]} run are not in the {labels[-1]} run; "
              "each is listed with what checks the same behaviour now.", ""]
    if gone:
        lines += ["| test | checked now by |", "|---|---|"]
        for nodeid in gone:
            lines.append(f"| `{nodeid}` | {replaced.get(nodeid, '**none named**')} |")
        lines.append("")

    mods = {lab: by_module(runs[lab]) for lab in labels}
    names = sorted(set().union(*mods.values()),
                   key=lambda m: -max(mods[lab].get(m, {}).get("seconds", 0) for lab in labels))
    lines += ["## Time by test module", "",
              "| module | " + " | ".join(f"{lab} s (tests)" for lab in labels) + " |",
              "|---|" + "---|" * len(labels)]
    for m in names:
        cells = [f"{mods[lab][m]['seconds']:.1f} ({mods[lab][m]['tests']})" if m in mods[lab]
                 else "–" for lab in labels]
        lines.append(f"| `{m}` | " + " | ".join(cells) + " |")
    lines.append("")
    top = names[:25][::-1]
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(top) + 1.5))
    height = 0.8 / len(labels)
    for i, lab in enumerate(labels):
        ax.barh([j + i * height for j in range(len(top))],
                [mods[lab].get(m, {}).get("seconds", 0) / 60 for m in top], height, label=lab)
    ax.set_yticks([j + height * (len(labels) - 1) / 2 for j in range(len(top))])
    ax.set_yticklabels([m.removeprefix("tests/") for m in top], fontsize=8)
    ax.set_xlabel("minutes (setup + call + teardown)")
    ax.set_title("The 25 slowest test modules")
    ax.legend()
    lines += [f"![time by module]({savefig(fig, out, 'modules.png')})", ""]

    for lab in labels:
        fx = by_fixture(runs[lab])[:20]
        lines += [f"## Fixture setups ({lab})", "", "| fixture | scope | where | setups | s |",
                  "|---|---|---|---|---|"]
        lines += [f"| `{f['fixture']}` | {f['scope']} | `{f['where']}` | {f['setups']} | "
                  f"{f['seconds']:.1f} |" for f in fx]
        lines += ["", f"## Costly calls in the pytest process ({lab})", "",
                  "Served apps, clusters and CLI runs are subprocesses: counted as such, their "
                  "own model loads are not.", "",
                  "| what | detail | calls | tests | s |", "|---|---|---|---|---|"]
        events = by_event(runs[lab])
        kinds: dict[str, list] = {}
        for e in events:
            kinds.setdefault(e["kind"], []).append(e)
        for kind, rows in kinds.items():
            for e in rows[:8]:
                lines.append(f"| {kind} | `{e['detail']}` | {e['count']} | {e['tests']} | "
                             f"{e['seconds']:.1f} |")
            if len(rows) > 8:
                rest = rows[8:]
                lines.append(f"| {kind} | {len(rest)} more | {sum(e['count'] for e in rest)} | "
                             f"| {sum(e['seconds'] for e in rest):.1f} |")
        lines.append("")

    slow = sorted(last["tests"].items(), key=lambda kv: -_total(kv[1]))[:30]
    lines += [f"## The 30 slowest tests ({labels[-1]})", "", "| test | setup s | call s | "
              "teardown s |", "|---|---|---|---|"]
    lines += [f"| `{n}` | {e.get('setup', 0):.1f} | {e.get('call', 0):.1f} | "
              f"{e.get('teardown', 0):.1f} |" for n, e in slow]
    over = [n for n, e in last["tests"].items() if e.get("call", 0) > 60]
    undocumented = [n for n in over if not last["tests"][n].get("docstring")]
    fixtures = {f["fixture"]: f for f in last["fixtures"] if f["seconds"] > 60}
    bare = [name for name, f in fixtures.items() if not f.get("docstring")]
    lines += ["", f"Tests whose call took over 60 s in the {labels[-1]} run: {len(over)}; without "
              "a docstring saying why: " + (", ".join(f"`{n}`" for n in undocumented)
                                            if undocumented else "none") + ".",
              f"Fixtures whose setup took over 60 s: {len(fixtures)}; without a docstring: "
              + (", ".join(f"`{n}`" for n in bare) if bare else "none") + "."]
    (out / "README.md").write_text("\n".join(lines) + "\n")
    return out / "README.md"


def main(argv=None) -> None:
    import argparse

    from finrag.benchmarks.report import results_dir, write_json

    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.suite_timing",
                                description="the test suite's time report")
    p.add_argument("--run", action="append", required=True, metavar="LABEL=TIMING.json",
                   help="a timing JSON written by this plugin (in order: the first is 'before')")
    p.add_argument("--walls", help="JSON: label -> {'make test': s, '.ci/run': s, ...}")
    p.add_argument("--replaced", help="YAML: removed test id -> what checks it now")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    import yaml

    out = results_dir("test_suite", args.out)
    runs = {}
    for spec in args.run:
        label, _, path = spec.partition("=")
        runs[label] = json.loads(Path(path).read_text())
        write_json(out / f"timing_{label}.json", runs[label])
    walls = json.loads(Path(args.walls).read_text()) if args.walls else {}
    replaced = yaml.safe_load(Path(args.replaced).read_text()) if args.replaced else {}
    argv = sys.argv[1:] if argv is None else argv
    print(write_report(out, runs, walls, replaced or {},
                       "python -m finrag.benchmarks.suite_timing " + " ".join(argv)))


if __name__ == "__main__":
    main()
