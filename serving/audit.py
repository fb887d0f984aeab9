"""The audit log: one JSON line per request that reads or is refused, naming the token (never
the token itself), the scope it read with, the filings routed to and the documents cited.

Lines go to a size-rotated file (``audit.jsonl``, ``audit.jsonl.1`` … ``.N``); ``finrag audit``
reads them back, oldest first, and filters them.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any, Iterator


class _PrivateFileHandler(RotatingFileHandler):
    """Each file it opens (the first and every one after a rotation) is its owner's only: who
    asked what is not for every local user."""

    def _open(self):
        stream = super()._open()
        os.chmod(self.baseFilename, 0o600)
        return stream


class AuditLog:
    def __init__(self, path: str | Path, *, max_bytes: int = 10 * 2**20, backups: int = 5):
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # a logger of its own, never propagated: audit lines go nowhere else
        self._log = logging.getLogger(f"finrag.audit.{id(self)}")
        self._log.propagate = False
        self._log.setLevel(logging.INFO)
        handler = _PrivateFileHandler(self.path, maxBytes=max_bytes, backupCount=backups,
                                      encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(message)s"))
        self._log.addHandler(handler)
        self._handler = handler
        self._lock = threading.Lock()

    def record(self, *, token: str | None, collections: list[str] | None, path: str,
               status: int, routed: list[str] = (), cited: list[str] = (),
               **extra: Any) -> None:
        """``token``: its name (None: no token configured; "-": none valid was given);
        ``collections``: what it reads (None: every collection)."""
        line = {"ts": round(time.time(), 3), "token": token, "collections": collections,
                "path": path, "status": status, "routed": sorted(set(routed)),
                "cited": sorted(set(cited)), **extra}
        with self._lock:
            self._log.info(json.dumps(line, sort_keys=True))

    def close(self) -> None:
        self._log.removeHandler(self._handler)
        self._handler.close()


def read_audit(path: str | Path) -> Iterator[dict[str, Any]]:
    """Every line of the log and its rotated files, oldest first (a torn line is skipped)."""
    path = Path(path).expanduser()
    files = sorted(path.parent.glob(path.name + ".*"),
                   key=lambda p: -int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0)
    for f in [*[f for f in files if f.suffix[1:].isdigit()], path]:
        if not f.is_file():
            continue
        with f.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue


def matches(entry: dict[str, Any], *, token: str | None = None, doc: str | None = None,
            since: float | None = None, status: int | None = None) -> bool:
    return ((token is None or entry.get("token") == token)
            and (doc is None or doc in entry.get("routed", []) or doc in entry.get("cited", [])
                 or entry.get("doc") == doc)
            and (since is None or entry.get("ts", 0) >= since)
            and (status is None or entry.get("status") == status))
