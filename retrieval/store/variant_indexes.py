"""The variant indexes of an index (V-A ``meta``, V-B ``llmctx``: ``retrieval.ingest.variants``)
and keeping them in step with it.

A variant is an index of its own beside the main one (``<dir>-meta``, ``<dir>-llmctx``) with the
same filings indexed with other text. Who may read a filing is the main catalog's to say: a
``Pipeline`` searches a variant only for the filings the main index holds, with the same file,
in the collections the main catalog gives them (``Pipeline._variant_views``). The writes here
make the variants' own records match, so that what they hold on disk says the same: every
write path that removes a filing or changes its collections in the main index calls
``in_step`` after it.
"""

from __future__ import annotations

from pathlib import Path

from finrag.retrieval.store.index import CATALOG_FILE, Index
from finrag.retrieval.store.lock import IndexBusyError

VARIANT_NAMES = ("meta", "llmctx")


def variant_dir(index_dir: str | Path, variant: str) -> Path:
    """Where a variant index lives by default: beside the plain one, ``<dir>-<variant>``."""
    index_dir = Path(index_dir)
    return index_dir.with_name(f"{index_dir.name}-{variant}")


def variants_beside(index_dir: str | Path) -> dict[str, Path]:
    """The variant indexes that exist beside ``index_dir`` (index folders, not publish roots:
    those change only by ``finrag publish``)."""
    found = {}
    for name in VARIANT_NAMES:
        folder = variant_dir(index_dir, name)
        if (folder / CATALOG_FILE).is_file():
            found[name] = folder
    return found


def in_step(main: Index, variants: dict[str, str | Path], doc_ids: list[str]) -> dict[str, str]:
    """Make each variant's record of ``doc_ids`` what the main index (open, any mode) says: a
    filing the main index no longer holds, or holds from another file, is removed from the
    variant; one it holds has the main catalog's collections there too. Returns, per variant,
    "in step" or why it was not brought in step (another writer holds it: readers are safe
    all the same, since they scope every variant by the main catalog)."""
    wanted = {d: main.catalog.document(d) for d in doc_ids}
    done = {}
    for name, folder in variants.items():
        folder = Path(folder)
        if not (folder / CATALOG_FILE).is_file():
            continue
        try:
            variant = Index.open(folder, readonly=False)
        except IndexBusyError:
            done[name] = "busy: another writer holds it; it is brought in step by the next write"
            continue
        with variant:
            for doc_id, doc in wanted.items():
                have = variant.catalog.document(doc_id)
                if have is None:
                    continue
                if doc is None or doc.sha256 != have.sha256:
                    variant.remove_document(doc_id)
                elif sorted(have.collections) != sorted(doc.collections):
                    variant.catalog.change_collections(
                        doc_id, add=sorted(set(doc.collections) - set(have.collections)),
                        remove=sorted(set(have.collections) - set(doc.collections)))
        done[name] = "in step"
    return done
