"""Turns bench_alloc's Google Benchmark JSON into bench/results/alloc.{json,png} with ratios.

usage: python bench/plot_alloc.py RAW_JSON DEVICE_NAME OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Each arrayport resource and the raw allocator it replaces.
PEERS = {
    "arrayport_buffer/device": "cuda_malloc_async",
    "arrayport_buffer/managed": "cuda_malloc_managed",
    "arrayport_buffer/pinned": "cuda_malloc_host",
    "arrayport_buffer/host": "host_malloc",
}


def main(raw: str, device: str, out_dir: str) -> None:
    data = json.loads(Path(raw).read_text())
    # Medians of the repetitions (plain runs where no aggregates were asked for).
    ns = {b.get("run_name", b["name"]): b["real_time"] for b in data["benchmarks"]
          if b.get("time_unit") == "ns" and not b.get("error_occurred")
          and b.get("aggregate_name", "median") == "median"}
    rows = []
    for ours, peer in PEERS.items():
        if ours in ns and peer in ns:
            rows.append({"arrayport": ours, "ns": round(ns[ours], 1), "peer": peer,
                         "peer_ns": round(ns[peer], 1), "speedup": round(ns[peer] / ns[ours], 2)})
    result = {"benchmark": "allocate + release 4000 bytes per call", "device": device,
              "context": data.get("context", {}), "all_ns": ns, "comparisons": rows}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "alloc.json").write_text(json.dumps(result, indent=2))
    for r in rows:
        print(f"{r['arrayport']:<28} {r['ns']:>9.1f} ns   {r['peer']:<22} {r['peer_ns']:>9.1f} ns"
              f"   {r['speedup']:>6.2f}x")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["arrayport"].split("/")[1] for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.bar([i - 0.2 for i in x], [r["ns"] for r in rows], 0.4, label="arrayport")
    ax.bar([i + 0.2 for i in x], [r["peer_ns"] for r in rows], 0.4, label="raw allocator")
    ax.set_xticks(list(x), [f"{n}\nvs {r['peer']}" for n, r in zip(names, rows)], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("ns per allocate + release (log)")
    ax.set_title(f"Allocation cost, 4000 bytes — {device}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "alloc.png", dpi=120)


if __name__ == "__main__":
    main(*sys.argv[1:4])
