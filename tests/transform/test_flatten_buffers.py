from __future__ import annotations

import numpy as np
import pytest
from evaluator import run

from tilewright.ir import (
    Allocate,
    BufferLoad,
    BufferStore,
    ForKind,
    PrimFunc,
    Ramp,
    Var,
    assert_structural_equal,
    decl_buffer,
    dtype,
    seq,
)
from tilewright.transform import flatten_buffers, lower_blocks, lower_init_block
from tilewright.transform.flatten_buffers import element_strides, flat_buffer, flat_index

from .programs import ALL, arg, assert_passes_preserve, const, grid, loop, store, var


def _func(args, body):
    return PrimFunc(tuple(v for v, _ in args), body, tuple(args))


def test_two_dimensional_accesses_become_row_major_offsets():
    args = [arg("A", (8, 12)), arg("C", (8, 12))]
    (_, a), (_, c) = args
    i, j = var("i"), var("j")
    got = flatten_buffers(_func(args, grid([i, j], [8, 12], store(c, a[i, j] + 1.0, i, j))))
    a1 = decl_buffer((96,), "float32", "A", data=a.data)
    c1 = decl_buffer((96,), "float32", "C", data=c.data)
    expected = _func(args, grid([i, j], [8, 12], store(c1, a1[i * 12 + j] + 1.0, i * 12 + j)))
    assert_structural_equal(got, expected)


def test_flat_buffers_share_data_and_buffer_map_keeps_nd_buffers():
    args = [arg("A", (8, 12)), arg("C", (8, 12))]
    (_, a), (_, c) = args
    i, j = var("i"), var("j")
    func = _func(args, grid([i, j], [8, 12], store(c, a[i, j], i, j)))
    got = flatten_buffers(func)
    assert got.buffer_map is func.buffer_map and got.params is func.params
    st = got.body.body.body
    assert st.buffer.data is c.data and st.value.buffer.data is a.data
    assert st.buffer.shape[0].value == 96 and len(st.indices) == 1


def test_three_dimensional_strides_fold_constants():
    buf = decl_buffer((4, 8, 2), "float32", "X")
    assert [s.value for s in element_strides(buf)] == [16, 2, 1]
    i, j, k = var("i"), var("j"), var("k")
    assert_structural_equal(flat_index(buf, (i, j, k)), i * 16 + j * 2 + k)


def test_symbolic_shape_gives_symbolic_strides():
    n = Var("n", dtype("int32"))
    buf = decl_buffer((4, n), "float32", "X")
    i, j = var("i"), var("j")
    assert_structural_equal(flat_index(buf, (i, j)), i * n + j)
    assert_structural_equal(flat_buffer(buf).shape[0], const(4) * n)


def test_explicit_strides_and_elem_offset_are_used():
    buf = decl_buffer((4, 4), "float32", "X", strides=(5, 1), elem_offset=3)
    i, j = var("i"), var("j")
    assert_structural_equal(flat_index(buf, (i, j)), i * 5 + j + 3)
    flat = flat_buffer(buf)
    assert flat.shape[0].value == 20 and flat.strides == () and flat.elem_offset.value == 0


def test_ramp_in_last_dimension_stays_a_ramp():
    args = [arg("A", (4, 8)), arg("C", (4, 8))]
    (_, a), (_, c) = args
    i = var("i")
    lanes = Ramp(const(0), const(1), 8)
    func = _func(args, loop(i, 4, store(c, a[i, lanes] * 2.0, i, lanes)))
    got = flatten_buffers(func)
    a1 = decl_buffer((32,), "float32", "A", data=a.data)
    c1 = decl_buffer((32,), "float32", "C", data=c.data)
    flat = Ramp(i * 8 + 0, const(1), 8)
    expected = _func(args, loop(i, 4, store(c1, a1[flat] * 2.0, flat)))
    assert_structural_equal(got, expected)
    x = np.arange(32, dtype="float32").reshape(4, 8)
    np.testing.assert_array_equal(run(got, x, np.zeros_like(x))[1], x * 2)
    np.testing.assert_array_equal(run(func, x, np.zeros_like(x))[1], x * 2)


def test_ramp_in_outer_dimension_is_scaled_by_its_stride():
    buf = decl_buffer((4, 8), "float32", "X")
    j = var("j")
    got = flat_index(buf, (Ramp(const(0), const(1), 4), j))
    assert_structural_equal(got, Ramp(j + 0, const(8), 4))


def test_allocate_becomes_flat_and_padded_strides_are_respected():
    args = [arg("A", (4, 4)), arg("C", (4, 4))]
    (_, a), (_, c) = args
    tmp = decl_buffer((4, 4), "float32", "T", "local", strides=(5, 1))
    i, j, i2, j2 = var("i"), var("j"), var("i"), var("j")
    body = Allocate(
        tmp,
        seq(
            grid([i, j], [4, 4], store(tmp, a[i, j] + 1.0, i, j)),
            grid([i2, j2], [4, 4], store(c, tmp[i2, j2], i2, j2)),
        ),
    )
    func = _func(args, body)
    got = flatten_buffers(func)
    assert got.body.buffer.shape[0].value == 20 and got.body.buffer.data is tmp.data
    x = np.arange(16, dtype="float32").reshape(4, 4)
    np.testing.assert_array_equal(run(got, x, np.zeros_like(x))[1], x + 1)


def test_one_dimensional_compact_buffer_is_kept():
    args = [arg("A", (8,))]
    (_, a) = args[0]
    i = var("i")
    func = _func(args, loop(i, 8, store(a, a[i] + 1.0, i), ForKind.VECTORIZED))
    assert flatten_buffers(func) is func


def test_zero_dimensional_buffer_gets_one_element():
    x = decl_buffer((), "float32", "x", "local")
    args = [arg("A", (1,))]
    (_, a) = args[0]
    body = Allocate(x, seq(BufferStore(x, const(2.0), ()), store(a, BufferLoad(x, ()), const(0))))
    got = flatten_buffers(_func(args, body))
    assert got.body.buffer.shape[0].value == 1
    np.testing.assert_array_equal(run(got, np.zeros(1, "float32"))[0], [2.0])


def test_wrong_index_count_is_rejected():
    buf = decl_buffer((4, 8), "float32", "X")
    with pytest.raises(ValueError, match="buffer X has 2 dimensions but is indexed with 1"):
        flat_index(buf, (var("i"),))


@pytest.mark.parametrize("name", sorted(ALL))
def test_numeric_results_unchanged(name):
    assert_passes_preserve(ALL[name](), [lower_init_block, lower_blocks, flatten_buffers])


def test_remaining_block_is_rejected():
    with pytest.raises(ValueError, match="block 'root' is still present; run lower_blocks first"):
        flatten_buffers(ALL["vector_add"]().func)
