"""This process's memory, read from /proc: resident memory before, at its peak during and after
a block of work (``PeakRss``), and the memory the machine has available."""

from __future__ import annotations

import re
import threading
from pathlib import Path


class PeakRss:
    """Process resident memory before, at its peak during, and after a block. The peak is the
    kernel's high-water mark (VmHWM, reset through /proc/self/clear_refs) where that works,
    else the highest of samples every 20 ms."""

    def __enter__(self):
        self.before = _status("VmRSS")
        self._hwm = False
        try:
            Path("/proc/self/clear_refs").write_text("5")
            self._hwm = _status("VmHWM") is not None
        except OSError:
            pass
        self.peak = self.before or 0
        self._stop = threading.Event()
        if not self._hwm:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _status("VmRSS") or 0)

    def __exit__(self, *exc):
        self._stop.set()
        if not self._hwm:
            self._thread.join()
        self.after = _status("VmRSS")
        self.peak = max(self.peak, _status("VmHWM") if self._hwm else 0, self.after or 0)
        return False

    def figures(self) -> dict[str, int | None]:
        if self.before is None:
            return {"rss_peak_delta": None, "rss_retained_delta": None}
        return {"rss_peak_delta": self.peak - self.before,
                "rss_retained_delta": self.after - self.before}


def _status(field: str) -> int | None:
    """A /proc/self/status figure in bytes (None off Linux)."""
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    m = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
    return int(m.group(1)) * 1024 if m else None


def mem_available() -> int | None:
    try:
        m = re.search(r"^MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.M)
    except OSError:
        return None
    return int(m.group(1)) * 1024 if m else None
