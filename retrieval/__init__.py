"""Filings → answers without Ray: parsing, chunking, catalog, FTS5 + FAISS search, fusion."""
