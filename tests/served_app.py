"""`finrag serve` in a subprocess on 127.0.0.1 for the HTTP tests: real Ray, tiny models, a copy
of the demo index; stopped with SIGTERM, and every Ray process of its own folder ended."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from finrag.serving.server import free_port, get_json

ROOT = Path(__file__).resolve().parent.parent


def ray_pids(raydir: str) -> list[int]:
    """Processes whose command line names this app's Ray folder."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if raydir in cmd:
            pids.append(int(entry.name))
    return pids


@contextlib.contextmanager
def serve_app(work: Path, index: Path, *, token: str, limits: dict | None = None,
              profile: str = "tiny", pipeline: dict | None = None, auth: dict | None = None,
              address: str | None = None, deployments: dict | None = None):
    """Yields {url, proc, raydir, log} once /healthz answers 200. ``pipeline``: settings that
    replace the profile's own (a profiles file of the app's, written beside its config).
    ``address``: run on that Ray cluster (raydir is then the cluster's, and left running);
    ``deployments``: options that replace a deployment's (placement)."""
    try:  # under pytest; tests/gpu_tiny_check.py imports this module in the vLLM venv too
        from tests.conftest import need_weights
    except ImportError:
        need_weights = None
    if need_weights is not None:
        need_weights(profile)
    port = free_port()
    config = yaml.safe_load((ROOT / "deploy" / "cpu.yaml").read_text())
    config["http_options"]["port"] = port
    args = config["applications"][0]["args"]
    args.update(profile=profile, index=str(index))
    if pipeline:
        profiles = yaml.safe_load((ROOT / "models" / "profiles.yaml").read_text())
        profiles["profiles"][profile]["pipeline"] = {
            **profiles["profiles"][profile].get("pipeline", {}), **pipeline}
        (work / "profiles.yaml").write_text(yaml.safe_dump(profiles))
        args["profiles_file"] = str(work / "profiles.yaml")
    args["limits"].update(limits or {})
    args["deployments"].update(deployments or {})
    args["auth"] = {"bearer_token": token, **(auth or {})}
    (work / "serve.yaml").write_text(yaml.safe_dump(config))
    raydir = tempfile.mkdtemp(prefix="frt", dir="/tmp")  # short: Ray's socket paths are long
    env = dict(os.environ, RAY_TMPDIR=raydir, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    if address:
        env.update(RAY_ADDRESS=address, RAY_TMPDIR=os.environ.get("RAY_TMPDIR", raydir))
    log = open(work / "serve.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "finrag.serving.cli", "serve", "--config",
                             str(work / "serve.yaml")], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    try:
        while True:
            assert proc.poll() is None, (work / "serve.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "app not ready in 600 s"
            try:
                if get_json(url + "/healthz", timeout=30)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(1)
        yield {"url": url, "proc": proc, "raydir": raydir, "log": work / "serve.log"}
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
        for pid in [] if address else ray_pids(raydir):  # only this app's processes
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()
        shutil.rmtree(raydir, ignore_errors=True)


def ask(url: str, token: str, question: str, *, generate: bool = False,
        timeout: float = 85) -> tuple[int, dict, float]:
    """POST /v1/answer: (status, reply, seconds); an HTTP error is a reply, not an exception."""
    import json
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url + "/v1/answer", method="POST",
                                 data=json.dumps({"question": question,
                                                  "generate": generate}).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {token}"})
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read()), time.monotonic() - t0
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}"), time.monotonic() - t0


def start_load(ask_one, questions: list[str], seconds: float, clients: int = 3):
    """``clients`` threads asking ``ask_one(question)`` in turn for at most ``seconds``, or until
    ``stop`` is set (a pause after a reply that is not 200); returns (results, threads, stop):
    results fill with each reply, and a request under way when ``stop`` is set is finished."""
    import threading

    results: list = []
    stop_at = time.monotonic() + seconds
    stop = threading.Event()

    def client(i: int):
        while time.monotonic() < stop_at and not stop.is_set():
            reply = ask_one(questions[i % len(questions)])
            results.append(reply)
            if reply[0] != 200:
                time.sleep(1)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    return results, threads, stop


# --- one tiny app for the HTTP tests that only ask questions ---------------------------------
# test_served_tiny, test_clients and test_hardening_http ask the same app (conftest's
# `tiny_app`): started by the first of them, stopped after the last (conftest runs them one after
# another). Its limits are the hardening tests' (small, so they are reached quickly); every
# optional catalog stage is on, so each catalog call of the served stand-ins crosses a real handle.
TINY_TOKEN = "tiny-app-token-7f3a9c"
TINY_RETRY_AFTER_S = 3
TINY_BODY_TIMEOUT_S = 2.0
TINY_UPLOAD_TIMEOUT_S = 20.0
TINY_LIMITS = {"max_in_flight": 1, "deadline_s": 300, "retry_after_s": TINY_RETRY_AFTER_S,
               "body_timeout_s": TINY_BODY_TIMEOUT_S, "max_writes": 1,
               "upload_timeout_s": TINY_UPLOAD_TIMEOUT_S}
EVERY_CATALOG_STAGE = {"statement_pages": 1, "section_pages": 1}


class SharedApp:
    """A served app kept from its first user to its last. ``stop`` is the clean shutdown users
    get: SIGTERM, exit status 0 within 180 s, no Ray process of its own left, the port closed."""

    def __init__(self):
        self.app: dict | None = None
        self._cm = None

    def start(self, app_context) -> dict:
        """Enter ``app_context`` (a `serve_app(...)`)."""
        assert self.app is None, "already started"
        self._cm = app_context
        self.app = app_context.__enter__()
        return self.app

    def stop(self) -> None:
        if self.app is None:
            return
        app, cm, self.app, self._cm = self.app, self._cm, None, None
        proc = app["proc"]
        try:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(180)
            deadline = time.monotonic() + 30
            while ray_pids(app["raydir"]) and time.monotonic() < deadline:
                time.sleep(0.5)
            left = ray_pids(app["raydir"])
            refused = False
            try:
                get_json(app["url"] + "/healthz", timeout=5)
            except OSError:
                refused = True
        finally:
            cm.__exit__(None, None, None)
        assert code == 0, app["log"].read_text()[-3000:]
        assert left == [] and refused, (left, refused)


TINY_APP = SharedApp()
