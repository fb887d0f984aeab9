import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FINANCEBENCH = SHARED / "data" / "financebench"


# Under CI (`CI` set, as `.ci/run` sets it) a test whose prerequisite is absent fails naming it:
# a CI without the browser, the vLLM venv or the shared data must not pass by skipping.
# Elsewhere it skips and says why.
IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")
EMBED_CACHE = os.environ.get("FINRAG_TEST_EMBED_CACHE", "on")  # read before tests clear FINRAG_*


def missing(what: str, *, require_env: str | None = None, module: bool = False,
            required_in_ci: bool = True) -> None:
    """A prerequisite is absent: fail under CI (or when ``require_env`` is set to 1), else skip;
    ``what`` names the missing thing and how to get it. ``module``: called at a test module's
    top level (the whole module fails or skips). ``required_in_ci=False``: for what CI cannot
    fetch (it skips there too, unless ``require_env`` asks)."""
    if (IN_CI and required_in_ci) or (require_env and os.environ.get(require_env) == "1"):
        pytest.fail(f"missing prerequisite: {what}", pytrace=False)
    pytest.skip(f"missing prerequisite: {what}", allow_module_level=module)


def need_shared(path: Path = SHARED) -> Path:
    """``path`` under ../shared, or `missing` (a skip outside CI) when it is absent."""
    if not path.exists():
        shown = path.relative_to(REPO.parent) if path.is_relative_to(REPO.parent) else path
        missing(f"the shared data ({shown}) is not beside this checkout")
    return path


@functools.cache
def _weights_problem(profile_name: str) -> str | None:
    from finrag.models.profiles import load_config, resolve_role
    from finrag.models.weights import WeightsError

    profile = load_config(env={}).active(profile_name)
    for role in profile.roles:
        try:
            resolve_role(profile, role, prepare=False)
        except WeightsError as exc:
            return str(exc)
    return None


def need_weights(profile_name: str) -> None:
    """The profile's packaged weights are prepared (`finrag models prepare --profile NAME`), or
    `missing`: without them a served app fails to start its deployments, which says nothing of
    why."""
    problem = _weights_problem(profile_name)
    if problem:
        missing(f"the {profile_name} profile's weights are not prepared ({problem}): run "
                f"`finrag models prepare --profile {profile_name}`")


@pytest.fixture(scope="session")
def embedder():
    """The packaged MiniLM, its vectors of texts seen in earlier runs read from a disk cache
    keyed by weights, code and libraries (tests/embedding_cache.py)."""
    from embedding_cache import CachedEmbedder
    from finrag.models.embedders import load_embedder
    from finrag.models.weights import MINILM_L6_V2

    model = load_embedder("minilm")
    if EMBED_CACHE == "off":
        return model
    return CachedEmbedder(model, MINILM_L6_V2.sha256)


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


@pytest.fixture(scope="session")
def tiny_app(demo_index, tmp_path_factory, embedder):
    """`finrag serve` on the tiny profile over the demo index and, where ../shared has them,
    NVIDIA's XBRL facts, with a bearer token (``TINY_TOKEN``) and a tokens file holding a
    read-only token (``app["reader"]``; the audit log, ``app["audit"]``, is beside it). Shared
    by every test that only asks it questions; stopped after the last of them, cleanly
    (``SharedApp.stop``)."""
    from finrag.retrieval.indexer import Ingestor
    from finrag.serving.tokens import TokenStore
    from tests.served_app import (EVERY_CATALOG_STAGE, TINY_APP, TINY_LIMITS, TINY_TOKEN,
                                  serve_app)

    work = tmp_path_factory.mktemp("tiny-app")
    shutil.copytree(demo_index, work / "index")
    facts = SHARED / "data" / "sec" / "companyfacts" / "CIK0001045810.json"
    if facts.is_file():
        ingestor = Ingestor(work / "index", embedder)
        assert ingestor.run([facts], progress=False).ok
        ingestor.close()
    reader = TokenStore(work / "tokens.json").create("reader", ["*"])[1]
    app = TINY_APP.start(serve_app(work, work / "index", token=TINY_TOKEN,
                                   pipeline=EVERY_CATALOG_STAGE, limits=TINY_LIMITS,
                                   auth={"tokens_file": str(work / "tokens.json")}))
    host, port = app["url"].removeprefix("http://").split(":")
    app.update(addr=(host, int(port)), reader=reader, audit=work / "audit.jsonl")
    yield app
    TINY_APP.stop()


