"""Structured answers from XBRL facts (the SEC design's five routes).

- ``model``: the ``Fact`` record and ``FactsError``;
- ``companyfacts`` / ``ixbrl``: readers of SEC companyfacts JSON and of inline XBRL in 10-K/10-Q HTML;
- ``store``: the facts table in the index's SQLite, each fact placed on its company's fiscal calendar;
- ``concepts``: the metric → us-gaap concept table (``retrieval/data/concepts.yaml``, user-extendable);
- ``classify``: route, metric and period read from a question;
- ``answer``: metric lookup, time series, full statement and comparisons from the store;
- ``checks``: contradictions between facts and narrative text, and the confidence score.

Imports stay one-way: ``facts`` uses ``retrieval.routing.companies`` and ``retrieval.routing.calendars`` only;
``retrieval.systems.pipelines`` uses ``facts``.
"""
