"""`finrag demo`: the embedded look-alike corpus, indexed, searched and served, on a laptop CPU.

It shows the problem finrag exists to fix: whole-corpus chunk search returns look-alike
passages of the wrong company, while search scoped to the right filing does not. Then it
starts the Serve app on 127.0.0.1, asks questions over HTTP, and looks for a look-alike
question where CBR answers from the wrong company's filing and HDRR does not (what it finds is
measured in this run, not scripted), and shuts everything down.
"""

from __future__ import annotations

import json
import time
from pathlib import Path


def _line(ch: str = "─", n: int = 78) -> str:
    return ch * n


def run_demo(workdir: Path, *, serve: bool = True, profile: str = "cpu",
             port: int | None = None) -> int:
    from finrag.models.embedders import load_embedder
    from finrag.serving.cli.demo_corpus import generate_demo_corpus
    from finrag.retrieval.store.index import Index
    from finrag.retrieval.indexer import Ingestor

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
    status = 0
    if serve:
        status = serve_demo(workdir / "index", questions, corpus.facts_path, profile=profile,
                            port=port)
    print()
    print(_line("═"))
    print(f"done in {time.perf_counter() - t0:.1f}s. Try:  finrag ask \"{questions[0]['question']}\" "
          f"--index {workdir / 'index'}\n      or   finrag serve --index {workdir / 'index'}  "
          f"and open http://127.0.0.1:8000/ (the web page)")
    return status


def _figure(value: float) -> list[str]:
    """The ways an answer may write a figure: 3793 → '3,793', '3793'; 3.66 → '3.66'."""
    if float(value).is_integer():
        return [f"{int(value):,}", str(int(value))]
    return [f"{value:g}"]


def _says(text: str, value: float) -> bool:
    return any(f in text for f in _figure(value))


def serve_demo(index: Path, questions: list[dict], facts_path: Path, *, profile: str = "cpu",
               port: int | None = None) -> int:
    from finrag.serving.cli.output import print_answer
    from finrag.serving.server import free_port, get_json, post_json, service_from_file

    service = service_from_file(None, index=str(index), profile=profile,
                                port=port or free_port())
    print()
    print(_line("═"))
    print(f"the service: Ray Serve on 127.0.0.1, profile {profile}, questions over HTTP")
    print(_line("═"))
    t0 = time.perf_counter()
    with service as url:
        print(f"ready in {time.perf_counter() - t0:.0f}s at {url}  — while it runs, open "
              f"{url}/ in a browser to ask questions and see the cited pages")
        _, docs = get_json(f"{url}/v1/documents")
        print(f"GET /v1/documents → {docs['count']} filings")
        for q in questions[:2]:
            print()
            print(_line())
            print(f"POST /v1/answer  system=hdrr  Q: {q['question']}")
            print(f"(known answer: {q['answer']}, {q['doc_id']} p.{q['evidence_page']})")
            print(_line())
            code, answer = post_json(f"{url}/v1/answer", {"question": q["question"],
                                                         "system": "hdrr"})
            if code != 200:
                print(f"error {code}: {answer.get('error')}")
                return 1
            print_answer(answer)
        failed = _look_alike(url, questions, facts_path, post_json)
        print()
        print("stopping the service…")
    print("stopped: Serve and Ray shut down")
    if failed:
        print(f"error: {failed} request(s) above did not get an answer")
        return 1
    return 0


def _look_alike(url: str, questions: list[dict], facts_path: Path, post_json) -> int:
    """CBR vs HDRR on a look-alike question: first retrieval only (cheap) over every
    look-alike question, to find one whose CBR context leads with another company's filing
    (else another filing of the same company); then both systems answer it. Returns how many
    requests failed (each is printed where it happened)."""
    from finrag.serving.server import get_json

    facts = json.loads(Path(facts_path).read_text())
    company = {d["doc_id"]: d["company"]
               for d in get_json(f"{url}/v1/documents")[1]["documents"]}
    print()
    print(_line("═"))
    print("look-alike questions: whole-corpus chunk RAG (cbr) vs document-routed (hdrr)")
    print(_line("═"))
    found, failed = [], 0
    for q in (q for q in questions if "look-alike" in q.get("tags", [])):
        code, probe = post_json(f"{url}/v1/answer", {"question": q["question"],
                                                     "system": "cbr", "generate": False})
        if code != 200:
            print(f"  cbr retrieval: error {code}: {probe.get('error')}  for: {q['question']}")
            failed += 1
            continue
        context = (probe.get("retrieved") or {}).get("context") or []
        lead = context[0]["doc_id"] if context else q["doc_id"]
        kind = ("another company's filing" if company.get(lead) != company.get(q["doc_id"])
                else "another filing of the same company" if lead != q["doc_id"]
                else "the right filing")
        print(f"  cbr context leads with {kind:34} ({lead}) for: {q['question']}")
        if lead != q["doc_id"]:
            found.append((company.get(lead) == company.get(q["doc_id"]), q))
    if not found:
        print("  in this run CBR's context led with the right filing for every look-alike "
              "question")
        return failed
    q = sorted(found, key=lambda f: f[0])[0][1]  # another company's filing first
    print()
    print(f"Q: {q['question']}  (known answer: {q['answer']}, {q['doc_id']})")
    metric = _metric_of(q, facts)
    others = {f["doc_id"]: f["value"] for f in facts
              if f["doc_id"] != q["doc_id"] and f["metric"] == metric}
    for system in ("cbr", "hdrr"):
        code, a = post_json(f"{url}/v1/answer", {"question": q["question"], "system": system})
        if code != 200:
            print(f"  {system}: error {code}: {a.get('error')}")
            failed += 1
            continue
        cited = sorted({c["doc_id"] for c in a["citations"]})
        lead = a["retrieved"]["context"][0]["doc_id"] if a["retrieved"].get("context") else "-"
        took = [d for d, v in others.items() if _says(a["answer"], v)]
        verdict = ("right figure" if _says(a["answer"], q["value"]) else
                   f"WRONG FILING'S FIGURE (the {metric} of {', '.join(took)})" if took else
                   "not the known figure")
        u = a["usage"]
        print(f"  {system:5} context led by {lead}; cites {', '.join(cited) or '-'}")
        print(f"        answer: {' '.join(a['answer'].split())[:160]}")
        print(f"        → {verdict}; {u['llm_calls']} LLM call(s), {u['prompt_tokens']}+"
              f"{u['completion_tokens']} tokens, {a['timings_ms']['total'] / 1000:.1f}s, "
              f"energy {a['energy']['joules'] if a['energy']['joules'] is not None else 'n/a'}"
              f" ({a['energy']['source']})")
    return failed


def _metric_of(q: dict, facts: list[dict]) -> str | None:
    for f in facts:
        if f["doc_id"] == q["doc_id"] and f["value"] == q.get("value"):
            return f["metric"]
    return None
