"""The leak loops (tests/leaks/leak_loops.py) with 2 * 10^4 cycles per producer: resident memory
flat, no Python objects or DLPack exports left behind; and a producer that leaks on purpose is
seen, so the measurement itself can fail."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO, whole_device

CYCLES = 20_000
MAX_GROWTH = 2 << 20  # 2 MiB: catches a leak of 100 bytes a cycle and more


def under_a_sanitizer() -> bool:
    with open("/proc/self/maps") as f:
        maps = f.read()
    return "libasan" in maps or "libtsan" in maps


@pytest.mark.skipif(under_a_sanitizer(), reason="under a sanitizer, resident memory measures its "
                    "quarantine and shadow memory, not arrayport's")
@whole_device
def test_acquire_export_release_cycles_leave_memory_flat():
    r = subprocess.run([sys.executable, str(REPO / "tests" / "leaks" / "leak_loops.py"),
                        "--cycles", str(CYCLES), "--self-test"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["producers"]
    leak = rows.pop("self-test-leak")
    assert leak["rss_growth_bytes"] > 5 * MAX_GROWTH, leak  # ~20 MB: the measurement sees leaks
    assert len(rows) >= 9
    for name, row in rows.items():
        assert row["cycles"] == CYCLES
        assert row["rss_growth_bytes"] < MAX_GROWTH, (name, row)
        assert row["python_objects_growth"] < 50, (name, row)
        assert row["dlpack_exports_growth"] == 0, (name, row)
        if "gpu_free_drop_bytes" in row:  # device memory flat too (the pool keeps what it had)
            assert row["gpu_free_drop_bytes"] < 64 << 20, (name, row)
