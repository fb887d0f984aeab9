"""Start and stop the Serve app from Python (``finrag serve``, ``make demo``, tests).

``serve run deploy/cpu.yaml`` does the same through Serve's own CLI.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
from pathlib import Path

from finrag.serving.config import AppConfig, load_serve_file

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "deploy" / "cpu.yaml"
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def _request(request: urllib.request.Request, timeout: float,
             token: str | None) -> tuple[int, dict]:
    """(status, JSON body) of an HTTP request; an error status is returned, not raised."""
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read() or b"{}")
        except ValueError:
            return e.code, {}


def get_json(url: str, timeout: float = 10.0, token: str | None = None) -> tuple[int, dict]:
    return _request(urllib.request.Request(url), timeout, token)


def init_ray(address: str | None = None, *, num_cpus: int | None = None,
             quiet: bool = True) -> bool:
    """Connect to the cluster at ``address`` (or $RAY_ADDRESS), else start a local Ray on this
    machine's cores; True if this call started one. Ray's start replaces the SIGTERM handler
    with one that aborts the process; ours (if any) is put back, so SIGTERM still stops
    cleanly."""
    import signal
    import threading

    import ray

    from finrag.serving.proxy_guard import CALLBACK_ENV, PROXY_CALLBACK

    if ray.is_initialized():
        return False
    # Serve's proxy runs the header guard first: a Ray started here inherits this; a cluster's
    # nodes set it in their own environment (deploy/)
    os.environ.setdefault(CALLBACK_ENV, PROXY_CALLBACK)
    address = address or os.environ.get("RAY_ADDRESS")
    level = logging.WARNING if quiet else logging.INFO
    logging.getLogger("ray.serve").setLevel(level)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    if address:
        ray.init(address=address, log_to_driver=not quiet, logging_level=level)
    else:
        ray.init(num_cpus=num_cpus or os.cpu_count(), include_dashboard=False,
                 log_to_driver=not quiet, logging_level=level)
    if main and callable(previous):
        signal.signal(signal.SIGTERM, previous)
    return not address


def post_json(url: str, body: dict, timeout: float = 600.0, token: str | None = None
              ) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    return _request(request, timeout, token)


def free_port(host: str = "127.0.0.1") -> int:
    import socket

    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class Service:
    """The app running on a local Ray (or the cluster at ``address``), as a context manager:

        with Service(cfg, port=8000) as url: ...

    ``start`` returns once /healthz says every deployment is ready (bounded by ``timeout``);
    ``stop`` deletes the app, shuts Serve down and, if this object started Ray, Ray too."""

    def __init__(self, cfg: AppConfig, *, host: str = "127.0.0.1", port: int = 8000,
                 address: str | None = None, num_cpus: int | None = None, quiet: bool = True,
                 proxy_location: str = "HeadOnly"):
        self.cfg, self.host, self.port = cfg, host, port
        self.proxy_location = proxy_location  # Serve's: HeadOnly, EveryNode or Disabled
        self.address, self.num_cpus, self.quiet = address, num_cpus, quiet
        self.url = f"http://{host}:{port}"
        self._started_ray = False

    def start(self, timeout: float = 900.0, progress=print) -> str:
        from ray import serve

        from finrag.serving.admission import check_auth
        from finrag.serving.app import build_app

        check_auth(self.cfg, self.host)  # before anything starts: nothing to clean up
        self._started_ray = init_ray(self.address, num_cpus=self.num_cpus, quiet=self.quiet)
        # past request_timeout_s Serve's proxy answers 408 itself: a backstop behind the
        # Ingress's own deadline, for a request whose handler never returns
        serve.start(proxy_location=self.proxy_location,
                    http_options={"host": self.host, "port": self.port,
                                  "request_timeout_s": self.cfg.limits.deadline_s + 60},
                    logging_config={"log_level": "WARNING" if self.quiet else "INFO"})
        progress(f"starting the finrag app on {self.url} (models load in each deployment)…")
        serve.run(build_app(self.cfg), name="finrag", route_prefix="/", blocking=False)
        deadline = time.monotonic() + timeout
        status, body = 0, {}
        while time.monotonic() < deadline:
            try:
                status, body = get_json(f"{self.url}/healthz", timeout=60)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                status = 0
            if status == 200:
                return self.url
            failed = self._failure(serve)
            if failed:
                self.stop()
                raise RuntimeError(f"the app failed to start: {failed}")
            time.sleep(1.0)
        self.stop()
        raise TimeoutError(f"the app was not ready within {timeout:.0f} s "
                           f"(last /healthz: {status} {body.get('error', '')})")

    @staticmethod
    def _failure(serve) -> str | None:
        """Why the app failed to deploy, if it has (a deployment's constructor raised)."""
        app = serve.status().applications.get("finrag")
        if app is None or app.status != "DEPLOY_FAILED":  # a str enum
            return None
        lines = [app.message] + [f"{name}: {d.message}" for name, d in app.deployments.items()
                                 if d.message]
        return "; ".join(m.strip().splitlines()[-1] for m in lines if m and m.strip())

    def stop(self) -> None:
        import ray
        from ray import serve

        if ray.is_initialized():
            try:
                serve.shutdown()
            finally:
                if self._started_ray:
                    ray.shutdown()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def service_from_file(config: str | Path | None = None, *, index: str | None = None,
                      profile: str | None = None, host: str | None = None,
                      port: int | None = None) -> Service:
    """A ``Service`` from a Serve config file, with command-line overrides."""
    if config is None and not DEFAULT_CONFIG.is_file():  # installed without the repo's deploy/
        serve_file, cfg = None, AppConfig()
    else:
        serve_file = load_serve_file(config or DEFAULT_CONFIG)
        cfg = serve_file.app_config()
    updates = {k: v for k, v in (("index", index), ("profile", profile)) if v is not None}
    if updates:
        cfg = cfg.model_copy(update=updates)
    http = serve_file.http_options if serve_file else {}
    return Service(cfg, host=host or http.get("host", "127.0.0.1"),
                   port=port or int(http.get("port", 8000)),
                   proxy_location=serve_file.proxy_location if serve_file else "HeadOnly")
