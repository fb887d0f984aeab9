"""The profile's embedder everywhere: ingest records it in the index (kind, model id,
dimension, normalisation), and search, the pipeline and ingest into the same index refuse
another embedder with an error that names both."""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO

pytest.importorskip("FlagEmbedding")


def finrag(*args, env: dict[str, str]):
    return subprocess.run([sys.executable, "-m", "finrag.serving.cli", *map(str, args)], cwd=REPO,
                          env=dict(os.environ, HF_HUB_OFFLINE="1", **env),
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def m3_profile(tmp_path_factory):
    """A user profiles file: `m3tiny` is the `tiny` profile with a tiny BGE-M3-shaped embedder."""
    import yaml

    from finrag.models.tiny_model import build_tiny_bge_m3

    folder = build_tiny_bge_m3(tmp_path_factory.mktemp("tiny-m3"))
    path = tmp_path_factory.mktemp("profiles") / "profiles.yaml"
    path.write_text(yaml.safe_dump({"profiles": {"m3tiny": {
        "engine": "transformers",
        "pipeline": {"large_rerank": False, "context_tokens": 1200, "answer_tokens": 32},
        "roles": {
            "embedder": {"kind": "flag-embedding", "model": str(folder), "device": "cpu"},
            "light_reranker": {"kind": "maxsim", "model": "sentence-transformers/all-MiniLM-L6-v2"},
            "large_reranker": {"kind": "llm-scorer", "model": "HuggingFaceTB/SmolLM2-135M-Instruct"},
            "router": {"kind": "llm", "model": "HuggingFaceTB/SmolLM2-135M-Instruct"},
            "generator": {"kind": "llm", "model": "HuggingFaceTB/SmolLM2-135M-Instruct"},
        }}}}))
    return path, folder


@pytest.fixture(scope="module")
def m3_index(tmp_path_factory, m3_profile):
    from finrag.serving.cli.demo_corpus import generate_demo_corpus

    config, _ = m3_profile
    corpus = generate_demo_corpus(tmp_path_factory.mktemp("corpus"))
    index = tmp_path_factory.mktemp("m3-index")
    files = sorted(corpus.out_dir.glob("LUMENFIELD_*_10K.pdf"))[:2]
    res = finrag("ingest", *files, "--metadata", corpus.metadata_path, "--index", index,
                 "--profile", "m3tiny", "--json", "-q", env={"FINRAG_CONFIG": str(config)})
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["added"] == 2
    return index, corpus, files


def test_ingest_records_the_profiles_embedder(m3_index, m3_profile):
    from finrag.retrieval.store.index import Index

    _, folder = m3_profile
    with Index.open(m3_index[0]) as index:
        s = index.settings
    assert (s.embedder_kind, s.embedder_model_id, s.dim, s.normalize) == (
        "flag-embedding", str(folder), 32, True)


@pytest.mark.slow
def test_search_with_another_embedder_names_both(m3_index, m3_profile):
    config, folder = m3_profile
    env = {"FINRAG_CONFIG": str(config)}
    res = finrag("search", "net income", "--index", m3_index[0], "--profile", "tiny", env=env)
    assert res.returncode == 2
    assert "sentence-transformers/all-MiniLM-L6-v2 (sentence-transformers, 384-d" in res.stderr
    assert f"{folder} (flag-embedding, 32-d, normalised)" in res.stderr
    ok = finrag("search", "net income", "--index", m3_index[0], "--profile", "m3tiny",
                "--json", env=env)
    assert ok.returncode == 0, ok.stderr
    hits = json.loads(ok.stdout)["hits"]
    assert hits and all(h["doc_id"].startswith("LUMENFIELD") for h in hits)


@pytest.mark.slow
def test_pipeline_and_ingest_refuse_another_embedder(m3_index, m3_profile, embedder):
    from finrag.retrieval.indexer import Ingestor
    from finrag.retrieval.store.index import EmbedderMismatchError
    from finrag.retrieval.systems.pipelines import Pipeline

    index, corpus, _ = m3_index
    with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2.*384-d"):
        Pipeline.load(index, profile="tiny", config=m3_profile[0])
    with pytest.raises(EmbedderMismatchError, match="32-d"):
        Ingestor(index, embedder, metadata=corpus.metadata_path)
    # the refusal left the index open to its own embedder's writers
    pipe = Pipeline.load(index, profile="m3tiny", config=m3_profile[0])
    try:
        assert pipe.embedder.kind == "flag-embedding" and pipe.embedder.dim == 32
        answer = pipe.answer("What was Lumenfield's net income?", "cbr", generate=False)
        kept = answer.retrieved["kept"]
        assert kept and all(c["doc_id"].startswith("LUMENFIELD") for c in kept)
    finally:
        pipe.close()
