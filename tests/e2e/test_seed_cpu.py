"""Issue 2's end-to-end path on the seed notebook's unscheduled programs, in the notebook's 2022
spelling and in today's: parse, print, re-parse to an equal module, build for the CPU ("c" and
its alias "llvm"), run on numpy arrays and match numpy. The programs: tests/seed_notebook.py."""

from __future__ import annotations

import numpy as np
import pytest
from seed_notebook import (
    MatmulToday,
    MyModuleMatmul,
    MyModuleVecAdd,
    MyModuleWindowSum,
    VecAddToday,
    WindowSumToday,
)

import tilewright as tvm
from tilewright.ir import assert_structural_equal

rng = np.random.default_rng(2)


def _vec_add():
    a, b = rng.random(1024, dtype=np.float32), rng.random(1024, dtype=np.float32)
    return [a, b, np.full(1024, np.nan, np.float32)], lambda: a + b


def _window_sum():
    a = rng.random(1027, dtype=np.float32)
    return [a, np.full(1024, np.nan, np.float32)], lambda: a[:1024] + a[1:1025] + a[2:1026]


def _matmul():
    a = rng.random((1024, 1024), dtype=np.float32)
    b = rng.random((1024, 1024), dtype=np.float32)
    out = np.full((1024, 1024), np.nan, np.float32)
    return [a, b, out], lambda: a.astype(np.float64) @ b.astype(np.float64)


SEEDS = {
    "vector_add": (MyModuleVecAdd, VecAddToday, _vec_add),
    "window_sum": (MyModuleWindowSum, WindowSumToday, _window_sum),
    "matmul": (MyModuleMatmul, MatmulToday, _matmul),
}


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_both_spellings_print_reparse_and_agree(name):
    old, new, _ = SEEDS[name]
    assert_structural_equal(old, new)
    text = old.script()
    again = tvm.script.from_source(text)
    assert_structural_equal(again, old)
    assert again.script() == text


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_builds_for_the_cpu_and_matches_numpy(name):
    old, new, make = SEEDS[name]
    lib_c = tvm.build(old, target="c")
    lib_llvm = tvm.build(new, target="llvm")
    # Equal programs give the same C, so the second build comes from the compile cache.
    assert lib_llvm.get_source() == lib_c.get_source()
    args, expected = make()
    if name == "matmul":
        # The unscheduled 1024^3 loop nest takes seconds: one run, on numpy arrays.
        lib_c["main"](*args)
        np.testing.assert_allclose(args[-1], expected(), rtol=1e-5)
        return
    arrays = [tvm.nd.array(x, tvm.cpu(0)) for x in args]
    lib_c["main"](*arrays)
    np.testing.assert_allclose(arrays[-1].numpy(), expected(), rtol=1e-6)
    lib_llvm["main"](*args)
    np.testing.assert_allclose(args[-1], expected(), rtol=1e-6)
