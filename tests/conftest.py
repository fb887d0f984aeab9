import os
import subprocess
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FINANCEBENCH = SHARED / "data" / "financebench"


def need_shared(path: Path = SHARED) -> Path:
    """Skip (saying why) only when the shared data is absent."""
    if not path.exists():
        pytest.skip(f"shared data not found: {path}")
    return path


@pytest.fixture(scope="session")
def embedder():
    from finrag.models.embedders import load_embedder

    return load_embedder("minilm")


@pytest.fixture(scope="session")
def demo_corpus(tmp_path_factory):
    from finrag.serving.cli.demo_corpus import generate_demo_corpus

    return generate_demo_corpus(tmp_path_factory.mktemp("demo") / "corpus")


# two collections of look-alike filings of different companies (who may read what: #44)
from finrag.benchmarks.access_probes import ALPHA, BETA, secrets_of  # noqa: E402,F401


@pytest.fixture(scope="session")
def two_collections(tmp_path_factory, demo_corpus, embedder):
    """An index of four demo filings: ALPHA in collection `alpha`, BETA in `beta` (tests must
    not write to it)."""
    from finrag.benchmarks import access_probes

    return access_probes.two_collections(tmp_path_factory.mktemp("two-collections"),
                                         demo_corpus, embedder)


@pytest.fixture(scope="session")
def two_collections_variants(tmp_path_factory, two_collections, demo_corpus, embedder):
    """``two_collections`` with its V-A and V-B variants beside it, in ``<dir>/index``,
    ``index-meta`` and ``index-llmctx`` (tests copy the folder before writing to it). The tiny
    generator writes V-B's contexts from short prompts: what they say matters less here than
    that V-B is a real index of its own."""
    import shutil

    from finrag.benchmarks.access_probes import build_variants
    from finrag.models.profiles import load_config, load_llm
    from finrag.retrieval.ingest.variants import Contextualizer

    folder = tmp_path_factory.mktemp("two-collections-variants")
    shutil.copytree(two_collections, folder / "index")
    llm = load_llm(load_config(env={}).active("tiny"), "generator")
    build_variants(folder / "index", demo_corpus, embedder,
                   Contextualizer(llm, batch_size=16, max_tokens=8, opening_chars=200,
                                  chunk_chars=300), chunk_size=8000, chunk_overlap=0)
    return folder


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory, demo_corpus, embedder):
    """The demo corpus ingested once for the whole session (tests must not write to it)."""
    from finrag.retrieval.indexer import Ingestor

    folder = tmp_path_factory.mktemp("demo-index")
    ingestor = Ingestor(folder, embedder, metadata=demo_corpus.metadata_path)
    report = ingestor.run([demo_corpus.out_dir], progress=False)
    ingestor.close()
    assert report.ok, report.failed
    return folder


# the KubeRay RayService CRD that tests/deploy checks the manifests against -----------------
KUBERAY_SETUP = Path(__file__).resolve().parents[1] / "deploy" / "setup-kuberay-crd.sh"
# read at import, before the tests' autouse fixtures clear FINRAG_* for each test
KUBERAY_CRD_FILE = os.environ.get("FINRAG_KUBERAY_CRD")
REQUIRE_KUBERAY = os.environ.get("FINRAG_REQUIRE_KUBERAY") == "1"


@pytest.fixture(scope="session")
def kuberay_crd() -> dict:
    """KubeRay's RayService CRD: the file FINRAG_KUBERAY_CRD names (a release's, or `kubectl get
    crd rayservices.ray.io -o yaml` from a cluster), else the one in the operator's Go module at
    the version deploy/setup-kuberay-crd.sh pins. Without either the tests that need it skip,
    saying why; FINRAG_REQUIRE_KUBERAY=1 fails them instead."""
    if KUBERAY_CRD_FILE:
        path, why = Path(KUBERAY_CRD_FILE), f"FINRAG_KUBERAY_CRD={KUBERAY_CRD_FILE} is no file"
    else:
        run = subprocess.run(["bash", str(KUBERAY_SETUP), "--no-install"], capture_output=True,
                             text=True, timeout=300)
        lines = run.stdout.strip().splitlines()
        path = Path(lines[-1]) if run.returncode == 0 and lines else None
        why = run.stderr.strip() or f"{KUBERAY_SETUP.name} exited {run.returncode}"
    if path is None or not path.is_file():
        if REQUIRE_KUBERAY:
            pytest.fail(f"no KubeRay CRD: {why}")
        pytest.skip(f"no KubeRay CRD (deploy/setup-kuberay-crd.sh, FINRAG_KUBERAY_CRD): {why}")
    from deploy import crd_check

    crd = crd_check.load_crd(path)
    assert crd["metadata"]["name"] == "rayservices.ray.io", path
    return crd
