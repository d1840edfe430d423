"""TVM names of the build, runtime, target, tir-expression and meta_schedule API resolve here
and do what TVM's do (docs/tvm-compat.md lists them)."""

from __future__ import annotations

import numpy as np
import pytest

import tilewright as tvm
from tilewright import meta_schedule as ms
from tilewright.ir import Var, op
from tilewright.script import tir as T


@T.prim_func
def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] + T.float32(1)


@pytest.mark.parametrize("build", [tvm.compile, tvm.build, tvm.tir.build])
def test_compile_and_build_names_build_a_runnable_module(build) -> None:
    f = build(add_one, target="c")
    a = np.arange(8, dtype="float32")
    b = np.zeros(8, dtype="float32")
    f(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_tir_math_and_call_builders() -> None:
    x = Var("x", op.float32)
    assert str(tvm.tir.exp(x)) == "T.exp(x)"
    assert str(tvm.tir.sqrt(x)) == "T.sqrt(x)"
    assert str(tvm.tir.pow(x, 2.0)) == "T.pow(x, T.float32(2.0))"
    i = Var("i", op.int32)
    assert tvm.tir.exp(i).dtype == op.float32  # integers promoted, as in TVM
    assert (
        str(tvm.tir.call_intrin("int32", "tw.sync_threads"))
        == 'T.call_intrin("int32", "tw.sync_threads")'
    )
    assert str(tvm.tir.call_extern("float32", "f", x)) == 'T.call_extern("float32", "f", x)'
    with pytest.raises(KeyError, match="no intrinsic named 'no_such'"):
        tvm.tir.call_intrin("int32", "no_such")


def test_target_cuda_helper() -> None:
    target = tvm.target.cuda(arch="sm_90")
    assert str(target) == "cuda -arch=sm_90" and target.arch == "sm_90"
    assert str(tvm.target.cuda()) == "cuda"


@pytest.mark.parametrize(
    ("module", "base", "alias"),
    [
        (ms.builder, "Builder", "PyBuilder"),
        (ms.runner, "Runner", "PyRunner"),
        (ms.cost_model, "CostModel", "PyCostModel"),
        (ms.search_strategy, "SearchStrategy", "PySearchStrategy"),
        (ms.schedule_rule, "ScheduleRule", "PyScheduleRule"),
        (ms.postproc, "Postproc", "PyPostproc"),
        (ms.mutator, "Mutator", "PyMutator"),
        (ms.task_scheduler, "TaskScheduler", "PyTaskScheduler"),
        (ms.measure_callback, "MeasureCallback", "PyMeasureCallback"),
        (ms.space_generator, "SpaceGenerator", "PySpaceGenerator"),
        (ms.database, "Database", "PyDatabase"),
        (ms.feature_extractor, "FeatureExtractor", "PyFeatureExtractor"),
    ],
)
def test_meta_schedule_bases_and_their_py_spellings(module, base, alias) -> None:
    assert getattr(module, alias) is getattr(module, base)
    assert getattr(ms, base) is getattr(module, base)


def test_a_rule_subclassing_py_schedule_rule_runs_in_a_space() -> None:
    seen = []

    class Tag(ms.schedule_rule.PyScheduleRule):
        def _initialize_with_tune_context(self, context) -> None:
            pass

        def apply(self, sch, block):
            seen.append(sch.get(block).name)
            return [sch]

        def clone(self):
            return Tag()

    space = ms.space_generator.PostOrderApply(sch_rules=[Tag()], postprocs=[], mutator_probs={})
    context = ms.TuneContext(mod=add_one, target="c", space_generator=space)
    (sch,) = context.generate_design_space()
    assert seen == ["B", "root"] and sch.mod is not None  # every block, the root too
