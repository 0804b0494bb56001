"""bench/ops_table.py, the op table of bench/bench_ops.py: it names every public op once, and each
entry computes the same thing in arrayport, NumPy and PyTorch (so a ratio compares like with like).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from arrayport import ops
from conftest import REPO, needs_torch
from ops_reference import to_numpy

sys.path.insert(0, str(REPO / "bench"))
from bench_ops import sweep_operands  # noqa: E402
from ops_table import TABLE  # noqa: E402


def test_the_table_names_every_op_once():
    names = [e.name for e in TABLE]
    assert len(names) == len(set(names))
    assert set(names) == set(ops.__all__)


def assert_same(got, want, dtype):
    got, want = to_numpy(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got.astype(want.dtype), want, rtol=rtol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("entry", TABLE, ids=lambda e: e.name)
def test_each_entry_matches_numpy(entry, dtype):
    o = sweep_operands(37, dtype, entry.kind, seed=3)
    with np.errstate(all="ignore"):
        want = entry.xp(np, o)()
    assert_same(entry.mine(ops, o)(), want, dtype)


@needs_torch
@pytest.mark.parametrize("entry", TABLE, ids=lambda e: e.name)
def test_each_entry_matches_pytorch(entry):
    import torch

    o = sweep_operands(37, "float32", entry.kind, seed=3)
    t = {k: torch.from_numpy(v) for k, v in o.items() if k != "other"}
    t["other"] = torch.float64
    with np.errstate(all="ignore"):
        want = entry.torch(torch, t)().numpy()
    assert_same(entry.mine(ops, o)(), want, "float32")
