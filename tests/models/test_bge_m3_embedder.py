"""BGEM3Embedder on a tiny random BGE-M3-shaped model built offline (no hub access)."""

import numpy as np
import pytest

pytest.importorskip("FlagEmbedding")

from finrag.models.embedders import BGEM3Embedder, load_embedder  # noqa: E402

TEXTS = ["Revenue grew 12% in fiscal 2023.", "Net income", "The board declared a dividend of "
         "$0.50 per share payable in March, subject to the usual conditions."]


@pytest.fixture(scope="module")
def tiny_m3(tmp_path_factory):
    """A random XLM-R encoder (hidden 32, 2 layers) with MiniLM's WordPiece tokenizer, plus
    FlagEmbedding's colbert_linear.pt / sparse_linear.pt heads (models.tiny_model)."""
    from finrag.models.tiny_model import build_tiny_bge_m3

    return build_tiny_bge_m3(tmp_path_factory.mktemp("tiny-bge-m3"))


@pytest.fixture(scope="module")
def m3(tiny_m3):
    return BGEM3Embedder(tiny_m3, batch_size=2, max_length=64, device="cpu", model_id="tiny-m3")


def test_dense(m3):
    assert (m3.model_id, m3.dim, m3.max_seq_length) == ("tiny-m3", 32, 64)
    dense = m3.encode(TEXTS)
    assert dense.shape == (3, 32) and dense.dtype == np.float32
    assert np.allclose(np.linalg.norm(dense, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(m3.encode(TEXTS), dense)  # deterministic
    # batching and length-sorting do not change a text's vector
    assert np.allclose(m3.encode(TEXTS[1:2])[0], dense[1], atol=1e-5)
    assert m3.encode([]).shape == (0, 32)


def test_heads_loaded_from_folder(m3, tiny_m3):
    import torch

    heads = m3._model.model
    for name in ("colbert_linear", "sparse_linear"):
        saved = torch.load(tiny_m3 / f"{name}.pt", weights_only=True)
        assert torch.equal(getattr(heads, name).weight, saved["weight"])


def test_encode_all(m3):
    tokenizer = m3._model.tokenizer
    out = m3.encode_all(TEXTS)
    assert np.allclose(out.dense, m3.encode(TEXTS), atol=1e-6)
    special = {str(i) for i in tokenizer.all_special_ids}
    assert len(out.sparse) == len(out.colbert) == 3
    for text, weights, colbert in zip(TEXTS, out.sparse, out.colbert):
        ids = tokenizer(text, truncation=True, max_length=64)["input_ids"]
        assert weights and all(isinstance(w, float) and w > 0 for w in weights.values())
        assert set(weights) <= {str(i) for i in ids} - special
        # one row per token after [CLS] (FlagEmbedding keeps the closing [SEP] / </s>)
        assert colbert.shape == (len(ids) - 1, m3.colbert_dim) and colbert.dtype == np.float32
        assert np.allclose(np.linalg.norm(colbert, axis=1), 1.0, atol=1e-5)
    empty = m3.encode_all([])
    assert empty.dense.shape == (0, 32) and empty.sparse == [] and empty.colbert == []


def test_load_embedder_kind(tiny_m3, tmp_path):
    embedder = load_embedder(str(tiny_m3), kind="flag-embedding", device="cpu", max_length=64)
    assert isinstance(embedder, BGEM3Embedder) and embedder.name == str(tiny_m3)
    assert embedder.encode(TEXTS[:1]).shape == (1, 32)
    with pytest.raises(ValueError, match="kind"):
        load_embedder("minilm", kind="onnx")
    with pytest.raises(FileNotFoundError, match="sparse_linear.pt"):
        (tmp_path / "colbert_linear.pt").touch()
        BGEM3Embedder(tmp_path)
