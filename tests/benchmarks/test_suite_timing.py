"""The suite's time recorder (benchmarks/suite_timing.py), as `test_suite_run.sh` uses it: a real
pytest run of a small generated suite with the plugin on, then the report over it."""

import json
import os
import subprocess
import sys

from finrag.benchmarks.suite_timing import by_event, by_module, scrub, write_report

SUITE = '''
import subprocess, sys, time
import pytest

@pytest.fixture
def slow_fixture(tmp_path):
    """Sleeps a tenth of a second."""
    time.sleep(0.1)
    return tmp_path

def test_sleeps_and_runs_a_command(slow_fixture):
    """Says what it checks."""
    time.sleep(0.2)
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_without_a_docstring():
    assert True

def test_skipped():
    pytest.skip("nothing to see")
'''


def _timed_run(tmp_path, name: str) -> dict:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "test_small.py").write_text(SUITE)
    out = tmp_path / f"timing_{name}.json"
    env = dict(os.environ, FINRAG_SUITE_TIMING=str(out))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "finrag.benchmarks.suite_timing", str(folder)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    return json.loads(out.read_text())


def test_a_run_is_recorded_by_test_fixture_and_costly_call_and_reported(tmp_path):
    run = _timed_run(tmp_path, "one")
    tests = {nodeid.split("::")[1]: entry for nodeid, entry in run["tests"].items()}
    assert set(tests) == {"test_sleeps_and_runs_a_command", "test_without_a_docstring",
                          "test_skipped"}
    sleeper = tests["test_sleeps_and_runs_a_command"]
    assert sleeper["outcome"] == "passed" and sleeper["docstring"] and sleeper["call"] >= 0.2
    assert not tests["test_without_a_docstring"]["docstring"]
    assert tests["test_skipped"]["outcome"] == "skipped"
    assert "nothing to see" in tests["test_skipped"]["reason"]
    [fixture] = [f for f in run["fixtures"] if f["fixture"] == "slow_fixture"]
    assert fixture["seconds"] >= 0.1 and fixture["docstring"]
    events = {(e["kind"], e["detail"]): e for e in by_event(run)}
    assert events["sleep", "0.2 s"]["count"] == 1 and events["sleep", "0.1 s"]["count"] == 1
    # a subprocess by its command, the interpreter by its name only: no machine path
    [command] = [d for k, d in events if k == "subprocess"]
    assert command == f"{os.path.basename(sys.executable)} -c pass"
    assert str(tmp_path) not in json.dumps(run["events"])

    assert sum(m["tests"] for m in by_module(run).values()) == 3
    # the report over a before and an after run (here the same run twice, with other walls)
    walls = {"before": {"make test": 75.0, ".ci/run": 90.0, "make test-fast": 30.0},
             "after": {"make test": 45.0, ".ci/run": 60.0, "make test-fast": 20.0}}
    readme = write_report(tmp_path / "report", {"before": run, "after": run}, walls, {}, "cmd")
    text = readme.read_text()
    assert "| make test | 1 min 15.0 s | 0 min 45.0 s | ≤ 15 min |" in text
    assert (tmp_path / "report" / "modules.png").stat().st_size > 1000


def test_scrub_keeps_a_paths_last_part_only():
    assert scrub("python /home/someone/clone/.venv/bin/finrag serve --config /tmp/x/serve.yaml"
                 ) == "python .../finrag serve --config .../serve.yaml"
    assert scrub("0.5 s") == "0.5 s" and scrub("minilm") == "minilm"
    assert scrub("a/b relative/path") == "a/b relative/path"
