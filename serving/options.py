"""Command-line options that choose an index, a model profile and a pipeline.

Any command that answers questions (``finrag ask``, ``finrag eval``, ``finrag bench …``) adds
these options to its parser and builds its pipeline from the parsed arguments, so every
command spells them, and reads them, the same way. They belong to the entry points (the
command line here, the benchmarks), never to ``retrieval/``, which is called with values.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_index_option(parser: argparse.ArgumentParser) -> None:
    from finrag.retrieval.store.index import default_index_dir

    parser.add_argument("--index", type=Path, default=None, metavar="DIR",
                        help=f"index folder (default: $FINRAG_INDEX or {default_index_dir()})")


def add_profile_options(parser: argparse.ArgumentParser, what: str = "model profile") -> None:
    parser.add_argument("--profile", default=None,
                        help=f"{what}: tiny, cpu (default; llama.cpp), cpu-large, "
                             "cpu-transformers, gpu, or one of --config")
    parser.add_argument("--config", type=Path, default=None, metavar="FILE",
                        help="a YAML that extends models/profiles.yaml ($FINRAG_CONFIG)")


def add_pipeline_options(parser: argparse.ArgumentParser) -> None:
    add_index_option(parser)
    add_profile_options(parser)
    parser.add_argument("--meta-index", type=Path, default=None, metavar="DIR",
                        help="the V-A (--variant meta) index for cbr_meta "
                             "(default: <index>-meta)")
    parser.add_argument("--llmctx-index", type=Path, default=None, metavar="DIR",
                        help="the V-B (--variant llmctx) index for cbr_llmctx "
                             "(default: <index>-llmctx)")
    parser.add_argument("--large-rerank", action=argparse.BooleanOptionalAction, default=None,
                        help="run the cascade's large reranker (default: the profile's "
                             "setting)")
    parser.add_argument("--collection", action="append", metavar="NAME", default=None,
                        help="read only the documents of this collection, as a token that "
                             "names it would; repeatable (default: every document)")


def index_dir(args: argparse.Namespace) -> Path:
    from finrag.retrieval.store.index import default_index_dir

    return args.index or default_index_dir()


def pipeline_kwargs(args: argparse.Namespace) -> dict:
    """``Pipeline.load`` keyword arguments from the pipeline options (index aside)."""
    from finrag.retrieval.store.variant_indexes import variant_dir

    index = index_dir(args)
    variants = {"meta": args.meta_index or variant_dir(index, "meta"),
                "llmctx": args.llmctx_index or variant_dir(index, "llmctx")}
    return dict(profile=args.profile, config=args.config, variant_dirs=variants,
                large_rerank=args.large_rerank, collections=getattr(args, "collection", None))


def load_pipeline(args: argparse.Namespace):
    """The pipeline the options describe; with ``--collection``, its view of those collections."""
    from finrag.retrieval.systems.pipelines import Pipeline

    return Pipeline.load(index_dir(args), **pipeline_kwargs(args))
