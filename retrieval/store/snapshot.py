"""Published snapshots of an index, as they lie on disk, and the reader that serves them.

An ingest grows an index in place; a served app, and replicas on other nodes, read a published
snapshot of it instead (``retrieval.store.publish``, ``finrag publish``):

    ROOT/v000001/  catalog.sqlite (a rollback-journal database, never WAL), vectors.faiss,
                   manifest.json: version, created, the source index's generation, counts,
                   embedder, and the sha256 and size of every file
    ROOT/v000002/
    ROOT/CURRENT   the name of the version to serve, replaced atomically

A version never changes once CURRENT can name it; still, a version is known by the sha256 of
its manifest, not its name alone, so a root deleted and published anew (its v000001 another
index's) is not taken for the one a reader or a local copy has. It is opened immutable: SQLite writes nothing
beside it (no lock, journal, ``-wal`` or ``-shm``), so any number of readers can share one on a
shared or read-only volume. Every file is checked against its manifest before it is served.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from finrag.models.weights import sha256_file

CURRENT_FILE = "CURRENT"
MANIFEST_FILE = "manifest.json"
DEFAULT_KEEP = 3  # versions a publish keeps: replicas still on the one before have it
CACHE_ENV = "FINRAG_SNAPSHOT_CACHE"  # replicas copy each version they serve under it
_VERSION = re.compile(r"^v(\d{6,})$")
# the search settings a reader gave the vectors, kept when it moves to a newer version
_VECTOR_SETTINGS = ("approximate", "nprobe", "ef_search", "gpu", "scoped")

log = logging.getLogger("finrag.snapshot")


class SnapshotError(RuntimeError):
    """A published snapshot that cannot be served: a file missing or not matching its checksum,
    a manifest or CURRENT that cannot be read."""


@dataclass
class Snapshot:
    """A published version, as its manifest describes it."""

    folder: Path
    version: int
    created: str
    source: str  # the index folder it was published from
    generation: int  # the source catalog's, when it was copied
    documents: int
    chunks: int
    embedder: dict[str, Any]
    files: dict[str, dict[str, Any]]  # name -> {"sha256", "bytes"}
    new: bool = True  # False: ``publish`` found this generation already published
    digest: str = ""  # sha256 of the manifest file as read: which version this is

    @property
    def name(self) -> str:
        return self.folder.name

    def size_bytes(self) -> int:
        return sum(f["bytes"] for f in self.files.values())

    def manifest(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("folder", "new", "digest"):
            out.pop(key)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "folder": str(self.folder), **self.manifest(),
                "bytes": self.size_bytes(), "new": self.new}


def version_name(number: int) -> str:
    return f"v{number:06d}"


def version_number(name: str) -> int | None:
    found = _VERSION.match(name)
    return int(found.group(1)) if found else None


def is_publish_root(folder: str | Path) -> bool:
    return (Path(folder) / CURRENT_FILE).is_file()


def versions(root: Path) -> list[Path]:
    """The version folders under ``root``, oldest first."""
    found = [p for p in Path(root).iterdir() if p.is_dir() and version_number(p.name) is not None]
    return sorted(found, key=lambda p: version_number(p.name))


def current_version(root: Path) -> Path:
    """The version folder CURRENT names."""
    root = Path(root)
    try:
        name = (root / CURRENT_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise SnapshotError(f"cannot read {root / CURRENT_FILE}: "
                            f"{getattr(e, 'strerror', None) or e}") from None
    if version_number(name) is None:
        raise SnapshotError(f"{root / CURRENT_FILE} names {name[:40]!r}, not a version "
                            "(v000001, …)")
    if not (root / name).is_dir():
        raise SnapshotError(f"{root / CURRENT_FILE} names {name}, which is not in {root}")
    return root / name


def point_current(root: Path, name: str) -> None:
    """Make CURRENT name ``name``: written beside it, flushed, renamed over it."""
    tmp = root / f".{CURRENT_FILE}.{os.getpid()}.tmp"
    tmp.write_text(name + "\n", encoding="utf-8")
    fsync(tmp)
    os.replace(tmp, root / CURRENT_FILE)
    fsync(root)


def fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_manifest(folder: Path) -> Snapshot:
    path = Path(folder) / MANIFEST_FILE
    try:
        data = path.read_bytes()
        raw = json.loads(data.decode("utf-8"))
        if not isinstance(raw, dict) or "digest" in raw:
            raise ValueError("not a manifest object")
        snapshot = Snapshot(folder=Path(folder), **raw, digest=hashlib.sha256(data).hexdigest())
    except FileNotFoundError:
        raise SnapshotError(f"snapshot {folder}: {MANIFEST_FILE} is missing") from None
    except (OSError, ValueError, TypeError) as e:
        raise SnapshotError(f"snapshot {folder}: {MANIFEST_FILE} cannot be read ({e})") from None
    for name, entry in snapshot.files.items():
        if Path(name).name != name or name in (".", "..") or not isinstance(entry, dict):
            raise SnapshotError(f"snapshot {folder}: {MANIFEST_FILE} lists {name!r}, not a "
                                f"file of the snapshot")
    return snapshot


def verify(folder: Path) -> Snapshot:
    """The snapshot's manifest, once every file it lists has its size and sha256; else a
    ``SnapshotError`` naming the file."""
    snapshot = read_manifest(folder)
    for name, want in snapshot.files.items():
        path = Path(folder) / name
        if not path.is_file():
            raise SnapshotError(f"snapshot {folder}: {name} is missing ({MANIFEST_FILE} lists "
                                f"it); refused")
        size = path.stat().st_size
        if size != want.get("bytes") or sha256_file(path) != want.get("sha256"):
            raise SnapshotError(f"snapshot {folder}: {name} does not match its checksum in "
                                f"{MANIFEST_FILE} (damaged or changed since it was "
                                f"published); refused: publish again, or copy it anew")
    return snapshot


def local_copy_of(folder: Path, cache: Path, *, check: bool = True) -> Path:
    """A copy of a version folder under ``cache``, verified (``check``) before it is used. It
    is made once per machine, so the deployments of one node share it; one that fails the
    check is made again. Copies of the same root's other versions past the two newest go."""
    root = folder.resolve().parent
    place = Path(cache) / f"{root.name}-{hashlib.sha256(str(root).encode()).hexdigest()[:10]}"
    place.mkdir(parents=True, exist_ok=True)
    target = place / folder.name
    if target.is_dir():
        try:
            if _manifest_digest(target) != _manifest_digest(folder):
                raise SnapshotError(f"{target} is a copy of another {folder.name} (the publish "
                                    f"root was made anew)")
            if check:
                verify(target)
            return target
        except SnapshotError as e:
            log.warning("%s; copying it again", e)
            shutil.rmtree(target, ignore_errors=True)
    tmp = place / f".{folder.name}.{os.getpid()}.{threading.get_ident()}.part"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        shutil.copytree(folder, tmp)
        if check:
            verify(tmp)
        try:
            os.rename(tmp, target)
        except OSError:  # another process of this machine copied it first
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for old in versions(place)[:-2]:
        if old != target:
            shutil.rmtree(old, ignore_errors=True)
    return target


