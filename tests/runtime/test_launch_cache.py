"""LaunchCache keys (no GPU needed): what a cached launch may reuse, and what it may not."""

from __future__ import annotations

import numpy as np

import tilewright as tw
from tilewright.artifact import FuncSignature, ParamSpec
from tilewright.runtime.cuda_runtime.launch_cache import LaunchCache

SIG = FuncSignature(
    name="main",
    symbol="main",
    params=(
        ParamSpec("A", "float32", ("n",), None, False, 16),
        ParamSpec("B", "float32", ("n",), None, True, 1),
        ParamSpec("x", "float32", None, None, False, 1),
    ),
    sym_vars=("n",),
)


def cache() -> LaunchCache:
    return LaunchCache(SIG, launcher=None)  # type: ignore[arg-type]  # keys only


def test_key_depends_on_shape_dtype_and_scalar_values_only():
    c = cache()
    a, b = tw.nd.array(np.ones(8, "float32")), tw.nd.array(np.zeros(8, "float32"))
    a2, b2 = tw.nd.array(np.ones(8, "float32")), tw.nd.array(np.zeros(8, "float32"))
    assert c.key((a, b, 0.5)) == c.key((a2, b2, 0.5))  # other arrays, same shapes
    assert c.key((a, b, 0.5)) != c.key((a, b, 0.25))  # a scalar value
    assert c.key((a, b, 1)) != c.key((a, b, True))  # int and bool differ
    longer = tw.nd.array(np.ones(9, "float32"))
    assert c.key((a, b, 0.5)) != c.key((longer, b, 0.5))
    as_double = tw.nd.array(np.ones(8, "float64"))
    assert c.key((a, b, 0.5)) != c.key((as_double, b, 0.5))


def test_arguments_without_a_key_take_the_checked_path():
    c = cache()
    a = tw.nd.array(np.ones(8, "float32"))
    assert c.key((np.ones(8, "float32"), a, 0.5)) is None  # numpy arrays are not keyed
    assert c.key((a, a)) is None  # wrong arity: the checked path names the problem
    assert c.key((a, a, np.float32(0.5))) is None  # numpy scalars: checked every time
    assert not c.launch((a, a, 0.5))  # nothing remembered yet
