from __future__ import annotations

import pytest

from tilewright.ir import Allocate, PrimFunc, decl_buffer, seq
from tilewright.transform import (
    LoweredFormError,
    flatten_buffers,
    lower_blocks,
    lower_init_block,
    verify_lowered,
)

from .programs import ALL, arg, const, loop, store, var


def _func(args, body):
    return PrimFunc(tuple(v for v, _ in args), body, tuple(args))


@pytest.mark.parametrize("name", sorted(ALL))
def test_lowered_programs_pass(name):
    func = flatten_buffers(lower_blocks(lower_init_block(ALL[name]().func)))
    assert verify_lowered(func) is func


def test_remaining_block_is_reported():
    with pytest.raises(LoweredFormError, match="block 'root' is still present after lowering"):
        verify_lowered(ALL["vector_add"]().func)


def test_multi_dimensional_store_is_reported():
    args = [arg("A", (4, 4))]
    (_, a) = args[0]
    i = var("i")
    func = _func(args, loop(i, 4, store(a, 0.0, i, i)))
    with pytest.raises(LoweredFormError, match="store to buffer A has 2 indices on a 2-d buffer"):
        verify_lowered(func)


def test_multi_dimensional_allocate_is_reported():
    args = [arg("A", (4,))]
    (_, a) = args[0]
    tmp = decl_buffer((2, 2), "float32", "T")
    func = _func(args, Allocate(tmp, store(a, 0.0, const(0))))
    with pytest.raises(LoweredFormError, match="allocation of buffer T is 2-d, not flat"):
        verify_lowered(func)


def test_undefined_variable_is_reported():
    args = [arg("A", (4,))]
    (_, a) = args[0]
    stray = var("vi")
    func = _func(args, loop(var("i"), 4, store(a, 0.0, stray)))
    with pytest.raises(LoweredFormError, match="variable 'vi' is used but not defined"):
        verify_lowered(func)


def test_loop_variable_used_after_its_loop_is_reported():
    args = [arg("A", (4,))]
    (_, a) = args[0]
    i = var("i")
    func = _func(args, seq(loop(i, 4, store(a, 0.0, i)), store(a, 1.0, i)))
    with pytest.raises(LoweredFormError, match="variable 'i' is used but not defined"):
        verify_lowered(func)


def test_load_from_unallocated_buffer_is_reported():
    args = [arg("A", (4,))]
    (_, a) = args[0]
    tmp = decl_buffer((4,), "float32", "T")
    i = var("i")
    func = _func(args, loop(i, 4, store(a, tmp[i], i)))
    with pytest.raises(LoweredFormError, match="variable 'T' is used but not defined"):
        verify_lowered(func)
