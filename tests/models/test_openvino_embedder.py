"""The OpenVINO runtime for the sentence-transformers embedder (models/openvino_embedder.py):
the same vectors as sentence-transformers within bfloat16's tolerance, in the texts' order,
converted once into the cache, and interchangeable with them for an index."""

import json
import shutil

import numpy as np
import pytest

from finrag.models.openvino_embedder import OpenVinoEmbedder, converted
from finrag.models.profiles import RoleSpec, load_config, load_profile_embedder
from finrag.models.weights import MINILM_L6_V2, resolve_packaged

TEXTS = ["What was 3M's revenue in fiscal 2018?", "x", "",
         "Capital expenditures (purchases of property, plant and equipment) were $1,577 "
         "million in 2018, up from $1,373 million. " * 30,
         "Umsatzerlöse stiegen um 12 % — ¥ and € figures", "net income"]


@pytest.fixture(scope="module")
def openvino_embedder():
    return load_profile_embedder(load_config().active("cpu"))


def test_vectors_match_sentence_transformers_in_order(openvino_embedder, embedder):
    assert isinstance(openvino_embedder, OpenVinoEmbedder)
    assert (openvino_embedder.name, openvino_embedder.model_id, openvino_embedder.kind,
            openvino_embedder.dim) == (embedder.name, embedder.model_id, embedder.kind,
                                       embedder.dim)
    ours, theirs = openvino_embedder.encode(TEXTS), embedder.encode(TEXTS)
    assert ours.shape == theirs.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    cosines = np.sum(ours * theirs, axis=1)
    floor = 0.9999 if openvino_embedder.precision == "bf16" else 0.999999
    assert cosines.min() > floor, (openvino_embedder.precision, cosines)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    # each text's vector is its own, whatever batch it was in (batches go by length)
    alone = np.stack([openvino_embedder.encode([t])[0] for t in TEXTS])
    assert np.allclose(alone, ours, atol=2e-3)
    assert openvino_embedder.encode([]).shape == (0, 384)


def test_an_index_takes_either_runtime(openvino_embedder, embedder, tmp_path):
    from finrag.retrieval.store.index import Index, IndexSettings

    settings = IndexSettings(embedder=openvino_embedder.name, embedder_kind=openvino_embedder.kind,
                             embedder_model_id=openvino_embedder.model_id,
                             dim=openvino_embedder.dim)
    with Index.create_or_open(tmp_path / "index", settings) as index:
        index.check_embedder(embedder)
        index.check_embedder(openvino_embedder)


def test_the_conversion_is_made_once_and_kept(openvino_embedder):
    folder = resolve_packaged(MINILM_L6_V2)
    first = converted(folder)
    stamp = first.stat().st_mtime_ns
    assert converted(folder) == first and first.stat().st_mtime_ns == stamp
    assert first.with_suffix(".bin").is_file()
    assert not [p for p in first.parent.parent.iterdir() if p.name.startswith(".converting-")]


def test_only_mean_pooled_models_and_only_embedders(tmp_path):
    folder = tmp_path / "cls-model"
    shutil.copytree(resolve_packaged(MINILM_L6_V2), folder)
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**config, "pooling_mode_mean_tokens": False,
                                   "pooling_mode_cls_token": True}))
    with pytest.raises(ValueError, match="mean Pooling"):
        converted(folder)
    with pytest.raises(ValueError, match="runtime openvino runs a sentence-transformers"):
        RoleSpec(kind="maxsim", model=MINILM_L6_V2.model_id, runtime="openvino")
