"""Every public op of arrayport.ops with its NumPy/CuPy and PyTorch spelling, for bench_ops.py.

Each entry binds the op to prepared operands and returns the call (so that the timed loop pays no
lookups): `a` and `b` (floats in [0.5, 1.5), or integers for the bitwise ops), `c` (bool, for
where), `other` (the dtype astype converts to). `xp` is numpy or cupy (one API).
tests/python/ops/test_bench_table.py keeps the table to ops.__all__ and to NumPy's results.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, NamedTuple


class Entry(NamedTuple):
    name: str
    kind: str  # "float": a, b floats; "int": a, b integers (the bitwise ops)
    mine: Callable[[Any, Any], Callable[[], Any]]  # (ops, operands) -> the call
    xp: Callable[[Any, Any], Callable[[], Any]]  # (numpy or cupy, operands) -> the call
    torch: Callable[[Any, Any], Callable[[], Any]]  # (torch, operands) -> the call


def _same(name: str, arity: int, torch_name: str | None = None, kind: str = "float") -> Entry:
    """An op spelled alike in arrayport and NumPy (and PyTorch, or as torch_name)."""
    args = ("a", "b")[:arity]
    tn = torch_name or name
    return Entry(name, kind,
                 lambda ops, o: partial(getattr(ops, name), *(o[k] for k in args)),
                 lambda xp, o: partial(getattr(xp, name), *(o[k] for k in args)),
                 lambda torch, o: partial(getattr(torch, tn), *(o[k] for k in args)))


def _reduction(name: str, torch_name: str | None = None) -> Entry:
    return _same(name, 1, torch_name)


TABLE: list[Entry] = [
    _same("add", 2), _same("subtract", 2, "sub"), _same("multiply", 2, "mul"),
    _same("divide", 2, "div"), _same("floor_divide", 2), _same("remainder", 2),
    _same("power", 2, "pow"), _same("maximum", 2), _same("minimum", 2),
    _same("equal", 2, "eq"), _same("not_equal", 2, "ne"), _same("less", 2, "lt"),
    _same("less_equal", 2, "le"), _same("greater", 2, "gt"), _same("greater_equal", 2, "ge"),
    _same("logical_and", 2), _same("logical_or", 2), _same("logical_xor", 2),
    _same("bitwise_and", 2, kind="int"), _same("bitwise_or", 2, kind="int"),
    _same("bitwise_xor", 2, kind="int"), _same("bitwise_invert", 1, "bitwise_not", kind="int"),
    _same("negative", 1, "neg"), _same("square", 1), _same("sqrt", 1), _same("abs", 1),
    _same("logical_not", 1), _same("isnan", 1), _same("isinf", 1), _same("isfinite", 1),
    _same("exp", 1), _same("log", 1), _same("sin", 1), _same("cos", 1), _same("tanh", 1),
    Entry("copy", "float", lambda ops, o: partial(ops.copy, o["a"]),
          lambda xp, o: partial(xp.copy, o["a"]), lambda torch, o: o["a"].clone),
    Entry("astype", "float", lambda ops, o: partial(ops.astype, o["a"], o["other"]),
          lambda xp, o: partial(o["a"].astype, o["other"]),
          lambda torch, o: partial(o["a"].to, o["other"])),
    # NumPy and CuPy have no fused a * x + y: two passes there, one in PyTorch (alpha=).
    Entry("axpy", "float", lambda ops, o: partial(ops.axpy, 2.0, o["a"], o["b"]),
          lambda xp, o: lambda a=o["a"], b=o["b"]: 2.0 * a + b,
          lambda torch, o: partial(torch.add, o["b"], o["a"], alpha=2.0)),
    Entry("clip", "float", lambda ops, o: partial(ops.clip, o["a"], 0.75, 1.25),
          lambda xp, o: partial(xp.clip, o["a"], 0.75, 1.25),
          lambda torch, o: partial(torch.clamp, o["a"], 0.75, 1.25)),
    Entry("where", "float", lambda ops, o: partial(ops.where, o["c"], o["a"], o["b"]),
          lambda xp, o: partial(xp.where, o["c"], o["a"], o["b"]),
          lambda torch, o: partial(torch.where, o["c"], o["a"], o["b"])),
    _reduction("sum"), _reduction("mean"), _reduction("min", "amin"), _reduction("max", "amax"),
    _reduction("prod"), _reduction("any"), _reduction("all"), _reduction("argmin"),
    _reduction("argmax"),
    Entry("dot", "float", lambda ops, o: partial(ops.dot, o["a"], o["b"]),
          lambda xp, o: partial(xp.dot, o["a"], o["b"]),
          lambda torch, o: partial(torch.dot, o["a"], o["b"])),
]
