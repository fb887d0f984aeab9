"""What one reader may see of the index, kept as fresh as the index: the index and its variants
narrowed to the readable filings, the router and the facts over them, and the caches worked
out from them.

A pipeline's own view reads everything; ``scoped(collections)`` gives the view of a caller
who may read only those collections (made once, then kept). ``fresh()`` is the view as the
index is now: after an ingest or a collection change, what was worked out from the old index
is dropped, and a scoped view is made again, so a filing taken out of a collection is out of
its readers' reach at once.
"""

from __future__ import annotations

from typing import Callable

from finrag.retrieval.documents import PUBLIC_COLLECTION
from finrag.retrieval.facts.answer import FactsAnswerer
from finrag.retrieval.facts.concepts import default_concepts
from finrag.retrieval.facts.store import FactStore
from finrag.retrieval.store.access import ScopedIndex
from finrag.retrieval.systems.caches import Caches, bound
from finrag.retrieval.systems.components import FactsSource, QuestionRouter, SearchIndex


class View:
    def __init__(self, index: SearchIndex, variants: dict[str, SearchIndex] | None = None, *,
                 make_router: Callable[[SearchIndex], QuestionRouter],
                 router: QuestionRouter | None = None, facts: FactsSource | None = None):
        """``make_router(index)`` builds a router over ``index`` on first use, unless one is
        given (served: a remote one, asked for its views); likewise the facts answerer."""
        self._main = index  # the whole index, and the variants as opened
        self._variant_indexes: dict[str, SearchIndex] = dict(variants or {})
        self._make_router = make_router
        self._router_given, self._facts_given = router is not None, facts is not None
        self._router, self._facts = router, facts
        self.collections: frozenset[str] | None = None  # what this view reads (None: all)
        self.index: SearchIndex = index
        self.variants: dict[str, SearchIndex] = self._variant_views(None)
        self.caches = Caches()
        self._views: dict[frozenset[str], View] = {}
        self._base: View | None = None  # the view a scoped view was made from
        self._generation = None  # the index's, when the caches were made

    @property
    def router(self) -> QuestionRouter:
        if self._router is None:
            self._router = self._make_router(self.index)
        return self._router

    @property
    def facts(self) -> FactsSource:
        """The facts answerer over this index's XBRL facts (``facts.store.available`` is False
        for an index that holds none)."""
        if self._facts is None:
            store = FactStore(getattr(getattr(self._main, "catalog", None), "db", None),
                              readonly=True)
            self._facts = FactsAnswerer(store, default_concepts())
        return self._facts

    def close(self) -> None:
        self._main.close()
        for v in self._variant_indexes.values():
            v.close()

    # who reads what -------------------------------------------------------------------
    def scoped(self, collections: frozenset[str] | list[str] | None) -> "View":
        """This view as a caller who may read only ``collections`` sees it (None: all).

        Everything that reads filings is narrowed: the index and variants are
        ``ScopedIndex``es (a whole-corpus search is a search of the readable documents, inside
        FTS5 and FAISS), the router knows only readable filings (a company seen only in others
        is "not in the corpus"), the facts are those of readable filings (and SEC companyfacts
        with ``public``), and the caches are the view's own."""
        here = self.fresh()
        if collections is None:
            return here
        key = frozenset(collections)
        view = here._views.get(key)
        if view is not None:
            return view
        # the readable filings of ``key`` among this view's own (a scoped view narrows further)
        readable = frozenset(here.index.catalog.readable(key))
        view = View.__new__(View)
        view.__dict__.update(here.__dict__)
        view.collections, view._base, view._views = key, here, {}
        view.index = ScopedIndex(here._main, readable)
        view.variants = here._variant_views(readable)
        # a router given (served) is asked for its view; else one is built on first use over
        # the readable filings
        view._router = None if here._router is None else here._router.scoped(readable)
        view._facts = here.facts.scoped(readable, PUBLIC_COLLECTION in key)
        view.caches = Caches()
        here._views[key] = view
        bound(here._views)
        return view

    def _variant_views(self, readable: frozenset[str] | None) -> dict[str, SearchIndex]:
        """Each variant index as a reader of ``readable`` (doc ids of the main index; None:
        all of them) may search it. Who reads what is the main catalog's alone: a variant's
        own collections are never consulted, and a filing it holds counts only while the main
        index holds the same file (a filing removed, replaced or moved there is out of every
        variant at once, even one that has not caught up)."""
        if not self._variant_indexes:
            return {}
        main = self._main.catalog.fingerprints()
        allowed = main.keys() if readable is None else readable
        views = {}
        for name, v in self._variant_indexes.items():
            same = {d for d, sha in v.catalog.fingerprints().items()
                    if d in allowed and main.get(d) == sha}
            views[name] = ScopedIndex(v, same)
        return views

    # freshness ------------------------------------------------------------------------
    def _generation_now(self):
        """The generations of the main index and of every variant: any write to one moves it."""
        if not hasattr(self._main, "generation"):
            return 0
        return (self._main.generation(),
                *(v.generation() for v in self._variant_indexes.values()))

    def fresh(self) -> "View":
        """This view as the index is now (itself while nothing changed)."""
        if self._base is not None:
            base = self._base.fresh()
            return self if base._generation == self._generation else base.scoped(self.collections)
        for index in (self._main, *self._variant_indexes.values()):
            if hasattr(index, "refresh"):  # a local index; a served one refreshes itself
                index.refresh()
        now = self._generation_now()
        if now != self._generation:
            if self._generation is not None:
                self.caches, self._views = Caches(), {}
                if not self._router_given:
                    self._router = None
                if not self._facts_given:  # a newer published version is another database
                    self._facts = None
            self.variants = self._variant_views(None)
            self._generation = now
        return self
