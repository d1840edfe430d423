"""Host launch plans: launch dimensions evaluated from arguments; bad host bodies refused
when the plan is written (code generation), before anything runs."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilewright as tw
from tilewright.artifact import HostPlan, LaunchPlanError
from tilewright.codegen.host_plan import host_plan
from tilewright.codegen.signature import func_signature
from tilewright.driver import build_lowered
from tilewright.ir import BufferStore, IntImm, LetStmt, StringImm, Var, dtype, intrinsics, op
from tilewright.runtime import check_arguments

sys.path.insert(0, str(Path(__file__).parents[1] / "codegen"))
from gpu_kernels import symbolic_add, vector_add

I32 = dtype("int32")


class FakeCudaTensor:
    """What torch and cupy expose for a CUDA tensor, without a GPU."""

    def __init__(self, shape, typestr="<f4", strides=None, readonly=False):
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (4096, readonly),
            "strides": strides,
            "version": 3,
        }


def _value_of(expr):
    """``expr(n)`` with the host function's argument ``n`` = -7, through a written plan."""
    n = Var("n", I32)
    value = expr(n)
    x = Var("x", value.dtype)
    launch = intrinsics.LAUNCH_KERNEL.stmt(StringImm("k"), *(IntImm(1, I32),) * 7, x)
    func = tw.ir.PrimFunc((n,), LetStmt(x, value, launch))
    (result,) = host_plan("f", func).launches([-7])
    return result.args[0]


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        (lambda n: op.floordiv(n, 2), -4),
        (lambda n: op.floormod(n, 2), 1),
        (lambda n: op.truncdiv(n, 2), -3),  # C division rounds toward zero
        (lambda n: op.truncmod(n, 2), -1),
        (lambda n: op.max_value(n, IntImm(3, I32)) + 1, 4),
        (lambda n: op.select(n < 0, IntImm(1, I32), IntImm(2, I32)), 1),
        (lambda n: op.if_then_else(n > 0, IntImm(1, I32), n * 3), -21),
    ],
)
def test_plan_expressions_follow_the_ir_semantics(expr, value):
    assert _value_of(expr) == value


def test_unbound_variable_is_refused_when_the_plan_is_written():
    launch = intrinsics.LAUNCH_KERNEL.stmt(StringImm("k"), *(IntImm(1, I32),) * 7, Var("m", I32))
    with pytest.raises(LaunchPlanError, match="host function f: variable m is used but not bound"):
        host_plan("f", tw.ir.PrimFunc((), launch))


def test_plan_round_trips_through_json():
    plan = host_plan("main", symbolic_add()["main"])
    assert HostPlan.from_json(plan.to_json()) == plan


def test_symbolic_grid_is_computed_from_the_shape():
    mod = symbolic_add()
    program = host_plan("main", mod["main"])
    sig = func_signature("main", mod["main"])
    a = FakeCudaTensor((1000,))
    values = check_arguments(sig, (a, FakeCudaTensor((1000,)), 1.5), tw.cuda(0))
    (launch,) = program.launches(values)
    assert launch.kernel == "main_kernel"
    assert launch.grid == (16, 1, 1) and launch.block == (64, 1, 1)
    assert launch.args[0] is a and launch.args[2:] == (1000, 1.5)


def test_cuda_array_interface_tensors_are_checked():
    # The module's signature knows which buffers the kernels write (the host body writes none).
    sig = build_lowered(vector_add("metal"), "metal").signatures["main"]
    assert [p.written for p in sig.params] == [False, False, True]
    good = FakeCudaTensor((1024,))
    values = check_arguments(sig, (good, good, good), tw.cuda(0))
    assert values == [good, good, good]
    with pytest.raises(TypeError, match="argument B has dtype float16, expected float32"):
        check_arguments(sig, (good, FakeCudaTensor((1024,), "<f2"), good), tw.cuda(0))
    with pytest.raises(ValueError, match="argument C must be C-contiguous"):
        check_arguments(sig, (good, good, FakeCudaTensor((1024,), strides=(8,))), tw.cuda(0))
    with pytest.raises(ValueError, match="argument C is read-only but the kernel writes it"):
        check_arguments(sig, (good, good, FakeCudaTensor((1024,), readonly=True)), tw.cuda(0))
    with pytest.raises(ValueError, match=r"argument A is on cuda\(0\) but the kernel runs on cpu"):
        check_arguments(sig, (good, good, good), tw.cpu(0))


def test_host_body_must_only_launch():
    mod = vector_add()
    A = mod["main"].buffer_of(mod["main"].params[0])
    bad = mod["main"].with_body(BufferStore(A, op.const(0.0, "float32"), (IntImm(0, I32),)))
    with pytest.raises(LaunchPlanError, match="host function main: BufferStore cannot run"):
        host_plan("main", bad)


def test_launch_of_an_unknown_kernel_is_refused():
    mod = vector_add("opencl")
    renamed = mod["main_kernel"].with_attr("global_symbol", "other_kernel")
    with pytest.raises(ValueError, match="launches main_kernel, which the module does not define"):
        build_lowered(mod.with_function("main_kernel", renamed), "opencl")


def test_a_lowered_module_builds_for_metal_as_source_only():
    rt_mod = build_lowered(vector_add("metal"), "metal")
    assert "kernel void main_kernel(" in rt_mod.imported_modules[0].get_source()
    assert list(rt_mod.build_times) == ["codegen", "compile", "load"]
    with pytest.raises(RuntimeError, match="metal kernels cannot run here"):
        rt_mod["main"](*(np.ones(1024, "float32"),) * 3)


class FakeTorchTensor:
    """The attributes of a torch CUDA tensor that the argument checks read."""

    __module__ = "torch.fake"

    def __init__(self, shape, dtype="torch.float32", contiguous=True):
        self.shape, self.dtype, self._contiguous = shape, dtype, contiguous

    def is_contiguous(self):
        return self._contiguous

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        raise AssertionError("a CUDA tensor is never read on the host")


def test_torch_tensors_are_read_through_their_attributes():
    sig = build_lowered(vector_add("metal"), "metal").signatures["main"]
    good = FakeTorchTensor((1024,))
    assert check_arguments(sig, (good, good, good), tw.cuda(0)) == [good, good, good]
    with pytest.raises(TypeError, match="argument A has dtype float16, expected float32"):
        check_arguments(sig, (FakeTorchTensor((1024,), "torch.float16"), good, good), tw.cuda(0))
    with pytest.raises(ValueError, match="argument B must be C-contiguous"):
        check_arguments(sig, (good, FakeTorchTensor((1024,), contiguous=False), good), tw.cuda(0))
