"""`finrag demo`: the embedded look-alike corpus, indexed and searched, on a laptop CPU.

It shows the problem finrag exists to fix: whole-corpus chunk search returns look-alike
passages of the wrong company, while search scoped to the right filing does not.
"""

from __future__ import annotations

import json
import time
from pathlib import Path


def _line(ch: str = "─", n: int = 78) -> str:
    return ch * n


def run_demo(workdir: Path) -> int:
    from models.embedders import load_embedder
    from retrieval.demo_corpus import generate_demo_corpus
    from retrieval.index import Index
    from retrieval.ingest import Ingestor

    workdir = Path(workdir)
    print(_line("═"))
    print("finrag demo — look-alike 10-K filings, whole-corpus vs document-scoped search")
    print(_line("═"))
    t0 = time.perf_counter()
    corpus = generate_demo_corpus(workdir / "corpus")
    print(f"corpus   {len(corpus.pdf_paths)} generated filings in {corpus.out_dir}")

    embedder = load_embedder("minilm")
    ingestor = Ingestor(workdir / "index", embedder, metadata=corpus.metadata_path)
    try:
        report = ingestor.run([corpus.out_dir], progress=True)
        counts = ingestor.index.catalog.counts()
    finally:
        ingestor.close()
    s = report.summary()
    print(f"ingest   {s['added']} added, {s['skipped']} already indexed, {s['failed']} failed; "
          f"index holds {counts['documents']} documents, {counts['chunks']} chunks, "
          f"{counts['tables']} tables")
    if not report.ok:
        for _, message in report.failed:
            print(f"error: {message}")
        return 1

    questions = [json.loads(l) for l in Path(corpus.questions_path).read_text().splitlines() if l]
    with Index.open(workdir / "index") as index:
        company = {d.doc_id: d.company for d in index.documents()}
        for q in questions[:3]:
            vector = embedder.encode([q["question"]])[0]
            print()
            print(_line())
            print(f"Q: {q['question']}")
            print(f"   filing: {q['doc_id']} (evidence on p.{q['evidence_page']}); "
                  f"known answer: {q['answer']}")
            for label, scope in (("whole corpus", None), ("scoped to the filing", [q["doc_id"]])):
                hits = index.search(q["question"], vector, k=3, doc_ids=scope)
                wrong = sum(h.doc_id != q["doc_id"] for h in hits)
                print(f"  {label}: {wrong} of {len(hits)} top chunks from another filing")
                for h in hits:
                    mark = "ok   " if h.doc_id == q["doc_id"] else "WRONG"
                    pages = f"p.{h.first_page}" + (f"-{h.last_page}" if h.last_page != h.first_page else "")
                    evidence = (h.doc_id == q["doc_id"]
                                and h.first_page <= q["evidence_page"] <= h.last_page)
                    print(f"    {mark} {h.doc_id:24} {pages:8} {company[h.doc_id]:28}"
                          f"{'<- evidence page' if evidence else ''}")
    print()
    print(_line("═"))
    print(f"done in {time.perf_counter() - t0:.1f}s. Try:  finrag search \"net income\" "
          f"--index {workdir / 'index'} --doc {questions[0]['doc_id']}")
    return 0
