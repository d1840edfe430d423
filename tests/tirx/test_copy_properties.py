"""Property test: any global -> shared -> global tile round trip lowers to loops that copy
exactly the region (numpy model), whichever variant dispatch picks."""

from __future__ import annotations

import numpy as np
from evaluator import run_kernel
from hypothesis import given, settings
from hypothesis import strategies as st

from tilewright.script import from_source
from tilewright.tirx.transform import LowerTIRx

PROGRAM = """
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx
from tilewright.tirx.layout import S

@T.prim_func
def main(A: T.Buffer(({R}, {C}), "{dtype}"), B: T.Buffer(({R}, {C}), "{dtype}")):
    T.device_entry()
    T.thread_id([{threads}])
    S_ = T.alloc_buffer(({r}, {c}), "{dtype}", scope="shared",
                        layout=T.TileLayout(S[({r}, {c}) : ({s0}, {s1})]))
    Tx.{scope}.copy(S_[0:{r}, 0:{c}], A[{i}:{i} + {r}, {j}:{j} + {c}])
    T.cuda.cta_sync()
    Tx.{scope}.copy(B[{i}:{i} + {r}, {j}:{j} + {c}], S_[0:{r}, 0:{c}])
"""


@st.composite
def copies(draw):
    r, c = draw(st.integers(1, 8)), draw(st.sampled_from([1, 3, 4, 8, 16, 32, 64]))
    big_r, big_c = r + draw(st.integers(0, 4)), c + draw(st.sampled_from([0, 4, 16]))
    transposed = draw(st.booleans())
    scope = draw(st.sampled_from(["thread", "warp", "cta"]))
    # The CTA is as big as the copy's scope: a thread's (a warp's) copy run by every thread
    # (warp) of a bigger CTA writes each element several times, a race the evaluator reports.
    threads = {"thread": 1, "warp": 32}.get(scope) or draw(st.sampled_from([32, 64, 128]))
    return {
        "R": big_r,
        "C": big_c,
        "r": r,
        "c": c,
        "i": draw(st.integers(0, big_r - r)),
        "j": draw(st.integers(0, big_c - c)),
        "s0": 1 if transposed else c,
        "s1": r if transposed else 1,
        "dtype": draw(st.sampled_from(["float32", "float16", "uint8"])),
        "threads": threads,
        "scope": scope,
    }


@settings(max_examples=40, deadline=None)
@given(copies())
def test_round_trip_copies_exactly_the_region(params):
    func = from_source(PROGRAM.format(**params))
    lower = LowerTIRx("cuda")
    mod = lower(func)
    size = params["r"] * params["c"]
    threads = {"thread": 1, "warp": 32, "cta": params["threads"]}[params["scope"]]
    expected = "gmem_smem" if size % threads == 0 else "scalar"
    assert {d.variant for d in lower.decisions} == {expected}
    shape = (params["R"], params["C"])
    a = (np.arange(shape[0] * shape[1]) % 97 + 1).reshape(shape).astype(params["dtype"])
    b = np.zeros_like(a)
    b = run_kernel(mod["main"], a, b).arrays[1]
    want = np.zeros_like(a)
    rows = slice(params["i"], params["i"] + params["r"])
    cols = slice(params["j"], params["j"] + params["c"])
    want[rows, cols] = a[rows, cols]
    np.testing.assert_array_equal(b, want)
