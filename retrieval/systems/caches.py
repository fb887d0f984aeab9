"""What one view of the index works out once and keeps: each question's routing and, per
filing, the pages where its statements and sections open. A view drops its caches when the
index changes (``retrieval.systems.view``), and each reader's view has caches of its own, so
nothing found for one caller is given to another."""

from __future__ import annotations

from typing import Callable

from finrag.retrieval.answer import Routing

CACHED = 4096  # entries kept in each cache (the oldest go first)


def bound(cache: dict) -> None:
    """``cache`` kept to CACHED entries, the oldest going first."""
    while len(cache) > CACHED:
        cache.pop(next(iter(cache)), None)


class Caches:
    def __init__(self) -> None:
        self.routes: dict[str, Routing] = {}
        # (what opens on a page, index, filing) → {page: the kinds that open on it}
        self.pages: dict[tuple[str, int, str], dict[int, list[str]]] = {}

    def route(self, question: str, route: Callable[[str], Routing]) -> Routing:
        """``route(question)``, computed once per view (its cost is still charged to every
        answer that uses it)."""
        routing = self.routes.get(question)
        if routing is None:
            routing = self.routes[question] = route(question)
            bound(self.routes)
        return routing

    def page_kinds(self, what: str, index, doc_id: str,
                   find: Callable[[list[tuple[int, str]]], dict[int, list[str]]]
                   ) -> dict[int, list[str]]:
        """``find(pages)`` of a filing's pages (``{page: kinds that open there}``), once."""
        key = (what, id(index), doc_id)
        if key not in self.pages:
            self.pages[key] = find(index.catalog.pages(doc_id))
            bound(self.pages)
        return self.pages[key]