def _manifest_digest(folder: Path) -> str | None:
    try:
        return hashlib.sha256((Path(folder) / MANIFEST_FILE).read_bytes()).hexdigest()
    except OSError:
        return None


def resolve(path: str | Path) -> Path:
    """The version folder ``path`` means: CURRENT's version of a publish root, or a version
    folder itself."""
    path = Path(path)
    if is_publish_root(path):
        return current_version(path)
    if (path / MANIFEST_FILE).is_file():
        return path
    raise FileNotFoundError(f"no published snapshot at {path} (expected {CURRENT_FILE} or "
                            f"{MANIFEST_FILE}); make one with `finrag publish --index DIR "
                            f"--to {path}`")


def prepare(folder: Path, *, check: bool = True,
            local_copy: Path | None = None) -> tuple[Path, Snapshot]:
    """(the folder to open, its manifest): copied to ``local_copy`` first when given (the copy
    verified), else verified in place (``check``)."""
    if local_copy is not None:
        target = local_copy_of(folder, local_copy, check=check)
        return target, read_manifest(target)
    return folder, verify(folder) if check else read_manifest(folder)


class PublishedIndex:
    """The version of a publish root that CURRENT names, read as an ``Index`` is read.

    ``refresh``, the call with which every reader catches up before it reads, also follows
    CURRENT (a stat of it, at most every ``recheck_s``): a newer version is opened and verified
    aside, then swapped in. The old one is not closed: a request still reading it finishes on
    it, and its connection and vectors are freed with it when the last reference goes. A newer
    version that fails to open or verify is logged and not served; the current one stays.

    ``open_version`` opens a verified version folder (``Index.open(folder, immutable=True)``).
    """

    readonly = True

    def __init__(self, root: Path, open_version: Callable[[Path], Any], *, check: bool = True,
                 local_copy: Path | None = None, recheck_s: float = 1.0):
        self.root = Path(root)
        self._open_version, self._check, self._local_copy = open_version, check, local_copy
        self.recheck_s = recheck_s
        self._swapping = threading.Lock()
        self._checked_at = 0.0
        self._past = 0  # added to the version in ``generation``: a root made anew starts over
        self._stamp = self._current_stamp()
        # (index, its manifest), replaced as one: a reader never pairs one with another's
        self._current = self._open(current_version(self.root))

    @classmethod
    def open(cls, root: Path, open_version: Callable[[Path], Any], **kwargs) -> "PublishedIndex":
        """``local_copy`` defaults to $FINRAG_SNAPSHOT_CACHE (none when unset)."""
        if "local_copy" not in kwargs and os.environ.get(CACHE_ENV):
            kwargs["local_copy"] = Path(os.environ[CACHE_ENV]).expanduser()
        return cls(root, open_version, **kwargs)

    def _open(self, folder: Path):
        folder, snapshot = prepare(folder, check=self._check, local_copy=self._local_copy)
        return self._open_version(folder), snapshot

    def _current_stamp(self) -> tuple[int, int, int]:
        # os.replace gives CURRENT a new inode: a changed stamp means it may name another version
        st = (self.root / CURRENT_FILE).stat()
        return st.st_ino, st.st_mtime_ns, st.st_size

    @property
    def _index(self):
        return self._current[0]

    @property
    def snapshot(self) -> Snapshot:
        return self._current[1]

    # what a reader reads: the current version's -----------------------------------------
    @property
    def settings(self):
        return self._index.settings

    @property
    def catalog(self):
        return self._index.catalog

    @property
    def vectors(self):
        return self._index.vectors

    @property
    def folder(self) -> Path:
        return self._index.folder

    def search(self, query: str, query_vector, **kwargs):
        return self._index.search(query, query_vector, **kwargs)

    def search_fts(self, *args, **kwargs):
        return self._index.search_fts(*args, **kwargs)

    def search_dense(self, *args, **kwargs):
        return self._index.search_dense(*args, **kwargs)

    def scope(self, doc_ids):
        return self._index.scope(doc_ids)

    def documents(self):
        return self._index.documents()

    def check_embedder(self, embedder) -> None:
        self._index.check_embedder(embedder)

    def size_bytes(self) -> int:
        return self._index.size_bytes()

    def generation(self) -> int:
        """Moves with every version swapped in, and never back to an earlier version's value
        (the version above the catalog's own generation, a 32-bit SQLite user_version)."""
        index, snapshot = self._current
        return ((snapshot.version + self._past) << 32) | index.generation()

    # following CURRENT ------------------------------------------------------------------
    def refresh(self) -> bool:
        """True when a newer version was swapped in since the last call."""
        now = time.monotonic()
        if now - self._checked_at < self.recheck_s:
            return False
        self._checked_at = now
        try:
            stamp = self._current_stamp()
        except OSError:
            return False  # CURRENT being replaced right now: the next call sees the new one
        if stamp == self._stamp or not self._swapping.acquire(blocking=False):
            return False  # unchanged, or another thread is swapping in the new version now
        try:
            self._stamp = stamp  # a version that fails is not tried again until CURRENT moves
            folder = current_version(self.root)
            if folder.name == self.snapshot.name and \
                    _manifest_digest(folder) == self.snapshot.digest:
                return False
            index, snapshot = self._open(folder)
            old = self._index.vectors
            index.vectors.configure(**{k: getattr(old, k) for k in _VECTOR_SETTINGS})
            before = self.generation()
            if ((snapshot.version + self._past) << 32) | index.generation() <= before:
                self._past = (before >> 32) + 1 - snapshot.version
            self._current = (index, snapshot)
        except Exception as e:  # a reader must go on with what it has; the log says why
            log.warning("not switching %s to the version CURRENT names: %s; still serving %s",
                        self.root, e, self.snapshot.name)
            return False
        finally:
            self._swapping.release()
        log.info("%s: now serving %s (generation %d)", self.root, snapshot.name,
                 snapshot.generation)
        return True

    def close(self) -> None:
        self._index.close()

    def __enter__(self) -> "PublishedIndex":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
