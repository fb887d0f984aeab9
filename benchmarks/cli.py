"""``finrag bench``: the benchmark commands, each writing benchmarks/results/<name>/."""

from __future__ import annotations


def add_parser(sub) -> None:
    from finrag.benchmarks import (calibration, engine_compare, facts_financebench, facts_quality, pareto,
                            perf, quality)

    bench = sub.add_parser("bench", help="benchmarks: answer quality, judge calibration, "
                           "performance, Pareto/FACET choice, SEC facts route")
    commands = bench.add_subparsers(dest="bench_command", metavar="BENCH", required=True)
    for module in (quality, calibration, perf, pareto, facts_quality, facts_financebench,
                   engine_compare):
        module.add_parser(commands)
