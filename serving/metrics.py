"""Prometheus metrics of the Ingress (one registry per Ingress replica)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320)


class Metrics:
    def __init__(self):
        r = self.registry = CollectorRegistry()
        self.requests = Counter("finrag_requests", "HTTP requests by endpoint and status code",
                                ["endpoint", "code"], registry=r)
        self.errors = Counter("finrag_errors", "Requests that failed, by kind (bad_request, "
                              "unauthorized, too_large, overloaded, deadline, internal)",
                              ["kind"], registry=r)
        self.in_flight = Gauge("finrag_answers_in_flight", "Answer requests being worked on",
                               registry=r)
        self.latency = Histogram("finrag_answer_latency_seconds",
                                 "End-to-end answer latency by system", ["system"],
                                 buckets=_SECONDS, registry=r)
        self.stage = Histogram("finrag_stage_latency_seconds", "Latency of each pipeline stage",
                               ["stage"], buckets=_SECONDS, registry=r)
        self.prompt_tokens = Counter("finrag_prompt_tokens", "Prompt tokens by LLM role",
                                     ["role"], registry=r)
        self.completion_tokens = Counter("finrag_completion_tokens",
                                         "Completion tokens by LLM role", ["role"], registry=r)
        self.llm_calls = Counter("finrag_llm_calls", "LLM calls by role", ["role"], registry=r)
        self.joules = Counter("finrag_energy_joules", "Energy of answers, where measured, by "
                              "source (nvml, rapl)", ["source"], registry=r)
        self.engine_steps = Gauge("finrag_generator_engine_steps",
                                  "Steps the generator's engine has run (vLLM engines)",
                                  registry=r)
        self.engine_max_running = Gauge(
            "finrag_generator_engine_max_running",
            "The most requests one generator engine step has run: above 1, concurrent "
            "answers were generated together (continuous batching; vLLM engines)", registry=r)
        self.routing = Counter("finrag_routing", "Routing outcomes by status", ["status"],
                               registry=r)

    def answered(self, answer) -> None:
        self.latency.labels(answer.system).observe(answer.timings_ms.get("total", 0.0) / 1000)
        for stage, ms in answer.timings_ms.items():
            if stage != "total":
                self.stage.labels(stage).observe(ms / 1000)
        for call in answer.calls:
            self.prompt_tokens.labels(call.role).inc(call.prompt_tokens)
            self.completion_tokens.labels(call.role).inc(call.completion_tokens)
            self.llm_calls.labels(call.role).inc()
        joules = (answer.energy or {}).get("joules")
        if joules is not None:
            self.joules.labels(answer.energy["source"]).inc(joules)
        if answer.routing is not None:
            self.routing.labels(answer.routing.status).inc()

    def engine(self, stats: dict) -> None:
        """The generator engine's statistics (``Generator.engine_stats``), where it keeps any."""
        if "steps" in stats:
            self.engine_steps.set(stats["steps"])
        if "max_running" in stats:
            self.engine_max_running.set(stats["max_running"])

    def render(self) -> bytes:
        return generate_latest(self.registry)
