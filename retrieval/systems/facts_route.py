"""HDRR's facts stage: classify the question's route (metric_lookup | timeseries |
full_statement | narrative | hybrid), answer a structured route from the XBRL and
statement-table facts, and check a hybrid answer's facts against the passages beside them."""

from __future__ import annotations

from finrag.retrieval.answer import FACTS_DOC_ID, Citation, Routing
from finrag.retrieval.facts.answer import FactValue
from finrag.retrieval.facts.checks import confidence, contradictions
from finrag.retrieval.facts.classify import STRUCTURED, apply_llm, classify
from finrag.retrieval.systems.components import Components
from finrag.retrieval.systems.context import Block
from finrag.retrieval.systems.found import Answered, Context
from finrag.retrieval.systems.run import Run


def facts_route(c: Components, run: Run, routing: Routing) -> Answered | Context | None:
    """Route the question and answer a structured route from the facts: ``Answered`` when
    the facts answer it; for a hybrid question a ``Context`` of the facts' block (none when
    they hold no value) and what the answer says first; None to answer from the filings
    alone."""
    facts = c.facts()
    if not facts.store.available:
        return None
    with run.stage("facts"):
        query = classify(run.answer.query, facts.concepts)
        keys = [m["key"] for m in (routing.extracted or {}).get("companies", [])]
        companies = [c for c in (facts.store.company(k) for k in keys) if c is not None]
    if query.route == "undecided" and companies:
        query = apply_llm(query, *llm_route(c, run, routing), facts.concepts)
    route = "narrative" if query.route == "undecided" else query.route
    run.answer.route = route
    if query.definition_error and not query.metrics:  # said, never guessed around
        run.answer.facts_note = (f"The question's own definition does not read "
                                 f"({query.definition_error}); nothing was computed from it.")
    if routing.extracted is not None:
        routing.extracted["facts"] = query.to_dict() | {
            "companies_with_facts": [c.key for c in companies]}
    extracted = routing.extracted or {}
    if route in STRUCTURED and not companies and not routing.routed:
        named = [m["company"] for m in extracted.get("companies", [])]
        unknown = extracted.get("unknown_companies") or []
        if named or unknown:  # say so rather than read another company's filings
            return Answered(f"This index holds no XBRL facts and no filings for "
                            f"{', '.join(named + unknown)}; ingest its companyfacts file or "
                            f"filings to ask about it.")
    if route == "narrative" or not companies:
        return None
    with run.stage("facts"):
        result = facts.answer(query, companies)
    run.answer.facts = [v.to_dict() for v in result.values]
    run.answer.confidence = confidence(result.values, result.requested,
                                       len(result.missing), [], routing.routed)
    run.answer.citations = [  # a value read from a PDF statement table cites its page
        Citation(v.doc_id or f"EDGAR {v.accession or v.form}", v.page, None,
                 f"{v.concept} = {v.value:g} {v.unit}, {v.period_label}", v.url)
        for v in result.values]
    if route == "hybrid":
        if not result.values:
            run.answer.facts_note = result.text
            # "not a useful metric here", judged from the facts, said first
            return Context([], "\n".join(result.verdicts))
        # the figures are stated from the facts, whatever the generator then writes
        text = ("Exact figures computed from the filings (quote them as given, do not "
                "recompute them; the passages that follow explain them):\n" + result.text)
        return Context([Block(FACTS_DOC_ID, 1, 1, text, c.count_tokens(text), None)],
                       result.text)
    if result.values or not routing.routed:
        return Answered(result.text or "The facts hold no answer to this question.")
    # nothing in the facts: answer from the routed filings, the miss noted beside
    run.answer.facts_note = result.text
    run.answer.citations = []
    return None


def llm_route(c: Components, run: Run, routing: Routing) -> tuple[str | None, str | None]:
    """The router LLM's route and metric: from its call if routing made one, else one
    call now (the same constrained call; never a second one per question)."""
    llm_out = (routing.extracted or {}).get("llm")
    if llm_out is None and c.use_llm_router:
        try:
            with run.stage("route"):
                output, call = c.router().extract(run.answer.query)
        except Exception:  # the rules' answer (narrative) stands
            return None, None
        run.answer.calls.append(call)
        llm_out = output.model_dump()
    if not llm_out:
        return None, None
    return llm_out.get("route"), llm_out.get("metric")


def check_facts(c: Components, run: Run, blocks: list[Block]) -> None:
    """A hybrid answer's facts against the passages read beside them: contradictions are
    listed and lower its confidence."""
    values = [FactValue(**v) for v in run.answer.facts]
    found = contradictions(values, [(b.doc_id, b.first_page, b.text) for b in blocks],
                           c.facts().concepts)
    run.answer.contradictions = found
    run.answer.confidence = max(0, (run.answer.confidence or 0) - sum(
        25 if c["severity"] == "high" else 15 for c in found))
