"""The session embedder's vectors kept on disk between test runs (#58).

Most of the in-process index builds of the suite are MiniLM forward passes over the same demo
and shared filings, run after run. ``CachedEmbedder`` wraps the real embedder: a text it has
embedded before, with the same weights, code and libraries, gets the vectors the model gave
then; any other text goes through the model. Parsing, chunking, the catalog, FTS and FAISS
still run for real. The key holds everything that changes a vector: the weights' sha256, the
sequence length, the embedder's source and the versions of torch, transformers and
sentence-transformers. ``FINRAG_TEST_EMBED_CACHE=off`` turns it off.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import sqlite3
from pathlib import Path

import numpy as np

DEFAULT_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "finrag-tests"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def model_key(embedder, weights_sha256: str) -> str:
    from finrag.models import embedders

    parts = [embedder.model_id, weights_sha256, str(embedder.max_seq_length), str(embedder.dim),
             Path(embedders.__file__).read_text(),
             *(_version(d) for d in ("torch", "transformers", "sentence-transformers"))]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


class CachedEmbedder:
    """The wrapped embedder in every attribute but ``encode``, which reads the cache first."""

    def __init__(self, embedder, weights_sha256: str, folder: Path = DEFAULT_DIR):
        self._embedder = embedder
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"vectors-{model_key(embedder, weights_sha256)}.sqlite"
        # two pytest workers may write at once: each write is one short transaction
        self._db = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS v (text_sha TEXT PRIMARY KEY, vec BLOB)")
        self._db.commit()
        self.hits = self.misses = 0

    def __getattr__(self, name):
        return getattr(self._embedder, name)

    def encode(self, texts: list[str], **kwargs) -> np.ndarray:
        if not texts:
            return self._embedder.encode(texts, **kwargs)
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        found: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            batch = keys[start:start + 500]
            rows = self._db.execute(f"SELECT text_sha, vec FROM v WHERE text_sha IN "
                                    f"({','.join('?' * len(batch))})", batch).fetchall()
            found.update(rows)
        todo = [i for i, k in enumerate(keys) if k not in found]
        out = np.empty((len(texts), self._embedder.dim), dtype=np.float32)
        for i, k in enumerate(keys):
            if k in found:
                out[i] = np.frombuffer(found[k], dtype=np.float32)
        if todo:
            fresh = self._embedder.encode([texts[i] for i in todo], **kwargs)
            out[todo] = fresh
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)",
                                     [(keys[i], fresh[j].tobytes()) for j, i in enumerate(todo)])
        self.hits += len(texts) - len(todo)
        self.misses += len(todo)
        return out
