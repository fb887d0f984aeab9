"""The formula language of derived metrics: arithmetic over other metrics of the table.

    365 * avg(accounts_payable) / (cost_of_revenue + change(inventory))

- a name is a metric of the table, valued at the asked period;
- numbers are constants; ``+ - * /`` and parentheses as usual;
- ``avg(x)``: the mean of x at this and the prior fiscal year (an average balance);
- ``change(x)``: x this year minus x the prior year;
- ``pct_change(x)``: ``change(x) / |x the prior year|`` (a growth rate);
- ``prior(x)``: x the prior fiscal year.

``parse`` reads a formula into a small tree; ``evaluate`` values it with a lookup
``(metric key, years back) -> number or None`` and says which input is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Union

FUNCTIONS = ("avg", "change", "pct_change", "prior")
_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?)|([a-z_][a-z0-9_]*)|(.))")


class FormulaError(ValueError):
    """A formula that does not parse, or that names an unknown function."""


@dataclass(frozen=True)
class Num:
    value: float


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Call:
    fn: str
    arg: "Node"


@dataclass(frozen=True)
class BinOp:
    op: str
    left: "Node"
    right: "Node"


Node = Union[Num, Ref, Call, BinOp]


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            break
        tok = m.group(0).strip()
        if tok:
            if m.group(3) and tok not in "+-*/()":
                raise FormulaError(f"unexpected {tok!r} in formula {text!r}")
            out.append(tok)
        pos = m.end()
    return out


def parse(text: str) -> Node:
    """The tree of a formula; FormulaError when it does not read."""
    toks = _tokens(text or "")
    if not toks:
        raise FormulaError("empty formula")
    node, rest = _sum(toks, text)
    if rest:
        raise FormulaError(f"unexpected {rest[0]!r} in formula {text!r}")
    return node


def _sum(toks, text):
    node, toks = _product(toks, text)
    while toks and toks[0] in "+-":
        op, (right, toks) = toks[0], _product(toks[1:], text)
        node = BinOp(op, node, right)
    return node, toks


def _product(toks, text):
    node, toks = _atom(toks, text)
    while toks and toks[0] in "*/":
        op, (right, toks) = toks[0], _atom(toks[1:], text)
        node = BinOp(op, node, right)
    return node, toks


def _atom(toks, text):
    if not toks:
        raise FormulaError(f"formula {text!r} ends early")
    tok, rest = toks[0], toks[1:]
    if tok == "(":
        node, rest = _sum(rest, text)
        if not rest or rest[0] != ")":
            raise FormulaError(f"unbalanced parentheses in formula {text!r}")
        return node, rest[1:]
    if tok[0].isdigit():
        return Num(float(tok)), rest
    if tok[0].isalpha() or tok[0] == "_":
        if rest and rest[0] == "(":
            if tok not in FUNCTIONS:
                raise FormulaError(f"unknown function {tok!r}; known: {', '.join(FUNCTIONS)}")
            arg, rest = _sum(rest[1:], text)
            if not rest or rest[0] != ")":
                raise FormulaError(f"unbalanced parentheses in formula {text!r}")
            return Call(tok, arg), rest[1:]
        return Ref(tok), rest
    raise FormulaError(f"unexpected {tok!r} in formula {text!r}")


def names(node: Node) -> list[str]:
    """The metric keys a formula reads, in order, each once."""
    out: list[str] = []

    def walk(n: Node) -> None:
        if isinstance(n, Ref) and n.name not in out:
            out.append(n.name)
        elif isinstance(n, Call):
            walk(n.arg)
        elif isinstance(n, BinOp):
            walk(n.left)
            walk(n.right)
    walk(node)
    return out


def uses_prior_year(node: Node) -> bool:
    if isinstance(node, Call):
        return True
    if isinstance(node, BinOp):
        return uses_prior_year(node.left) or uses_prior_year(node.right)
    return False


class Missing(Exception):
    """An input of the formula has no value: ``key`` at ``back`` years before the asked one."""

    def __init__(self, key: str, back: int, why: str = ""):
        super().__init__(key)
        self.key, self.back, self.why = key, back, why


def evaluate(node: Node, lookup: Callable[[str, int], float], back: int = 0) -> float:
    """The formula's value; ``lookup(key, years_back)`` raises Missing for an absent input,
    ZeroDivisionError on a zero denominator."""
    if isinstance(node, Num):
        return node.value
    if isinstance(node, Ref):
        return lookup(node.name, back)
    if isinstance(node, Call):
        before = evaluate(node.arg, lookup, back + 1)
        if node.fn == "prior":
            return before
        now = evaluate(node.arg, lookup, back)
        if node.fn == "avg":
            return (now + before) / 2
        if node.fn == "change":
            return now - before
        if before == 0:
            raise ZeroDivisionError("pct_change from zero")
        return (now - before) / abs(before)
    left = evaluate(node.left, lookup, back)
    right = evaluate(node.right, lookup, back)
    if node.op == "/":
        if right == 0:
            raise ZeroDivisionError("division by zero")
        return left / right
    return {"+": left + right, "-": left - right, "*": left * right}[node.op]
