"""T.call_extern: parsed and printed back, written in C as a call of the function whose source
a ``pragma_import_c`` loop annotation carries, and run."""

from __future__ import annotations

import numpy as np
import pytest

import tilewright as tw
from tilewright.ir import assert_structural_equal
from tilewright.script import tir as T
from tilewright.tir import Schedule

SOURCE = """
static int scale_one(float* out, const float* in, int offset, float scale) {
  out[offset] = in[offset] * scale + 1.0f;
  return 0;
}
"""


@T.prim_func
def scaled(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            T.reads(A[vi])
            T.writes(B[vi])
            T.evaluate(T.call_extern("int32", "scale_one", B.data, A.data, vi, T.float32(3)))


def test_call_extern_prints_and_parses_back() -> None:
    text = scaled.script()
    assert 'T.call_extern("int32", "scale_one", B.data, A.data, vi, T.float32(3.0))' in text
    assert_structural_equal(tw.script.from_source(text), scaled)


def test_the_imported_c_is_called_and_computes() -> None:
    sch = Schedule(scaled)
    (i,) = sch.get_loops("B")
    sch.annotate(i, "pragma_import_c", SOURCE)
    rt = tw.build(sch.mod, target="c")
    source = rt.get_source()
    assert source.count("static int scale_one(") == 1
    assert "scale_one(B, A, i, 3.0f);" in source
    a = np.arange(8, dtype="float32")
    b = np.zeros(8, "float32")
    rt["main"](a, b)
    np.testing.assert_allclose(b, a * 3 + 1)
    # The function may write what it is handed: both arrays count as written, so a
    # read-only array is refused before the call.
    assert [p.written for p in rt["main"].signature.params] == [True, True]
    a.setflags(write=False)
    with pytest.raises(ValueError, match="argument A is read-only but the kernel writes it"):
        rt["main"](a, b)


def test_a_function_name_must_be_a_c_identifier() -> None:
    with pytest.raises(TypeError, match="expected a C function name"):
        T.call_extern("int32", "not a name", 1)
