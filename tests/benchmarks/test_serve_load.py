"""The load generator's pure figures (benchmarks/serve_load_report.py), on hand-made inputs: no
server."""

import math

import pytest

from finrag.benchmarks.serve_load_report import (BAD_BODY, CONN_ERROR, HTTP_ERROR, OK, REJECTED,
                                          REJECTED_NO_RETRY_AFTER, TIMEOUT, classify,
                                          client_by_code, counter_delta, parse_counter,
                                          percentile, requests_by_code, summarise)


def test_percentile_interpolates_between_order_statistics():
    assert percentile([], 0.5) is None
    assert percentile([7.0], 0.99) is None  # a tail from under 30 samples is not reported
    assert percentile([7.0], 0.5) == 7.0
    assert percentile([1.0] * 29, 0.95) is None and percentile([1.0] * 30, 0.95) == 1.0
    assert percentile([4, 1, 3, 2], 0.5) == 2.5  # order does not matter
    values = list(range(1, 101))  # 1..100
    assert percentile(values, 0.0) == 1
    assert percentile(values, 1.0) == 100
    assert math.isclose(percentile(values, 0.95), 95.05)
    assert math.isclose(percentile(values, 0.99), 99.01)


def test_classify():
    answer = {"answer": "x", "usage": {"prompt_tokens": 1}}
    assert classify(200, None, answer) == OK
    assert classify(200, None, {"answer": "x"}) == BAD_BODY  # no usage: not an Answer record
    assert classify(200, None, None) == BAD_BODY
    assert classify(503, "5", {"kind": "overloaded"}) == REJECTED
    assert classify(503, None, {"kind": "overloaded"}) == REJECTED_NO_RETRY_AFTER
    assert classify(504, None, {"kind": "deadline"}) == HTTP_ERROR
    assert classify(422, None, {"kind": "bad_request"}) == HTTP_ERROR


def _ok(ms, prompt, completion, calls, timings, joules=None, source="none"):
    return {"outcome": OK, "status": 200, "latency_ms": ms, "prompt_tokens": prompt,
            "completion_tokens": completion, "llm_calls": calls, "timings_ms": timings,
            "server_total_ms": timings.get("total"), "joules": joules,
            "energy_source": source, "energy_scope": "process"}


def test_summarise_a_level():
    rows = [
        _ok(1000, 100, 10, 1, {"route": 10, "generate": 800, "total": 900}),
        _ok(2000, 200, 20, 2, {"route": 30, "generate": 1600, "total": 1800}),
        _ok(3000, 300, 30, 3, {"route": 20, "total": 2700}),
        {"outcome": REJECTED, "status": 503, "latency_ms": 5, "retry_after": "3",
         "error_kind": "overloaded"},
        {"outcome": REJECTED_NO_RETRY_AFTER, "status": 503, "latency_ms": 6,
         "error_kind": "overloaded"},
        {"outcome": HTTP_ERROR, "status": 504, "latency_ms": 300_000, "error_kind": "deadline"},
        {"outcome": TIMEOUT, "status": None, "latency_ms": 330_000},
        {"outcome": CONN_ERROR, "status": None, "latency_ms": 1},
    ]
    s = summarise(rows, wall_s=10.0, sent=9)  # one request left no row at all
    assert (s["sent"], s["replies"], s["ok"]) == (9, 6, 3)
    assert s["lost"] == 3  # the timeout, the connection error and the missing row
    assert (s["rejected_503"], s["rejected_503_without_retry_after"]) == (1, 1)
    assert s["other_errors_by_status"] == {"504": 1}
    assert s["error_kinds"] == {"deadline": 1, "overloaded": 2}
    assert (s["timeouts"], s["connection_errors"]) == (1, 1)
    assert s["unexpected"] == 4  # 503 without Retry-After, 504, timeout, connection error
    assert s["answers_per_s"] == 0.3
    assert s["latency_ms"]["p50"] == 2000 and s["latency_ms"]["max"] == 3000
    assert s["latency_ms"]["p95"] is None  # 3 answers: too few for a tail percentile
    assert s["server_total_ms_p50"] == 1800
    assert s["rejection_latency_ms_p50"] == 5
    assert s["retry_after_s"] == ["3"]
    assert (s["prompt_tokens"], s["completion_tokens"], s["llm_calls"]) == (200, 20, 2)
    assert s["stage_p50_ms"] == {"generate": 1200, "route": 20}  # "total" is not a stage
    assert s["energy"]["joules_per_answer"] is None
    assert s["energy"]["source"].startswith("unavailable")


def test_summarise_energy_and_an_empty_level():
    rows = [_ok(1000, 1, 1, 1, {"total": 1}, joules=10.0, source="nvml"),
            _ok(1000, 1, 1, 1, {"total": 1}, joules=None, source="none"),
            _ok(1000, 1, 1, 1, {"total": 1}, joules=20.0, source="nvml")]
    e = summarise(rows, 1.0)["energy"]
    assert e == {"joules_per_answer": 15.0, "answers_measured": 2, "source": "nvml",
                 "scope": "process"}
    empty = summarise([], 0.0, sent=0)
    assert empty["lost"] == 0 and empty["answers_per_s"] is None
    assert empty["latency_ms"]["p50"] is None and empty["prompt_tokens"] is None


METRICS = """\
# HELP finrag_requests_total HTTP requests by endpoint and status code
# TYPE finrag_requests_total counter
finrag_requests_total{code="200",endpoint="/v1/answer"} 7.0
finrag_requests_total{code="503",endpoint="/v1/answer"} 3.0
finrag_requests_total{code="200",endpoint="/healthz"} 12.0
finrag_requests_total{endpoint="/v1/answer",code="422"} 1.0 1700000000000
# HELP finrag_requests_created HTTP requests by endpoint and status code
finrag_requests_created{code="200",endpoint="/v1/answer"} 1.7e+09
finrag_errors_total{kind="over \\"loaded\\""} 2.0
finrag_answers_in_flight 0.0
"""


def test_parse_prometheus_counter_text():
    samples = parse_counter(METRICS, "finrag_requests_total")
    assert len(samples) == 4  # not the _created series
    assert ({"code": "200", "endpoint": "/healthz"}, 12.0) in samples
    assert parse_counter(METRICS, "finrag_errors_total") == [({"kind": 'over "loaded"'}, 2.0)]
    assert parse_counter(METRICS, "finrag_answers_in_flight") == [({}, 0.0)]
    assert requests_by_code(METRICS) == {"200": 7.0, "503": 3.0, "422": 1.0}
    assert requests_by_code(METRICS, "/healthz") == {"200": 12.0}
    assert requests_by_code("") == {}


def test_counter_delta_against_the_client():
    before = {"200": 7.0, "503": 3.0}
    after = {"200": 9.0, "503": 3.0, "504": 1.0}
    assert counter_delta(before, after) == {"200": 2, "504": 1}
    rows = [{"status": 200}, {"status": 504}, {"status": 200}, {"status": None}]
    assert client_by_code(rows) == counter_delta(before, after)
