"""finrag's retrieval core, in rooms by stage; imports between rooms only go down this list.

- ``documents``, ``answer``: the records every stage passes on (parsed filings, chunks, answers).
- ``routing``: companies and aliases, fiscal calendars, the question router.
- ``store``: the catalog (SQLite + FTS5), the vector index (FAISS), their fused search, and
  the published read-only snapshots of an index.
- ``ingest``: file readers (PDF, HTML), tables, metadata, chunking, index variants.
- ``facts``: XBRL and statement facts: reading, storing, classifying questions, answering.
- ``systems``: the question-answering pipelines (HDRR and its baselines), context, evaluation.
- ``indexer``: files in, an index out (uses ingest, facts and store).
"""
