"""finrag: questions over SEC filings, answered from the right filing.

This file is the ``finrag`` package itself: the repository's top-level folders are its
subpackages (``finrag.models``, ``finrag.retrieval``, ``finrag.serving``,
``finrag.benchmarks``; the mapping is in pyproject.toml), so the tree keeps its layout and an
install adds one name to site-packages.

The public surface, in the style of ``LLM(...).generate(prompts, SamplingParams)``::

    from finrag import Pipeline
    pipe = Pipeline.load("./my-index", profile="cpu")
    print(pipe.answer("What was 3M's FY2018 capital expenditure?").answer)

Each name is imported on first use, so ``import finrag`` loads neither torch nor Ray.
"""
from __future__ import annotations

from importlib import import_module, metadata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from finrag.models.llm import SamplingParams
    from finrag.retrieval.answer import Answer
    from finrag.retrieval.systems.pipelines import Pipeline
    from finrag.serving.app import build_app

_EXPORTS = {
    "Pipeline": "finrag.retrieval.systems.pipelines",
    "Answer": "finrag.retrieval.answer",
    "SamplingParams": "finrag.models.llm",
    "build_app": "finrag.serving.app",
}

__all__ = [*_EXPORTS, "__version__"]

try:
    __version__ = metadata.version("finrag")
except metadata.PackageNotFoundError:  # imported from a source tree that is not installed
    __version__ = "0+unknown"


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'finrag' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