# fixtures that start a served app or a Ray cluster, run an LLM, or index a large filing or
# with a large embedder: a test using one is `slow`
SLOW_FIXTURES = {"tiny_app", "served", "cluster", "two_collections_variants", "mmm",
                 "m3_profile"}


def pytest_collection_modifyitems(config, items):
    """Tests using a SLOW_FIXTURES fixture are marked `slow`. The tests of the shared tiny app
    run one after another (from where the first of them was), so it is stopped after the last
    of them instead of idling through the rest."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    users = [i for i in items if "tiny_app" in getattr(i, "fixturenames", ())]
    if users:
        first = items.index(users[0])
        rest = [i for i in items if "tiny_app" not in getattr(i, "fixturenames", ())]
        items[:] = rest[:first] + users + rest[first:]
        config._finrag_last_tiny_app_user = users[-1].nodeid


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    if item.nodeid == getattr(item.config, "_finrag_last_tiny_app_user", None):
        from tests.served_app import TINY_APP

        TINY_APP.stop()


# the KubeRay RayService CRD that tests/deploy checks the manifests against -----------------
KUBERAY_SETUP = Path(__file__).resolve().parents[1] / "deploy" / "setup-kuberay-crd.sh"
# read at import, before the tests' autouse fixtures clear FINRAG_* for each test
KUBERAY_CRD_FILE = os.environ.get("FINRAG_KUBERAY_CRD")


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
        # the operator's Go module comes from Go's module proxy, which CI's package registries
        # do not include: CI skips these unless FINRAG_REQUIRE_KUBERAY=1
        missing(f"no KubeRay CRD (deploy/setup-kuberay-crd.sh, FINRAG_KUBERAY_CRD): {why}",
                require_env="FINRAG_REQUIRE_KUBERAY", required_in_ci=False)
    from deploy import crd_check

    crd = crd_check.load_crd(path)
    assert crd["metadata"]["name"] == "rayservices.ray.io", path
    return crd


# the inner loop: `make test-fast` runs the tests not marked `slow`, and runs them with every
# costly component refused, so a test that needs an LLM, Ray or a served app and is not marked
# fails there at once, naming what it started, instead of making the fast suite slow
FAST = os.environ.get("FINRAG_TEST_FAST") == "1"


def _refuse_in_fast_suite(what: str):
    def refuse(*args, **kwargs):
        pytest.fail(f"the fast suite (make test-fast) starts no {what}: mark this test "
                    "`@pytest.mark.slow` (or its module, with pytestmark)", pytrace=False)
    return refuse


def pytest_configure(config):
    if not FAST:
        return
    import ray

    from finrag.models.llamacpp_engine import LlamaCppEngine
    from finrag.models.transformers_engine import TransformersEngine
    from finrag.models.vllm_engine import VLLMEngine

    for engine in (TransformersEngine, LlamaCppEngine, VLLMEngine):
        engine.__init__ = _refuse_in_fast_suite(f"LLM ({engine.__name__})")
    ray.init = _refuse_in_fast_suite("Ray runtime (ray.init)")
    popen_init = subprocess.Popen.__init__

    def popen(self, args, *rest, **kwargs):
        argv = [str(a) for a in args] if isinstance(args, (list, tuple)) else str(args).split()
        cli = "finrag.serving.cli" in argv or any(a.endswith("/finrag") for a in argv[:1])
        if cli and {"serve", "batch", "ask", "bench", "demo"} & set(argv) or \
                Path(argv[0]).name == "ray" or ".venv-vllm" in argv[0]:
            _refuse_in_fast_suite(f"served app, Ray cluster or vLLM ({' '.join(argv[:4])})")()
        popen_init(self, args, *rest, **kwargs)
    subprocess.Popen.__init__ = popen
