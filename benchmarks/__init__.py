"""Benchmarks: ingest/search performance, evaluation, reports and plots."""
