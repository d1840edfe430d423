"""Statements: branches, let bindings, asserts, while loops, evaluate, attributes, scoped
allocations."""

from __future__ import annotations

import numpy as np

from corpus import Case
from tilewright.script import tir as T


@T.prim_func
def if_elif_else(A: T.Buffer((8,), "float32")):
    for i in range(8):
        if i < 2:
            A[i] = T.float32(0)
        elif i < 5:
            A[i] = A[i] * T.float32(2)
        else:
            A[i] = A[i] + T.float32(1)


def _if_elif_else(a):
    a[:2] = 0
    a[2:5] *= 2
    a[5:] += 1


@T.prim_func
def nested_ifs(A: T.Buffer((8,), "int32")):
    for i in range(8):
        if i % 2 == 0:
            if i > 3:
                A[i] = 1
        else:
            A[i] = 2


def _nested_ifs(a):
    a[4::2] = 1
    a[1::2] = 2


@T.prim_func
def annotated_let(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        x: T.float32 = A[i] * T.float32(2)
        y: T.float32 = x + T.float32(1)
        B[i] = x * y


def _annotated_let(a, b):
    x = a * 2
    b[:] = x * (x + 1)


@T.prim_func
def untyped_let(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        j = 7 - i
        B[i] = A[j]


def _untyped_let(a, b):
    b[:] = a[::-1]


@T.prim_func
def with_let(A: T.Buffer((8,), "int32")):
    x = T.int32()
    for i in range(8):
        with T.let(x, i * 2):
            A[i] = x
        A[i] = A[i] + 1


def _with_let(a):
    a[:] = np.arange(8) * 2 + 1


@T.prim_func
def let_stmt_frame(A: T.Buffer((8,), "int32")):
    for i in range(8):
        with T.LetStmt(i * i) as sq:
            A[i] = sq + 1
        A[i] = A[i] * 2


def _let_stmt_frame(a):
    a[:] = (np.arange(8) ** 2 + 1) * 2


@T.prim_func
def let_stmt_declared_var(A: T.Buffer((8,), "int32")):
    v = T.int32()
    for i in range(8):
        with T.LetStmt(i + 3, var=v):
            A[i] = v * v
        A[i] = A[i] - 1


def _let_stmt_declared_var(a):
    a[:] = (np.arange(8) + 3) ** 2 - 1


@T.prim_func
def let_new_variable(A: T.Buffer((8,), "int32")):
    for i in range(8):
        with T.let(T.int32(), i + i) as twice:
            A[i] = twice * 5
        A[i] = A[i] + 2


def _let_new_variable(a):
    a[:] = np.arange(8) * 10 + 2


@T.prim_func
def assert_statement(A: T.Buffer((8,), "float32"), n: T.int32):
    assert n > 0, "n must be positive"
    for i in range(8):
        A[i] = A[i] * T.Cast("float32", n)


def _assert_statement(a, n):
    a *= n


@T.prim_func
def assert_frame(A: T.Buffer((8,), "float32"), n: T.int32):
    with T.Assert(n <= 8, "n is at most 8"):
        for i in range(n):
            A[i] = T.float32(0)
    A[7] = T.float32(7)


def _assert_frame(a, n):
    a[:n] = 0
    a[7] = 7


@T.prim_func
def while_loop(A: T.Buffer((8,), "int32")):
    k = T.alloc_buffer((1,), "int32", scope="local")
    k[0] = 0
    while k[0] < 8:
        A[k[0]] = k[0] * k[0]
        k[0] = k[0] + 1


def _while_loop(a):
    a[:] = np.arange(8) ** 2


@T.prim_func
def while_collatz(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    x = T.alloc_buffer((1,), "int32", scope="local")
    for i in range(8):
        x[0] = A[i] + 1
        B[i] = 0
        while x[0] != 1:
            x[0] = T.Select(x[0] % 2 == 0, x[0] // 2, x[0] * 3 + 1)
            B[i] = B[i] + 1


def _while_collatz(a, b):
    for i, v in enumerate(a + 1):
        steps = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            steps += 1
        b[i] = steps


@T.prim_func
def evaluate_nothing(A: T.Buffer((4,), "float32")):
    T.evaluate(0)
    for i in range(4):
        A[i] = T.float32(3)


def _evaluate_nothing(a):
    a[:] = 3


@T.prim_func
def attr_statement(A: T.Buffer((4,), "float32")):
    with T.attr(0, "pragma_note", 1):
        for i in range(4):
            A[i] = A[i] + T.float32(1)


def _attr_statement(a):
    a += 1


@T.prim_func
def bare_attr(A: T.Buffer((4,), "float32")):
    T.attr(A.data, "storage_alignment", 64)
    for i in range(4):
        A[i] = T.float32(2)


def _bare_attr(a):
    a[:] = 2


@T.prim_func
def decl_buffer_rest(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    tmp = T.decl_buffer((8,), "float32", scope="local")
    for i in range(8):
        tmp[i] = A[i] * T.float32(3)
    for i in range(8):
        B[i] = tmp[7 - i]


def _decl_buffer_rest(a, b):
    b[:] = (a * 3)[::-1]


@T.prim_func
def decl_buffer_scoped(A: T.Buffer((8,), "float32")):
    with T.decl_buffer((4,), "float32") as half:
        for i in range(4):
            half[i] = A[i + 4]
        for i in range(4):
            A[i + 4] = A[i]
            A[i] = half[i]
    A[0] = A[0] + T.float32(1)


def _decl_buffer_scoped(a):
    a[:] = np.concatenate([a[4:], a[:4]])
    a[0] += 1


@T.prim_func
def allocate_and_view(A: T.Buffer((8,), "float32")):
    buf = T.allocate([8], "float32", "global")
    B = T.Buffer((8,), data=buf)
    for i in range(8):
        B[i] = A[i] + T.float32(1)
    for i in range(8):
        A[i] = B[i] * B[i]


def _allocate_and_view(a):
    a[:] = (a + 1) ** 2


@T.prim_func
def pass_statement(A: T.Buffer((4,), "float32")):
    for i in range(4):
        if i == 2:
            pass
        else:
            A[i] = T.float32(0)


def _pass_statement(a):
    a[[0, 1, 3]] = 0


CASES = [
    Case(if_elif_else, _if_elif_else),
    Case(nested_ifs, _nested_ifs),
    Case(annotated_let, _annotated_let),
    Case(untyped_let, _untyped_let),
    Case(with_let, _with_let),
    Case(let_stmt_frame, _let_stmt_frame),
    Case(let_stmt_declared_var, _let_stmt_declared_var),
    Case(let_new_variable, _let_new_variable),
    Case(assert_statement, _assert_statement, scalars={"n": 3}),
    Case(assert_frame, _assert_frame, scalars={"n": 5}),
    Case(while_loop, _while_loop),
    Case(while_collatz, _while_collatz),
    Case(evaluate_nothing, _evaluate_nothing),
    Case(attr_statement, _attr_statement),
    Case(bare_attr, _bare_attr),
    Case(decl_buffer_rest, _decl_buffer_rest),
    Case(decl_buffer_scoped, _decl_buffer_scoped),
    Case(allocate_and_view, _allocate_and_view),
    Case(pass_statement, _pass_statement),
]
