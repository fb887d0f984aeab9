"""One writer per index folder: an exclusive lock on ``<folder>/write.lock``, held while an
index is open for writing (ingest, remove). The kernel drops it when the process ends, however
it ends, so a killed run never leaves the index locked."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = "write.lock"


class IndexBusyError(RuntimeError):
    """Another process is writing this index."""


class WriterLock:
    def __init__(self, folder: Path):
        self.path = Path(folder) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> "WriterLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise IndexBusyError(
                f"another process (pid {holder}) is writing the index {self.path.parent}; "
                f"wait for it to finish, or use another --index folder") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
