"""What the command line prints for a person: an Answer record, snippets, page ranges."""

from __future__ import annotations

def snippet(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def pages(first: int, last: int) -> str:
    return f"p.{first}" if first == last else f"pp.{first}-{last}"


def print_answer(a: dict) -> None:
    print(a["answer"])
    print()
    if a["citations"]:
        print("citations:")
        for c in a["citations"]:
            where = f"[{c['doc_id']} p.{c['page']}]" if c.get("page") else f"[{c['doc_id']}]"
            print(f"  {where} {snippet(c['snippet'], 110)}"
                  + (f"\n      {c['url']}" if c.get("url") else ""))
    if a.get("route"):
        facts = a.get("facts") or []
        print(f"route:    {a['route']}; {len(facts)} XBRL fact(s) used"
              + (f"; confidence {a['confidence']}/100" if a.get("confidence") is not None else ""))
        for c in a.get("contradictions") or []:
            print(f"          contradiction ({c['severity']}): the filing text says {c['text']} for "
                  f"{c['metric']} FY{c['fiscal_year']}, the facts {c['fact_value']:,.0f} "
                  f"[{c['doc_id']} p.{c['page']}]")
    if a.get("facts_note"):
        print(f"facts:    {a['facts_note']}")
    if a.get("unsupported_figures"):
        print(f"unsupported figures (in no passage or fact given): "
              f"{', '.join(a['unsupported_figures'])}")
    r = a.get("routing")
    if r:
        print(f"routing:  {r['status']} -> {', '.join(r['doc_ids']) or '(whole corpus)'}"
              f"{'  (LLM router called)' if r['llm_called'] else '  (resolver only, no LLM call)'}")
        if r.get("detail"):
            print(f"          {r['detail']}")
    u = a["usage"]
    print(f"usage:    {u['llm_calls']} LLM call(s), {u['prompt_tokens']} prompt + "
          f"{u['completion_tokens']} completion tokens; context {a['context_tokens']} tokens")
    for c in u["calls"]:
        print(f"          {c['role']:14} {c['prompt_tokens']:>6} + {c['completion_tokens']:>4} tokens "
              f"{c['latency_ms']:>9.0f} ms  {c['model_id']}")
    t = a["timings_ms"]
    print("timings:  " + "  ".join(f"{k}={v:.0f}ms" for k, v in t.items()))
    e = a["energy"]
    joules = "n/a" if e.get("joules") is None else f"{e['joules']:.1f} J"
    cpu = f"; CPU {e['cpu_seconds']} s" if e.get("cpu_seconds") is not None else ""
    print(f"energy:   {joules} (source: {e.get('source')}"
          f"{', ' + e['scope'] if e.get('scope') else ''}{cpu})")
