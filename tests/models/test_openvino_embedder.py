"""The OpenVINO runtime for the sentence-transformers embedder (models/openvino_embedder.py):
the same vectors as sentence-transformers within bfloat16's tolerance, in the texts' order,
converted once into the cache, and interchangeable with them for an index; its int8 copy,
quantized once on the demo corpus's text."""

import json
import shutil

import numpy as np
import pytest

from finrag.models.openvino_embedder import (OpenVinoEmbedder, calibration_texts,
                                             calibration_windows, converted, quantized)
from finrag.models.profiles import RoleSpec, load_config, load_profile_embedder
from finrag.models.weights import MINILM_L6_V2, resolve_packaged

TEXTS = ["What was 3M's revenue in fiscal 2018?", "x", "",
         "Capital expenditures (purchases of property, plant and equipment) were $1,577 "
         "million in 2018, up from $1,373 million. " * 30,
         "Umsatzerlöse stiegen um 12 % — ¥ and € figures", "net income"]


@pytest.fixture(scope="module")
def openvino_embedder():
    """The cpu profile's embedder at the float precision (bfloat16 where the CPU has it)."""
    return load_profile_embedder(load_config().active("cpu"), precision="auto")


def test_the_cpu_profiles_embed_in_int8():
    for name in ("cpu", "cpu-large", "cpu-transformers"):
        spec = load_config().active(name).role("embedder")
        assert (spec.runtime, spec.precision) == ("openvino", "int8"), name


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


def test_int8_is_quantized_once_and_stays_close(embedder):
    folder = resolve_packaged(MINILM_L6_V2)
    int8 = OpenVinoEmbedder.packaged(precision="int8")
    assert int8.precision.startswith("int8+") and int8.dim == 384
    first = quantized(folder)
    stamp = first.stat().st_mtime_ns
    assert quantized(folder) == first and first.stat().st_mtime_ns == stamp
    assert first.parent != converted(folder).parent  # its own cache entry
    ours, theirs = int8.encode(TEXTS), embedder.encode(TEXTS)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(ours * theirs, axis=1)
    # over 1,024 FinanceBench chunks: min 0.983, mean 0.995 (embedder_runtime_cpu_int8); here
    # the sentences 0.995 to 0.998, "x" 0.976 and "" 0.922 (no token but [CLS] and [SEP])
    sentences = [i for i, t in enumerate(TEXTS) if len(t) > 1]
    assert cosines[sentences].min() > 0.99, cosines
    assert cosines.min() > 0.9, cosines
    assert cosines.max() < 0.9999, cosines  # it is not the float model


def test_the_calibration_text_is_the_demo_corpus_generators():
    from finrag.serving.cli.demo_corpus.corpus import filing_texts

    texts = calibration_texts()
    assert texts == calibration_windows(filing_texts())  # the packaged file is reproducible
    assert len(texts) == 128 and all(1250 <= len(t) <= 2500 for t in texts)  # a last window: half+
    assert len(set(texts)) == len(texts)
    assert any("Revenue" in t for t in texts) and any("Risk" in t for t in texts)


def test_precision_is_checked():
    with pytest.raises(ValueError, match="precision must be one of"):
        OpenVinoEmbedder.packaged(precision="fp8")
    with pytest.raises(ValueError, match="precision int8 is for runtime openvino"):
        RoleSpec(kind="sentence-transformers", model=MINILM_L6_V2.model_id, precision="int8")
    spec = RoleSpec(kind="sentence-transformers", model=MINILM_L6_V2.model_id,
                    runtime="openvino", precision="int8")
    assert spec.precision == "int8"


def test_a_long_list_on_two_streams_gives_each_text_its_own_vector(openvino_embedder):
    """More texts than a batch go through the streams' queue, out of order; one text through
    the one request. Every row is its text's vector either way."""
    texts = [f"{t} ({i})" for i, t in enumerate(TEXTS * 5)]  # 30 texts: 4 batches of 8
    one = OpenVinoEmbedder.packaged(precision="auto", streams=1, threads=2)
    two = OpenVinoEmbedder.packaged(precision="auto", streams=2, threads=2)
    assert (one.streams, two.streams) == (1, 2)
    assert OpenVinoEmbedder.packaged(precision="auto", streams=2, threads=1).streams == 1
    ours, theirs = two.encode(texts), one.encode(texts)
    assert ours.shape == (len(texts), 384)
    assert np.allclose(ours, theirs, atol=2e-3)
    alone = np.stack([two.encode([t])[0] for t in texts])
    assert np.allclose(alone, ours, atol=2e-3)
    assert np.sum(ours[0] * ours[1]) < 0.9  # a question and "x": rows are not all alike
