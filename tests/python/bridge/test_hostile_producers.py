"""Hostile producers: __cuda_array_interface__ dicts whose values and keys run Python code while the
bridge reads them (__bool__, __index__, a key's __eq__ / __hash__, a dict subclass's __getitem__, a
metaclass's __module__) and, from there, empty the dict, delete or replace a key, raise, return the
wrong type, tear the producer down or call the bridge again; and buffer exporters written in C that
fail without an exception or hand over a Py_buffer nobody may trust. Each must end in a view of what
the producer described or in a clear exception -- never a crash, a read of freed memory (the
sanitizer run sees those), an exception left set, or a reference leaked."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig

import numpy as np
import pytest

import arrayport as ap
from arrayport import _core, ops
from conftest import REPO

# ---- __cuda_array_interface__ with callbacks ----------------------------------------------------

KEYS = ["version", "mask", "shape", "typestr", "data", "strides", "stream"]
CALLBACKS = ["bool", "index", "eq", "hash", "getitem", "module"]
MUTATIONS = ["clear", "delete", "replace", "raise", "wrong_type", "drop_producer", "reenter"]


class ProducerError(Exception):
    """What a callback raises on purpose."""


def spray():
    # Fresh tuples and ints of the sizes just freed, so that a stale read sees other values.
    return [tuple([7777 + i, 8888 + i]) for i in range(200)] + [(9999 + i,) * 3 for i in range(200)]


class Producer:
    """An interface built anew on each access (tuples from lists: no constant keeps them alive)."""

    def __init__(self, storage: np.ndarray, make):
        self.storage = storage
        self.make = make
        self.d = None

    @property
    def __cuda_array_interface__(self):
        self.d = self.make(self)
        return self.d


class Plain:
    """What drop_producer turns a Producer into: no interface, no attributes."""


class Action:
    """Runs the mutation once the interface is built (`armed`), and once only (a callback may be
    called again, by a re-entrant read)."""

    def __init__(self, mutation: str, key: str):
        self.mutation, self.key, self.fired, self.producer = mutation, key, 0, None
        self.armed = False
        self.kept = None

    def __call__(self, wrong):
        if not self.armed:
            return None
        self.fired += 1
        if self.fired > 1:
            return None
        p = self.producer
        d = p.d
        m = self.mutation
        if m == "clear":
            d.clear()
        elif m == "delete":
            d.pop(self.key, None)
        elif m == "replace":
            d[self.key] = 1.5
        elif m == "raise":
            raise ProducerError(f"raised while {self.key} was read")
        elif m == "wrong_type":
            return wrong
        elif m == "drop_producer":
            d.clear()
            p.d = None
            p.__dict__.clear()
            p.__class__ = Plain
        elif m == "reenter":
            try:
                self.kept = ap.view(p)  # the bridge, again, inside its own read
            except (TypeError, ValueError, BufferError, ProducerError):
                pass
        self.kept = (self.kept, spray())
        return None


class Flag:
    """data[1] (readonly) whose __bool__ acts."""

    def __init__(self, action):
        self.action = action

    def __bool__(self):
        r = self.action("yes")  # a str from __bool__ is a TypeError
        return r if r is not None else False


class Index:
    """An int-like (__index__, __int__) that acts: the bridge takes ints only, and says so."""

    def __init__(self, value, action):
        self.value, self.action = value, action

    def __index__(self):
        r = self.action(1.5)
        return r if r is not None else self.value

    __int__ = __index__


class EqKey(str):
    """A key equal in hash to a protocol key, stored before it: looking that key up compares them."""

    action = None

    def __eq__(self, other):
        r = type(self).action(Bomb())
        return r if r is not None else False

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = str.__hash__


class HashKey(str):
    """A key whose __hash__ acts once stored (dicts keep hashes: the bridge never asks for one)."""

    action = None

    def __hash__(self):
        r = type(self).action("not an int")
        return r if r is not None else str.__hash__(self)

    __eq__ = str.__eq__


class Bomb:
    """A truth value that raises: what a wrong-typed __eq__ result turns into."""

    def __bool__(self):
        raise ProducerError("an __eq__ result with no truth value")


class Meta(type):
    """A metaclass whose __module__ acts: error messages name the type of a wrong value."""

    action = None

    @property
    def __module__(cls):
        r = Meta.action(42)  # a non-str __module__
        return r if r is not None else "hostile"


class Weird(metaclass=Meta):
    pass


class LoudDict(dict):
    """A dict subclass whose Python-level readers act; the bridge reads the storage itself."""

    action = None

    def __getitem__(self, k):
        type(self).action(None)
        return dict.__getitem__(self, k)

    def get(self, k, default=None):
        type(self).action(None)
        return dict.get(self, k, default)

    def __contains__(self, k):
        type(self).action(None)
        return dict.__contains__(self, k)

    def keys(self):
        type(self).action(None)
        return dict.keys(self)


def interface(p: Producer, callback: str, key: str, action: Action) -> dict:
    """The well-formed interface of p.storage with `callback` planted at `key`."""
    ptr = p.storage.ctypes.data
    values = {
        "version": 3,
        "mask": None,
        "shape": tuple([2, 3]),
        "typestr": "<f8",
        "data": tuple([ptr, False]),
        "strides": tuple([24, 8]),
        "stream": None,
    }
    d: dict = {}
    if callback == "bool":
        values["data"] = tuple([ptr, Flag(action)])
    elif callback == "index":
        values[key] = {"shape": lambda: tuple([Index(2, action), 3]),
                       "strides": lambda: tuple([24, Index(8, action)]),
                       "data": lambda: tuple([Index(ptr, action), False])}.get(key, lambda: Index(3, action))()
    elif callback == "eq":
        # Same text, so the same hash, stored first: a lookup of `key` compares with it first.
        EqKey.action = staticmethod(action)
        d[EqKey(key)] = "decoy"
    elif callback == "hash":
        HashKey.action = staticmethod(action)
        d[HashKey(key)] = "decoy"
    elif callback == "getitem":
        LoudDict.action = staticmethod(action)
        d = LoudDict()
    elif callback == "module":
        Meta.action = staticmethod(action)
        values[key] = Weird()
    d.update(values)
    action.armed = True
    return d


def outcome(call, p):
    try:
        return call(p), None
    except (TypeError, ValueError, BufferError, ProducerError) as e:
        return None, e


ENTRIES = {
    "view": lambda p: ap.view(p),
    "view unsynced": lambda p: ap.view(p, sync=False),
    "argument": lambda p: _core._acquire_protocol(p),
}


@pytest.mark.parametrize("entry", list(ENTRIES))
@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("mutation", MUTATIONS)
@pytest.mark.parametrize("callback", CALLBACKS)
def test_a_cai_callback_that_changes_the_dict_never_breaks_the_bridge(callback, mutation, key, entry):
    storage = np.arange(6, dtype=np.float64)
    action = Action(mutation, key)
    p = Producer(storage, lambda p: interface(p, callback, key, action))
    action.producer = p
    refs = sys.getrefcount(p), sys.getrefcount(storage)
    result, error = outcome(ENTRIES[entry], p)
    if error is not None:
        # The callback's own error, CPython's about what it returned, or ours naming the argument.
        assert (isinstance(error, ProducerError) or "should return" in str(error)
                or str(error).startswith("obj: ")), repr(error)
        del error
    elif entry == "argument":
        assert result == "cai"
    else:
        # Whatever ran, a view describes the interface as it was read: the values taken before a
        # callback changed the dict, none that came after it (those would have been refused).
        assert result.shape == (2, 3)
        assert result.strides == (24, 8)
        assert result.ptr == storage.ctypes.data
        assert result.dtype == "float64"
        assert result.readonly is False
        assert result.base is p
        del result
    action.kept = None
    dropped = mutation == "drop_producer" and action.fired > 0  # p.storage went with p.__dict__
    assert (sys.getrefcount(p), sys.getrefcount(storage) + dropped) == refs
    ap.view(np.arange(3.0))  # no exception was left set


@pytest.mark.parametrize("mutation", ["clear", "delete", "replace", "drop_producer"])
def test_a_readonly_flag_that_empties_the_dict_leaves_the_shape_read_intact(mutation):
    # The case: data[1].__bool__ empties the dict after shape was read; the shape tuple,
    # freed with the dict, must not be read (the view keeps what was read before).
    storage = np.arange(6, dtype=np.float64)
    action = Action(mutation, "shape")
    p = Producer(storage, lambda p: interface(p, "bool", "shape", action))
    action.producer = p
    for _ in range(50):
        action.fired = 0
        v = ap.view(p)
        assert (v.shape, v.strides, v.ptr) == ((2, 3), (24, 8), storage.ctypes.data)
        del v
        if mutation == "drop_producer":
            p.__class__ = Producer
            p.__init__(storage, lambda p: interface(p, "bool", "shape", action))


def test_values_are_released_once_whatever_the_callbacks_did():
    # Exact reference counts of every value the dict held, for each callback x mutation x key.
    storage = np.arange(6, dtype=np.float64)
    for callback in CALLBACKS:
        for mutation in MUTATIONS:
            for key in KEYS:
                action = Action(mutation, key)
                p = Producer(storage, lambda p: interface(p, callback, key, action))
                action.producer = p
                d = interface(p, callback, key, action)
                held = [v for v in d.values() if type(v) in (tuple, Weird)]
                p.make = lambda p, d=d: d
                before = [sys.getrefcount(v) for v in held]
                in_dict = [sum(x is v for x in d.values()) for v in held]
                result, error = outcome(ENTRIES["view"], p)
                del result, error
                action.kept = None
                now = [sum(x is v for x in d.values()) for v in held]
                after = [sys.getrefcount(v) for v in held]
                expected = [b - i + n for b, i, n in zip(before, in_dict, now)]
                assert after == expected, (callback, mutation, key)


# ---- buffer exporters written in C ---------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """tests/hostile/hostile_exporter.c, compiled with the interpreter's C compiler (one command:
    no CMake project for one file). The sanitizer run's preloaded runtime is kept out of it."""
    source = REPO / "tests" / "hostile" / "hostile_exporter.c"
    out = tmp_path_factory.mktemp("hostile") / ("hostile_exporter" + sysconfig.get_config_var("EXT_SUFFIX"))
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    cmd = [*cc, "-shared", "-fPIC", "-O1", "-Wall", "-Werror", f"-I{sysconfig.get_paths()['include']}",
           str(source), "-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}")
    spec = importlib.util.spec_from_file_location("hostile_exporter", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# mode: (exception, what its message says); None: a view of the 4 float64 items.
EXPECTED = {
    "ok": None,
    "fail_with_error": (BufferError, "refused on purpose"),
    "fail_silently": (SystemError, r"obj: the buffer export \(bf_getbuffer\) of hostile_exporter.Exporter "
                                   "failed without setting an exception"),
    "fail_positive": (SystemError, r"obj: the buffer export \(bf_getbuffer\) of hostile_exporter.Exporter "
                                   "failed without setting an exception"),
    "ok_with_error": (BufferError, "obj: the exporter returned a buffer with RuntimeError set"),
    "null_buf": (ValueError, "obj: data pointer is NULL but the array has elements"),
    "negative_ndim": (ValueError, "obj: expected at most 64 dimensions, got -1"),
    "huge_ndim": (ValueError, "obj: expected at most 64 dimensions, got 65"),
    "int_max_ndim": (ValueError, "obj: expected at most 64 dimensions, got 2147483647"),
    "null_shape_2d": (BufferError, "obj: the exporter returned no shape for 2 dimensions"),
    "null_shape_bad_len": (BufferError, "obj: buffer len 12 is not a whole number of items of 8 bytes"),
    "zero_itemsize": (TypeError, "obj: .*expected itemsize 8"),
    "negative_itemsize": (TypeError, "obj: .*expected itemsize 8"),
    "null_format": (TypeError, "obj: .*expected itemsize 1"),
    "bad_format": (TypeError, "obj: unsupported"),
    "negative_len": (BufferError, r"obj: shape \(4,\) of 8-byte items needs 32 bytes, but the buffer has len -8"),
    "len_mismatch": (BufferError, r"obj: shape \(4,\) of 8-byte items needs 32 bytes, but the buffer has len 16"),
    "negative_shape": (ValueError, r"obj: expected non-negative extents, got shape "),
    "suboffsets": (BufferError, "obj: the exporter returned suboffsets"),
    "unaligned_stride": (ValueError, "obj: stride 4 of axis 0 is not a multiple of the itemsize 8"),
    "huge_stride": (ValueError, r"obj: shape \(4,\) with byte strides \(4611686018427387904,\) spans \d+ bytes, more than 2\^63-1"),
    "null_obj": None,
}

BUFFER_ENTRIES = {
    "view": lambda e: ap.view(e),
    "argument": lambda e: _core._acquire_protocol(e),
    "asarray": lambda e: ap.asarray(e),
    "ops.sum": lambda e: ops.sum(e),
}


def test_every_exporter_mode_has_an_expectation(hostile):
    assert set(hostile.MODES) == set(EXPECTED)


@pytest.mark.parametrize("entry", list(BUFFER_ENTRIES))
@pytest.mark.parametrize("mode", list(EXPECTED))
def test_a_misbehaving_buffer_exporter_gets_a_clear_exception(hostile, mode, entry):
    e = hostile.Exporter(mode)
    refs = sys.getrefcount(e)
    for _ in range(20):
        expected = EXPECTED[mode]
        if expected is None:
            r = BUFFER_ENTRIES[entry](e)
            if entry in ("view", "asarray"):
                assert r.shape == (4,) and r.dtype == "float64"
                assert np.asarray(r).tolist() == [1.0, 2.0, 3.0, 4.0]
            elif entry == "ops.sum":
                assert float(np.asarray(r)) == 10.0
            del r
        else:
            exc, match = expected
            if entry == "ops.sum" and match.startswith("obj: "):
                match = match[len("obj: "):]  # ops name their own argument
            with pytest.raises(exc, match=match):
                BUFFER_ENTRIES[entry](e)
    assert sys.getrefcount(e) == refs
    if mode != "null_obj":  # (no object: PyBuffer_Release has nobody to call)
        assert e.releases == e.exports  # every export given back exactly once
    ap.view(np.arange(3.0))  # no exception was left set


def test_a_failing_exporter_under_a_writable_request(hostile):
    # The writable path retries read-only to word its refusal: a silent failure both times is still
    # a SystemError naming the exporter, and a refusal with an error keeps the exporter's.
    out_silent = hostile.Exporter("fail_silently")
    with pytest.raises(SystemError, match="hostile_exporter.Exporter"):
        ops.add(np.ones(4), np.ones(4), out=out_silent)
    out_refused = hostile.Exporter("fail_with_error")
    with pytest.raises(BufferError, match="refused on purpose"):
        ops.add(np.ones(4), np.ones(4), out=out_refused)
    ok = hostile.Exporter("ok")
    ops.add(np.ones(4), np.ones(4), out=ok)
    assert np.asarray(ap.view(ok)).tolist() == [2.0] * 4
    assert ok.releases == ok.exports


# ---- types that name themselves after arrays read from their struct -------------------------------


@pytest.mark.parametrize("n_slots", [2, 4, 8])
def test_a_python_class_named_numpy_ndarray_is_not_read_as_a_numpy_struct(n_slots):
    # A class statement may call itself numpy.ndarray, export a buffer (a bytearray subclass) and
    # carry __slots__ up to the size of NumPy's struct: its instances hold no such fields, and the
    # bridge must take their buffer, not read them as ndarrays.
    slots = tuple(f"s{i}" for i in range(n_slots))
    forged = type("numpy.ndarray", (bytearray,), {"__slots__": slots, "__module__": "numpy"})
    x = forged(b"abcd")
    for name in slots:
        setattr(x, name, 12345)
    v = ap.view(x)
    assert (v.shape, v.dtype) == ((4,), "uint8")
    assert np.asarray(v).tolist() == [97, 98, 99, 100]
    assert _core._acquire_protocol(x) == "buffer"


# ---- a forged DLPack exchange-API table -------------------------------------------------------


FORGED_TABLE_SCRIPT = r"""
import arrayport as ap, sys
name, value = sys.argv[1], sys.argv[2]
P = type("P", (), {name: int(value) if value.isdigit() else None})
for call in (lambda: ap.view(P()), lambda: ap.asarray(P()), lambda: ap.ops.add(P(), 1)):
    try:
        call()
    except TypeError as e:
        print("TypeError:", e)
"""


@pytest.mark.parametrize("name", ["__dlpack_c_exchange_api__", "__c_dlpack_exchange_api__"])
@pytest.mark.parametrize("value", ["16", "0", "none"])
def test_a_python_class_with_an_int_exchange_table_is_not_read_as_one(name, value):
    # DLPack 1.3's attribute holds a capsule; 1.2's int address is taken only from types made in
    # C: an int a class statement wrote there is no table, never an address to read (a segfault).
    r = subprocess.run([sys.executable, "-c", FORGED_TABLE_SCRIPT, name, value],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3 and all("which offers no array protocol" in line or "expected" in line
                                   for line in lines), r.stdout


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes (PEP 678) are Python 3.11's")
def test_a_producers_own_error_carries_a_note_naming_the_argument():
    # The producer's exception stands as it raised it; a note says which argument and which call.
    class Borrowed:  # arrayport's own exchange table on a type whose objects are no Arrays
        __dlpack_c_exchange_api__ = ap.Array.__dlpack_c_exchange_api__

    with pytest.raises(TypeError, match="expected an arrayport.Array, got") as info:
        ap.ops.add(Borrowed(), 1)
    assert any(note.startswith("add: argument 'x1': raised by the exchange API's")
               and note.endswith("Borrowed") for note in info.value.__notes__), info.value.__notes__
