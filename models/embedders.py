"""Text embedders: one object per model kind, returning normalised float32 vectors."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from models.weights import MINILM_L6_V2, PackagedModel, resolve_packaged


class SentenceTransformerEmbedder:
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


def load_embedder(name: str = "minilm", **kwargs) -> SentenceTransformerEmbedder:
    """The embedder an index was built with, by its short name."""
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
