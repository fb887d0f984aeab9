import os
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
ALPHA = ["BRIGHTQUARRY_2024_10K", "HARLOWFINCH_2024_10K"]
BETA = ["LUMENFIELD_2024_10K", "QUILLON_2024_10K"]


@pytest.fixture(scope="session")
def two_collections(tmp_path_factory, demo_corpus, embedder):
    """An index of four demo filings: ALPHA in collection `alpha`, BETA in `beta` (tests must
    not write to it)."""
    from finrag.retrieval.indexer import Ingestor

    folder = tmp_path_factory.mktemp("two-collections")
    for collection, docs in (("alpha", ALPHA), ("beta", BETA)):
        ingestor = Ingestor(folder, embedder, metadata=demo_corpus.metadata_path,
                            collections=[collection])
        report = ingestor.run([demo_corpus.out_dir / f"{d}.pdf" for d in docs], progress=False)
        ingestor.close()
        assert report.ok and len(report.added) == 2, report.failed
    return folder


def secrets_of(index_dir: Path, hidden: list[str], shown: list[str]) -> list[str]:
    """What must never reach a caller who may read only ``shown``: the ``hidden`` doc ids and
    every line (40+ characters) of their pages that the shown documents do not hold. Company
    names are not among them: a question names the company, and an LLM may complete
    "Lumenfield Software" to "Lumenfield Software, Inc." from the question alone."""
    from finrag.retrieval.store.index import Index

    with Index.open(index_dir) as index:
        hidden_text = [t for d in hidden for _, t in index.catalog.pages(d)]
        shown_text = "\n".join(t for d in shown for _, t in index.catalog.pages(d))
    lines = {ln.strip() for t in hidden_text for ln in t.splitlines()}
    return list(hidden) + sorted(ln for ln in lines if len(ln) >= 40 and ln not in shown_text)


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
