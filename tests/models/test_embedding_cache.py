"""The suite's embedding cache (tests/embedding_cache.py) gives the model's own vectors, and
misses when anything in its key changes."""

import numpy as np

from embedding_cache import CachedEmbedder


def test_cached_vectors_are_the_models_and_a_new_key_misses(tmp_path):
    from finrag.models.embedders import load_embedder
    from finrag.models.weights import MINILM_L6_V2

    model = load_embedder("minilm")
    texts = ["Revenue rose 12% to $3,793 million.", "Item 3. Legal Proceedings", "Revenue rose 12% to $3,793 million."]
    direct = model.encode(texts)

    cached = CachedEmbedder(model, MINILM_L6_V2.sha256, folder=tmp_path)
    first = cached.encode(texts)
    assert (cached.hits, cached.misses) == (0, 3)
    second = cached.encode(texts[1:] + ["a text not seen before"])
    assert (cached.hits, cached.misses) == (2, 4)
    np.testing.assert_array_equal(second[:2], first[1:])  # read back bit for bit
    np.testing.assert_allclose(first, direct, atol=1e-5)
    assert second.dtype == np.float32 and second.flags.c_contiguous
    assert cached.encode([]).shape == (0, model.dim)
    assert (cached.name, cached.dim, cached.model_id) == (model.name, model.dim, model.model_id)

    other = CachedEmbedder(model, "0" * 64, folder=tmp_path)  # other weights: another file
    assert other.path != cached.path
    other.encode(texts[:1])
    assert (other.hits, other.misses) == (0, 1)
