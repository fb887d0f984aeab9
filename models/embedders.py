"""Text embedders: one object per model kind, returning normalised float32 vectors."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from finrag.models.weights import MINILM_L6_V2, PackagedModel, resolve_packaged


class QueryEmbedder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray:
        ...


class SentenceTransformerEmbedder(QueryEmbedder):
    """A sentence-transformers model loaded from a verified local folder (no hub access)."""

    def __init__(
        self,
        path: str | Path,
        *,
        model_id: str | None = None,
        batch_size: int = 32,
        max_seq_length: int | None = None,
        device: str = "cpu",
    ):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # per-tensor "Loading weights" bars are noise

        self.model_id = model_id or str(path)
        self.name = str(path)  # what load_embedder() takes to rebuild this embedder
        self.kind = "sentence-transformers"
        self.normalize = True  # encode() returns unit vectors
        self.batch_size = batch_size
        self._model = SentenceTransformer(str(path), device=device, local_files_only=True)
        if max_seq_length:
            self._model.max_seq_length = max_seq_length
        self.dim = int(self._model.get_embedding_dimension())
        self.max_seq_length = int(self._model.max_seq_length)

    @classmethod
    def packaged(cls, model: PackagedModel = MINILM_L6_V2, **kwargs) -> "SentenceTransformerEmbedder":
        return cls(resolve_packaged(model), model_id=model.model_id, **kwargs)

    def encode(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        """Embed texts as an (n, dim) float32 array of unit vectors."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=progress,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)


@dataclass
class M3Vectors:
    """All three BGE-M3 outputs for a list of texts, in the texts' order."""

    dense: np.ndarray  # (n, dim) float32 unit vectors
    sparse: list[dict[str, float]]  # per text: token id (as str, FlagEmbedding's key) -> weight > 0
    colbert: list[np.ndarray]  # per text: (n_tokens - 1, colbert_dim) float32 unit rows ([CLS] left out)


class BGEM3Embedder(QueryEmbedder):
    """BAAI/bge-m3 through FlagEmbedding's ``BGEM3FlagModel`` (the gpu profile's embedder).

    ``encode`` gives dense vectors like ``SentenceTransformerEmbedder``; ``encode_all`` also
    gives the sparse (lexical weights) and ColBERT vectors from the same forward pass. The
    folder must hold the transformers model and tokenizer plus FlagEmbedding's
    ``colbert_linear.pt`` and ``sparse_linear.pt`` (without them FlagEmbedding silently uses
    random heads, so they are required here).
    """

    def __init__(self, path: str | Path, *, batch_size: int = 16, max_length: int = 8192,
                 use_fp16: bool = False, device: str | None = None, model_id: str | None = None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        path = Path(path)
        missing = [f for f in ("colbert_linear.pt", "sparse_linear.pt") if not (path / f).is_file()]
        if not path.is_dir() or missing:
            raise FileNotFoundError(f"{path} is not a BGE-M3 folder (missing {missing or 'folder'})")
        from FlagEmbedding import BGEM3FlagModel
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        self.model_id = model_id or str(path)
        self.name = str(path)
        self.kind = "flag-embedding"
        self.normalize = True  # FlagEmbedding normalises the dense head
        self.batch_size = batch_size
        self.max_seq_length = max_length
        self._model = BGEM3FlagModel(str(path), use_fp16=use_fp16, devices=device,
                                     batch_size=batch_size, query_max_length=max_length,
                                     passage_max_length=max_length)
        self.dim = int(self._model.model.model.config.hidden_size)
        self.colbert_dim = int(self._model.model.colbert_linear.out_features)

    def _encode(self, texts: list[str], sparse: bool, colbert: bool) -> dict:
        # FlagEmbedding shows its own bars only when there are more texts than one batch
        return self._model.encode(list(texts), batch_size=self.batch_size,
                                  max_length=self.max_seq_length, return_dense=True,
                                  return_sparse=sparse, return_colbert_vecs=colbert)

    def encode(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        """Embed texts as an (n, dim) float32 array of unit vectors (the dense head)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._encode(texts, sparse=False, colbert=False)
        return np.ascontiguousarray(out["dense_vecs"], dtype=np.float32)

    def encode_all(self, texts: list[str]) -> M3Vectors:
        """Dense, sparse and ColBERT vectors for each text."""
        if not texts:
            return M3Vectors(np.zeros((0, self.dim), dtype=np.float32), [], [])
        out = self._encode(texts, sparse=True, colbert=True)
        return M3Vectors(
            dense=np.ascontiguousarray(out["dense_vecs"], dtype=np.float32),
            sparse=[{k: float(w) for k, w in d.items()} for d in out["lexical_weights"]],
            colbert=[np.asarray(v, dtype=np.float32) for v in out["colbert_vecs"]],
        )


def load_embedder(name: str = "minilm", *, kind: str = "sentence-transformers", **kwargs):
    """The embedder an index was built with, by its short name (or folder) and model kind.

    ``kind="sentence-transformers"``: 'minilm' or a local sentence-transformers folder;
    ``kind="flag-embedding"``: a local BGE-M3 folder, loaded as ``BGEM3Embedder``.
    """
    if kind == "flag-embedding":
        return BGEM3Embedder(name, **kwargs)
    if kind != "sentence-transformers":
        raise ValueError(f"unknown embedder kind {kind!r}: sentence-transformers or flag-embedding")
    if name in ("minilm", MINILM_L6_V2.model_id):
        embedder = SentenceTransformerEmbedder.packaged(MINILM_L6_V2, **kwargs)
        embedder.name = "minilm"
        return embedder
    path = Path(name)
    if path.is_dir():
        return SentenceTransformerEmbedder(path, **kwargs)
    raise ValueError(
        f"unknown embedder {name!r}: use 'minilm' (the packaged all-MiniLM-L6-v2) "
        "or a local sentence-transformers folder"
    )
