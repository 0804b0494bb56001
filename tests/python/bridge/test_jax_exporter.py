"""JAX arrays through jaxlib's DLPack exporter (bridge/jax.cpp: jax_dlpack), as JAX's own
__dlpack__ calls it. With a stand-in jaxlib._jax module: the exporter is looked up once per
process, so each case runs in a child process that installs the stand-in first. With the real
jaxlib (where JAX is installed): on its CPU backend with two devices, in a child; on a GPU,
test_consume_gpu.py's JAX tests take the same path."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = r"""
import gc, json, sys, types
sys.path.insert(0, sys.argv[1])
from dlpack_ctypes import FakeJax, Producer
import numpy as np
import arrayport as ap

calls = []


class SingleDeviceSharding:
    pass


class NamedSharding:
    pass


def buffer_to_dlpack_managed_tensor(x, *, stream=None):
    calls.append(stream)
    if x.exporter_fails:
        raise RuntimeError("exporter failed")
    return x.p.__dlpack__(stream=stream)


if sys.argv[2] != "absent":
    module = types.ModuleType("jaxlib._jax")
    module.buffer_to_dlpack_managed_tensor = buffer_to_dlpack_managed_tensor
    module.SingleDeviceSharding = SingleDeviceSharding
    sys.modules["jaxlib"] = types.ModuleType("jaxlib")
    sys.modules["jaxlib._jax"] = module

ArrayImpl = type("ArrayImpl", (FakeJax,), {"__module__": "jaxlib._jax"})


def make(sharding=SingleDeviceSharding, exporter_fails=False, dlpack_fails=False):
    x = ArrayImpl()
    x.p = Producer(values=(1.0, 2.0, 3.0, 4.0))  # float64 on the CPU
    x.sharding = sharding()
    x.exporter_fails = exporter_fails
    if dlpack_fails:
        def refuse(**kw):
            raise BufferError("JAX's own refusal")
        x.__dlpack__ = refuse
    return x


out = {}
for case, kw in [("one device", {}), ("several devices", {"sharding": NamedSharding}),
                 ("exporter fails", {"exporter_fails": True})]:
    calls.clear()
    x = make(**kw)
    v = ap.view(x)
    values = np.asarray(ap.asarray(v)).tolist()
    ptr_ok = v.ptr == x.p.data
    del v
    gc.collect()
    out[case] = {"exporter": list(calls), "exported": x.p.exported, "deleted": x.p.deleted,
                 "values": values, "ptr_ok": ptr_ok}
calls.clear()
x = make(exporter_fails=True, dlpack_fails=True)
try:
    ap.view(x)
    out["both fail"] = "no error"
except BufferError as e:
    out["both fail"] = str(e)
out["both fail calls"] = list(calls)
x = make()
r = ap.ops.add(x, x)
out["ops"] = {"values": np.asarray(r).tolist(), "exporter": len(calls) - 1}
print(json.dumps(out))
"""


def run_child(mode):
    here = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, "-c", CHILD, str(here), mode], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_jax_arrays_on_one_device_go_through_the_exporter():
    out = run_child("present")
    one = out["one device"]
    # The exporter made the one capsule, with the stream __dlpack__ would have had (None: the
    # stand-in's memory is the CPU's), and the holder gave it back once.
    assert one == {"exporter": [None], "exported": 1, "deleted": 1,
                   "values": [1.0, 2.0, 3.0, 4.0], "ptr_ok": True}
    assert out["ops"] == {"values": [2.0, 4.0, 6.0, 8.0], "exporter": 2}  # one per operand


def test_arrays_the_exporter_does_not_serve_take_dunder_dlpack():
    out = run_child("present")
    # Over several devices the exporter would read the first shard alone: never asked.
    several = out["several devices"]
    assert several["exporter"] == [] and several["exported"] == several["deleted"] == 1
    assert several["values"] == [1.0, 2.0, 3.0, 4.0]
    # An exporter error is not the user's: __dlpack__ serves, or raises JAX's own error.
    failed = out["exporter fails"]
    assert failed["exporter"] == [None] and failed["exported"] == failed["deleted"] == 1
    assert "JAX's own refusal" in out["both fail"]
    assert out["both fail calls"] == [None]


def test_without_jaxlib_loaded_dunder_dlpack_serves():
    out = run_child("absent")
    assert out["one device"]["exporter"] == [] and out["one device"]["exported"] == 1
    assert out["one device"]["values"] == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("mode", ["present", "absent"])
def test_no_capsule_is_left_undeleted(mode):
    out = run_child(mode)
    for case in ("one device", "several devices", "exporter fails"):
        assert out[case]["exported"] == out[case]["deleted"], case


REAL = r"""
import gc, json, os, sys
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec
import jaxlib._jax as jaxlib
import arrayport as ap

# Count the exporter's calls: arrayport looks it up at its first JAX array, after this.
real, calls = jaxlib.buffer_to_dlpack_managed_tensor, []
def counted(x, **kw):
    calls.append(kw.get("stream"))
    return real(x, **kw)
jaxlib.buffer_to_dlpack_managed_tensor = counted

out = {}
# JAX's CPU arrays offer the buffer protocol too, which serves them first: DLPack is asked for.
x = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
v = ap.view(x, protocol="dlpack")
out["one"] = {"values": np.asarray(ap.asarray(v)).tolist(), "calls": list(calls)}
del v
mesh = Mesh(np.array(jax.devices()[:2]), ("d",))
shards = jax.device_put(jnp.arange(8.0, dtype=jnp.float32), NamedSharding(mesh, PartitionSpec("d")))
calls.clear()
try:
    ap.view(shards, protocol="dlpack")
    out["sharded"] = "no error"
except Exception as e:
    out["sharded"] = type(e).__name__
out["sharded calls"] = list(calls)
gone = jnp.ones(4, jnp.float32)
gone.delete()
try:
    ap.view(gone, protocol="dlpack")
    out["deleted"] = "no error"
except Exception as e:
    out["deleted"] = type(e).__name__ + ": " + str(e)
print(json.dumps(out))
"""


@pytest.mark.needs_jax
def test_real_jax_arrays_take_the_exporter_and_sharded_ones_are_refused():
    # On the CPU backend with two devices (any machine with JAX): an array over both would be
    # read as its first shard by the exporter, so JAX's __dlpack__ refuses it, as it always did.
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    r = subprocess.run([sys.executable, "-c", REAL], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["one"] == {"values": [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], "calls": [None]}
    assert out["sharded"] != "no error" and out["sharded calls"] == []
    assert out["deleted"] != "no error" and "delete" in out["deleted"].lower()
