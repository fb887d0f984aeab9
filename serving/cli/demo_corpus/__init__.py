"""Embedded demo corpus: look-alike 10-K and 10-Q PDFs for four fictional companies.

A fresh machine with no data and no network can still run the finrag demo. This package writes a
small, deterministic set of SEC-style filings. The companies are invented, and their documents are
deliberately hard to tell apart:

* every filing follows the same section template and shares most boilerplate wording;
* two companies (Lumenfield Software and Brightquarry Software) sell nearly the same product,
  so their filings differ mainly in names and figures;
* Harlow & Finch Stores has a fiscal year ending January 31 ("fiscal 2024" ended January 31,
  2024, so its first quarter of fiscal 2025 ended April 30, 2024);
* Quillon Flow Technologies was called Quillon Pump & Valve Company until March 2023, and its
  fiscal 2022 report still carries the old name.

This is the setting in which chunk retrieval pulls the wrong company's text, which is the
"cross-document chunk confusion" that finrag is built to handle.

Files written to ``out_dir``:

* ``<KEY>_<YEAR>_10K.pdf`` and ``<KEY>_<YEAR>Q<N>_10Q.pdf`` (the FinanceBench file-name convention);
* ``documents.jsonl``: one metadata record per PDF (the ``DocumentMeta`` fields plus
  ``fiscal_year_end``);
* ``facts.json``: figures known by construction, with the exact sentence or table row and the
  1-based page it is printed on;
* ``questions.jsonl``: demo questions, including look-alike pairs that have different answers;
* ``manifest.json``: seed, generator version and file hashes, so that a complete corpus is reused.

Figures come from ``random.Random`` seeded with strings, which is stable across runs and unaffected
by PYTHONHASHSEED. The PDF dates are fixed to the filing date and no file ID is written, so the
same seed gives the same bytes.

Usage: ``python -m finrag.serving.cli.demo_corpus OUT_DIR [--seed N] [--force]``.

Modules: ``companies`` (the registrants, their operating profiles and fiscal calendars),
``figures`` (seeded income statements and operating data, number formatting),
``wording`` and ``industries`` (the section text templates), ``filings`` (10-K and 10-Q
composition),
``layout`` (the block model, page layout and PDF painting), ``questions`` (the demo
questions) and ``corpus`` (the files on disk and the command).
"""

from finrag.serving.cli.demo_corpus.corpus import GENERATOR_VERSION, DemoCorpus, generate_demo_corpus

__all__ = ["GENERATOR_VERSION", "DemoCorpus", "generate_demo_corpus"]
