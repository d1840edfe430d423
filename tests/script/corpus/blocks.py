"""Blocks: iterators in every spelling, predicates, explicit regions, inits, annotations,
opaque blocks with ``match_buffer``, nesting and the explicit root block."""

from __future__ import annotations

import numpy as np

from corpus import Case
from tilewright.script import tir as T


@T.prim_func
def matmul(
    A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")
):
    T.func_attr({"global_symbol": "matmul", "tir.noalias": True})
    for i, j, k in T.grid(8, 8, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def _matmul(a, b, c):
    c[:] = a @ b


@T.prim_func
def split_bindings(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i_0, i_1 in T.grid(4, 4):
        with T.block("B"):
            vi = T.axis.spatial(16, i_0 * 4 + i_1)
            B[vi] = A[vi] * T.float32(2)


def _split_bindings(a, b):
    b[:] = a * 2


@T.prim_func
def fused_bindings(A: T.Buffer((4, 6), "float32"), B: T.Buffer((4, 6), "float32")):
    for fused in range(24):
        with T.block("B"):
            vi = T.axis.spatial(4, fused // 6)
            vj = T.axis.spatial(6, fused % 6)
            B[vi, vj] = A[vi, vj] + T.float32(1)


def _fused_bindings(a, b):
    b[:] = a + 1


@T.prim_func
def where_predicate(A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32")):
    for i_0, i_1 in T.grid(3, 4):
        with T.block("B"):
            vi = T.axis.spatial(10, i_0 * 4 + i_1)
            T.where(i_0 * 4 + i_1 < 10)
            B[vi] = A[vi] - T.float32(1)


def _where_predicate(a, b):
    b[:] = a - 1


@T.prim_func
def block_annotations(A: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("A"):
            vi = T.axis.spatial(8, i)
            T.reads(A[vi])
            T.writes(A[vi])
            T.block_attr({"meta_schedule.unroll_explicit": 16, "note": "annotated"})
            A[vi] = A[vi] * A[vi]


def _block_annotations(a):
    a *= a


@T.prim_func
def axis_shorthands(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 8):
        with T.block("B"):
            vi = T.axis.S(4, i)
            vk = T.axis.R(8, k)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


def _axis_shorthands(a, b):
    b[:] = a.sum(axis=1)


@T.prim_func
def axis_with_offset_domain(A: T.Buffer((8,), "float32")):
    for i in range(4):
        with T.block("A"):
            vi = T.axis.spatial((2, 6), i + 2)
            A[vi] = T.float32(0)


def _axis_with_offset_domain(a):
    a[2:6] = 0


@T.prim_func
def opaque_axis(A: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("A"):
            vi = T.axis.opaque(8, i)
            A[vi] = A[vi] + T.float32(vi)


def _opaque_axis(a):
    a += np.arange(8)


@T.prim_func
def opaque_block_match_buffer(A: T.Buffer((16,), "float32")):
    for i in range(4):
        with T.block(""):
            T.reads(A[i * 4 : i * 4 + 4])
            T.writes(A[i * 4 : i * 4 + 4])
            sub = T.match_buffer(A[i * 4 : i * 4 + 4], (4,))
            for j in range(4):
                sub[j] = sub[j] + T.float32(j)


def _opaque_block_match_buffer(a):
    a += np.tile(np.arange(4), 4)


@T.prim_func
def match_buffer_2d_region(A: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(2, 2):
        with T.block("tile"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vi * 4 : vi * 4 + 4, vj * 4 : vj * 4 + 4])
            T.writes(A[vi * 4 : vi * 4 + 4, vj * 4 : vj * 4 + 4])
            tile = T.match_buffer(
                A[vi * 4 : vi * 4 + 4, vj * 4 : vj * 4 + 4], (4, 4), offset_factor=1
            )
            for x, y in T.grid(4, 4):
                tile[x, y] = T.float32(vi * 2 + vj)


def _match_buffer_2d_region(a):
    a[:] = np.kron(np.arange(4).reshape(2, 2), np.ones((4, 4)))


@T.prim_func
def nested_blocks(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("outer"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi, 0:4])
            T.writes(B[vi])
            for j in range(4):
                with T.block("inner"):
                    vj = T.axis.reduce(4, j)
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + A[vi, vj]


def _nested_blocks(a, b):
    b[:] = a.sum(axis=1)


@T.prim_func
def explicit_root(A: T.Buffer((4,), "float32")):
    with T.block("root"):
        T.reads()
        T.writes()
        T.block_attr({"note": 1})
        for i in range(4):
            with T.block("A"):
                vi = T.axis.spatial(4, i)
                A[vi] = T.float32(5)


def _explicit_root(a):
    a[:] = 5


@T.prim_func
def sblock_spelling(A: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.sblock("A"):
            vi = T.axis.spatial(4, i)
            A[vi] = A[vi] + T.float32(2)


def _sblock_spelling(a):
    a += 2


@T.prim_func
def max_pool(A: T.Buffer((8,), "float32"), B: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 2):
        with T.block("pool"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.min_value("float32")
            B[vi] = T.max(B[vi], A[vi * 2 + vk])


def _max_pool(a, b):
    b[:] = a.reshape(4, 2).max(axis=1)


@T.prim_func
def argmax(
    A: T.Buffer((4, 8), "float32"), idx: T.Buffer((4,), "int32"), val: T.Buffer((4,), "float32")
):
    for i, k in T.grid(4, 8):
        with T.block("argmax"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                idx[vi] = -1
                val[vi] = T.min_value("float32")
            v_idx: T.int32 = T.Select(val[vi] >= A[vi, vk], idx[vi], vk)
            v_val: T.float32 = T.Select(val[vi] >= A[vi, vk], val[vi], A[vi, vk])
            idx[vi] = v_idx
            val[vi] = v_val


def _argmax(a, idx, val):
    idx[:] = a.argmax(axis=1)
    val[:] = a.max(axis=1)


@T.prim_func
def conv1d(
    A: T.Buffer((10,), "float32"), W: T.Buffer((3,), "float32"), B: T.Buffer((8,), "float32")
):
    for i, r in T.grid(8, 3):
        with T.block("conv"):
            vi, vr = T.axis.remap("SR", [i, r])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi + vr] * W[vr]


def _conv1d(a, w, b):
    b[:] = np.convolve(a, w[::-1], "valid")


@T.prim_func
def reduce_to_scalar(A: T.Buffer((8,), "float32"), S: T.Buffer((), "float32")):
    for k in range(8):
        with T.block("S"):
            vk = T.axis.reduce(8, k)
            with T.init():
                S[()] = T.float32(0)
            S[()] = S[()] + A[vk]


def _reduce_to_scalar(a, s):
    s[()] = a.sum()


@T.prim_func
def producer_consumer(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + T.float32(1)


def _producer_consumer(a, c):
    c[:] = a * 2 + 1


@T.prim_func
def int64_iterators(A: T.Buffer((T.int64(4), T.int64(4)), "float32")):
    for i, j in T.grid(T.int64(4), T.int64(4)):
        with T.block("A"):
            vi, vj = T.axis.remap("SS", [i, j])
            A[vi, vj] = A[vi, vj] + T.float32(1)


def _int64_iterators(a):
    a += 1


@T.prim_func
def scan_axis(A: T.Buffer((8,), "float32")):
    for i in range(7):
        with T.block("scan"):
            vi = T.axis.scan(7, i)
            A[vi + 1] = A[vi + 1] + A[vi]


def _scan_axis(a):
    a[:] = np.cumsum(a)


CASES = [
    Case(matmul, _matmul),
    Case(split_bindings, _split_bindings),
    Case(fused_bindings, _fused_bindings),
    Case(where_predicate, _where_predicate),
    Case(block_annotations, _block_annotations),
    Case(axis_shorthands, _axis_shorthands),
    Case(axis_with_offset_domain, _axis_with_offset_domain),
    Case(opaque_axis, _opaque_axis),
    Case(opaque_block_match_buffer, _opaque_block_match_buffer),
    Case(match_buffer_2d_region, _match_buffer_2d_region),
    Case(nested_blocks, _nested_blocks),
    Case(explicit_root, _explicit_root),
    Case(sblock_spelling, _sblock_spelling),
    Case(max_pool, _max_pool),
    Case(argmax, _argmax),
    Case(conv1d, _conv1d),
    Case(reduce_to_scalar, _reduce_to_scalar),
    Case(producer_consumer, _producer_consumer),
    Case(int64_iterators, _int64_iterators),
    Case(scan_axis, _scan_axis),
]
