"""Publishing an index: a consistent, read-only, checksummed copy of it as the next version of
a publish root (the layout is ``retrieval.store.snapshot``'s), and opening one.

The catalog is copied with SQLite's online backup in one read transaction: a running ingest is
not blocked (the index is WAL), and a document it has not committed is not in the copy. The
copy is switched to a rollback journal, so its readers never need a ``-wal`` or ``-shm``. The
FAISS file is then made to hold exactly the copy's chunks (the index's own repair on open), so
it cannot lag or lead the catalog it ships with.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from finrag.models.weights import sha256_file
from finrag.retrieval.store.catalog import Catalog
from finrag.retrieval.store.index import CATALOG_FILE, VECTORS_FILE, Index
from finrag.retrieval.store.lock import IndexBusyError, WriterLock
from finrag.retrieval.store.snapshot import (DEFAULT_KEEP, MANIFEST_FILE, Snapshot, SnapshotError,
                                             current_version, fsync, is_publish_root,
                                             point_current, prepare, read_manifest, resolve,
                                             version_name, version_number, versions)


def publish(index_dir: str | Path, root: str | Path, *, keep: int = DEFAULT_KEEP,
            progress: Callable[[str], None] | None = None) -> Snapshot:
    """Publish ``index_dir`` as ``root``'s next version and point CURRENT at it; the versions
    past the newest ``keep`` go (never the one CURRENT names). An index whose generation is
    already the current version's is not published again: that version comes back with
    ``new=False``."""
    index_dir, root = Path(index_dir), Path(root)
    say = progress or (lambda message: None)
    if keep < 1:
        raise ValueError(f"keep {keep}: at least the version published must be kept")
    if not (index_dir / CATALOG_FILE).is_file():
        raise FileNotFoundError(f"no index at {index_dir} (expected {CATALOG_FILE}); build one "
                                "with `finrag ingest`")
    if root.exists() and not root.is_dir():
        raise ValueError(f"{root} is a file, not a folder to publish into")
    if (root / CATALOG_FILE).exists() or root.resolve() == index_dir.resolve():
        raise ValueError(f"{root} holds an index; publish into a folder of its own")
    if index_dir.resolve() in root.resolve().parents:
        raise ValueError(f"{root} is inside the index {index_dir}; publish outside it")
    root.mkdir(parents=True, exist_ok=True)
    try:
        lock = WriterLock(root).acquire()
    except IndexBusyError:
        raise IndexBusyError(f"another `finrag publish` is publishing into {root}; wait for it "
                             "to finish") from None
    try:
        current = _current(root)
        source = Catalog(index_dir / CATALOG_FILE, readonly=True)
        try:
            if current is not None and current.source == str(index_dir.resolve()) \
                    and current.generation == source.generation():
                say(f"{index_dir} is unchanged since {current.name} (generation "
                    f"{current.generation}): no new version")
                return replace(current, new=False)
            number = max([version_number(p.name) for p in versions(root)], default=0) + 1
            staging = root / f".{version_name(number)}.part"
            shutil.rmtree(staging, ignore_errors=True)  # a killed publish's
            staging.mkdir()
            say(f"copying the catalog of {index_dir} ({_mb(index_dir / CATALOG_FILE)})…")
            _copy_catalog(source, staging / CATALOG_FILE)
        finally:
            source.close()
        folder = root / version_name(number)
        try:
            snapshot = _finish(staging, index_dir, number, say)
            os.rename(staging, folder)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        fsync(root)
        point_current(root, folder.name)
        say(f"CURRENT → {folder.name}")
        for gone in prune(root, keep):
            say(f"removed {gone.name} (keeping the newest {keep})")
        return replace(snapshot, folder=folder)
    finally:
        lock.release()


def _current(root: Path) -> Snapshot | None:
    """The version CURRENT names, if it can be read (a broken one is replaced by publishing)."""
    if not is_publish_root(root):
        return None
    try:
        return read_manifest(current_version(root))
    except SnapshotError:
        return None


def _copy_catalog(source: Catalog, path: Path) -> None:
    copy = sqlite3.connect(path)
    try:
        source.db.backup(copy)  # every page in one step: one read transaction, one commit state
        copy.execute("PRAGMA journal_mode=DELETE")
    finally:
        copy.close()


def _finish(staging: Path, index_dir: Path, number: int, say) -> Snapshot:
    """The vectors of the copied catalog, and the manifest of both files."""
    if (index_dir / VECTORS_FILE).is_file():  # saved by rename: this copy is one whole file
        shutil.copyfile(index_dir / VECTORS_FILE, staging / VECTORS_FILE)
    say("matching the vectors to the copied catalog…")
    with Index.open(staging, readonly=True) as index:  # repaired to the copy's chunk ids
        index.vectors.save(staging / VECTORS_FILE)
        settings, counts, generation = index.settings, index.catalog.counts(), index.generation()
    say("checksums…")
    files = {}
    for name in (CATALOG_FILE, VECTORS_FILE):
        fsync(staging / name)
        files[name] = {"sha256": sha256_file(staging / name),
                       "bytes": (staging / name).stat().st_size}
    snapshot = Snapshot(
        folder=staging, version=number,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        source=str(index_dir.resolve()), generation=generation,
        documents=counts["documents"], chunks=counts["chunks"],
        embedder={"name": settings.embedder,
                  "model_id": settings.embedder_model_id or settings.embedder,
                  "kind": settings.embedder_kind, "dim": settings.dim,
                  "normalize": settings.normalize, "variant": settings.variant},
        files=files)
    manifest = staging / MANIFEST_FILE
    manifest.write_text(json.dumps(snapshot.manifest(), indent=2) + "\n", encoding="utf-8")
    fsync(manifest)
    fsync(staging)
    return snapshot


def prune(root: Path, keep: int) -> list[Path]:
    """Remove the versions past the newest ``keep``, except the one CURRENT names, and what a
    killed publish left; returns the versions removed. Call it under the root's lock."""
    current = current_version(root).name if is_publish_root(root) else None
    gone = [p for p in versions(root)[:-keep] if p.name != current]
    for folder in gone:
        shutil.rmtree(folder)
    for part in root.glob(".v*.part"):
        shutil.rmtree(part, ignore_errors=True)
    return gone


def snapshots(root: str | Path) -> list[Snapshot]:
    """The versions of a publish root, oldest first (``SnapshotError`` for one whose manifest
    cannot be read)."""
    root = Path(root)
    if not is_publish_root(root):
        raise FileNotFoundError(f"no published snapshots at {root} (no CURRENT); make one with "
                                f"`finrag publish --index DIR --to {root}`")
    return [read_manifest(folder) for folder in versions(root)]


def open_snapshot(path: str | Path, *, verify: bool = True,
                  local_copy: Path | None = None) -> Index:
    """One version as a read-only ``Index``: CURRENT's of a publish root, or a version folder.
    Every file is checked against the manifest first (``verify``; after the copy, when
    ``local_copy`` names a folder to copy it under). Opened immutable: nothing is written into
    the snapshot's folder."""
    folder, _ = prepare(resolve(path), check=verify, local_copy=local_copy)
    return Index.open(folder, immutable=True)


def _mb(path: Path) -> str:
    return f"{path.stat().st_size / 1e6:.1f} MB"
