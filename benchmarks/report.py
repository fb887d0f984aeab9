"""What every ``finrag bench`` report shares: the exact command, a configuration hash, the
results folder, raw JSON, append-only JSONL caches and a matplotlib that draws to files."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
SHARED = REPO.parent / "shared" / "data" / "financebench"


def command_line(args) -> str:
    """The command as a person would type it again: ``args.prog`` (default ``finrag``) and
    ``args.argv`` (set by ``finrag``'s main; else this process's arguments)."""
    argv = getattr(args, "argv", None)
    argv = sys.argv[1:] if argv is None else argv
    return " ".join([getattr(args, "prog", "finrag"), *(shlex.quote(a) for a in argv)])


def config_hash(config: Any, length: int = 12) -> str:
    """A short sha256 of a JSON-able configuration (keys sorted), so a cached result is reused
    only under the configuration that made it."""
    blob = json.dumps(config, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:length]


def code_version(*folders: str, exclude: tuple[str, ...] = (), length: int = 12) -> str:
    """A short sha256 of the source (``*.py``, ``*.yaml``) under ``folders`` of this repository
    (e.g. ``"retrieval", "models"``), less the subfolders in ``exclude``: part of every cache
    key, so that a change of code or of a prompt makes the cached results stale instead of
    silently reused."""
    digest = hashlib.sha256()
    skip = [REPO / e for e in exclude]
    for folder in folders:
        root = REPO / folder
        files = sorted(p for p in root.rglob("*") if p.suffix in (".py", ".yaml")
                       and p.is_file() and "__pycache__" not in p.parts
                       and not any(p.is_relative_to(e) for e in skip))
        for path in files:
            digest.update(str(path.relative_to(REPO)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:length]


def shown_path(path: str | Path) -> str:
    """A path as a report shows it: relative to the repository (``../shared/...`` for the
    shared data), never this machine's absolute path."""
    import os

    path = Path(path)
    if not path.is_absolute():
        return str(path)
    return os.path.relpath(path, REPO)


def results_dir(name: str, out: str | Path | None = None) -> Path:
    folder = Path(out) if out else RESULTS / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def header(title: str, command: str, chash: str, extra: Iterable[str] = ()) -> list[str]:
    """The first lines of a report: title, command and config hash."""
    return [f"# {title}", "", f"Command: `{command}`", "", f"Config hash: `{chash}`", *extra, ""]


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The records of an append-only JSONL; a line cut by a kill (not JSON) is skipped."""
    if not path.is_file():
        return
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(rec, dict):
                    yield rec


class JsonlCache:
    """An append-only JSONL of records keyed by ``rec['key']``; each line is flushed as it is
    written, so a killed run keeps every finished record and resumes after it."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.records: dict[str, dict[str, Any]] = {r["key"]: r for r in read_jsonl(self.path)
                                                   if "key" in r}
        self._repair()

    def _repair(self) -> None:
        """A cut last line would glue onto the next record: end the file with a newline."""
        if self.path.is_file() and self.path.stat().st_size:
            with self.path.open("rb") as fh:
                fh.seek(-1, 2)
                last = fh.read(1)
            if last != b"\n":
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write("\n")

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def get(self, key: str) -> dict[str, Any] | None:
        return self.records.get(key)

    def add(self, key: str, record: Mapping[str, Any]) -> dict[str, Any]:
        rec = {"key": key, **record}
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, default=str) + "\n")
            fh.flush()
        self.records[key] = rec
        return rec


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plain_log_ticks(ax) -> None:
    """A log x axis labelled in plain numbers: 1..9 × 10^k over about a decade, 1, 2, 5 × 10^k
    over a few, 10^k alone over more (matplotlib's default writes every
    minor tick as 3×10^1, 4×10^1, … and they run into each other)."""
    import numpy as np
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    low, high = ax.get_xlim()
    decades = range(int(np.floor(np.log10(low))), int(np.ceil(np.log10(high))) + 1)
    span = np.log10(high / low)
    steps = range(1, 10) if span < 1.2 else (1, 2, 5) if span <= 4 else (1,)
    ticks = [m * 10.0 ** k for k in decades for m in steps]
    ax.xaxis.set_major_locator(FixedLocator([t for t in ticks if low <= t <= high]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def savefig(fig, out: Path, name: str) -> str:
    """Lay out, write ``out/name`` (PNG) and close the figure; returns ``name``."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(out / name, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return name


def pct(v: float | None, digits: int = 1) -> str:
    return "–" if v is None else f"{100 * v:.{digits}f}%"


def num(v: float | None, fmt: str = "{:,.1f}") -> str:
    return "–" if v is None else fmt.format(v)
