"""The workload corpus: every program at its small sizes computes its numpy reference, in the
test evaluator and built for C, and prints and parses back to itself; at the default sizes
each builds the IR its shapes promise."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from evaluator import run

import tilewright as tw
from tilewright import config
from tilewright.demo import matmul_module
from tilewright.ir import Block, PrimFunc, assert_structural_equal, post_order_visit
from tilewright.meta_schedule.testing.workloads import WORKLOADS, Workload, param_shapes

NAMES = sorted(WORKLOADS)
needs_cc = pytest.mark.skipif(
    shutil.which(config.get().cc) is None, reason="no C compiler for the CPU target"
)


def _block_names(func: PrimFunc) -> list[str]:
    names: list[str] = []
    post_order_visit(func.body, lambda n: names.append(n.name) if isinstance(n, Block) else None)
    return [n for n in names if n != "root"]


def _loop_nest_iterations(func: PrimFunc) -> int:
    """The most iterations any block runs (the product of its loops' extents)."""
    most = 0

    def visit(n: object, extents: tuple[int, ...] = ()) -> None:
        nonlocal most
        for child in n.children() if hasattr(n, "children") else ():
            if isinstance(child, tw.ir.For):
                visit(child, (*extents, child.extent.value))
            elif isinstance(child, Block):
                if child.name != "root":
                    most = max(most, int(np.prod(extents, dtype=np.int64)))
                visit(child, extents)
            else:
                visit(child, extents)

    visit(func.body)
    return most


@pytest.mark.parametrize("name", NAMES)
def test_small_program_matches_numpy_in_the_evaluator(name: str) -> None:
    w = WORKLOADS[name]
    func = w.func(**w.small)
    args = w.inputs(np.random.default_rng(0), **w.small)
    assert np.isnan(args[-1]).all()
    expected = w.reference(*args)
    got = run(func, *args)
    assert len(got) == len(expected) == len(func.params)
    for param, g, e in zip(func.params, got, expected, strict=True):
        assert g.shape == e.shape, param.name
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4, err_msg=f"{name}: {param.name}")


@pytest.mark.parametrize("name", NAMES)
def test_print_parse_round_trip(name: str) -> None:
    w = WORKLOADS[name]
    func = w.func(**w.small)
    again = tw.script.from_source(func.script())
    assert_structural_equal(again, func)
    assert again.script() == func.script()


@needs_cc
@pytest.mark.parametrize("name", NAMES)
def test_small_program_built_for_c_matches_numpy(name: str) -> None:
    w = WORKLOADS[name]
    args = w.inputs(np.random.default_rng(1), **w.small)
    expected = w.reference(*args)
    arrays = [tw.nd.array(a.copy()) for a in args]
    tw.build(w.func(**w.small), target="c")["main"](*arrays)
    for got, e in zip(arrays, expected, strict=True):
        np.testing.assert_allclose(got.numpy(), e, rtol=1e-4, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("name", NAMES)
def test_small_sizes_are_small_and_flops_positive(name: str) -> None:
    w = WORKLOADS[name]
    assert 0 < _loop_nest_iterations(w.func(**w.small)) <= 5000
    assert w.flops(**w.small) > 0
    assert w.flops(**w.sizes) > w.flops(**w.small)


@pytest.mark.parametrize("name", NAMES)
def test_default_sizes_build_the_ir(name: str) -> None:
    w = WORKLOADS[name]
    func, shapes = w.instantiate()
    assert shapes == param_shapes(func)
    small_func, small_shapes = w.instantiate(small=True)
    assert len(shapes) == len(small_shapes) == len(func.params)
    assert _block_names(func) == _block_names(small_func)
    assert func.attr("global_symbol") == "main"
    assert shapes == DEFAULT_SHAPES[name]


DEFAULT_SHAPES = {
    "matmul": ((1024, 1024),) * 3,
    "vector_add": ((2**20,),) * 3,
    "window_sum": ((2**20 + 2,), (2**20,)),
    "matmul_bias_relu": ((1024, 1024), (1024, 1024), (1024,), (1024, 1024)),
    "batch_matmul": ((16, 512, 512),) * 3,
    "conv2d_nhwc": ((1, 56, 56, 64), (3, 3, 64, 64), (1, 56, 56, 64)),
    "depthwise_conv2d": ((1, 112, 112, 32), (3, 3, 32), (1, 112, 112, 32)),
    "softmax": ((4096, 4096),) * 2,
    "layer_norm": ((4096, 4096), (4096,), (4096,), (4096, 4096)),
    "transpose": ((4096, 4096),) * 2,
    "matmul_1000": ((1000, 1000),) * 3,
    "row_sum_127": ((4096, 127), (4096,)),
}

BLOCKS = {
    "matmul": ["C"],
    "vector_add": ["T_add"],
    "window_sum": ["B"],
    "matmul_bias_relu": ["matmul", "bias_add", "relu"],
    "batch_matmul": ["T_batch_matmul_NN"],
    "conv2d_nhwc": ["pad_temp", "conv2d_nhwc"],
    "depthwise_conv2d": ["PaddedInput", "DepthwiseConv2d"],
    "softmax": ["T_softmax_maxelem", "T_softmax_exp", "T_softmax_expsum", "T_softmax_norm"],
    "layer_norm": ["A_red_temp_v0", "A_red_temp_v1", "T_layer_norm"],
    "transpose": ["T_transpose"],
    "matmul_1000": ["C"],
    "row_sum_127": ["A_red"],
}


def test_the_table_holds_the_corpus() -> None:
    assert set(WORKLOADS) == set(DEFAULT_SHAPES) == set(BLOCKS)
    for name, w in WORKLOADS.items():
        assert w.name == name
        assert _block_names(w.func(**w.small)) == BLOCKS[name], name


def test_matmul_is_the_seed_notebooks() -> None:
    w = WORKLOADS["matmul"]
    assert_structural_equal(w.instantiate()[0], matmul_module(1024)["main"])


def test_odd_workloads_keep_extents_that_tiles_do_not_divide() -> None:
    assert all(v % 2 == 1 for v in WORKLOADS["matmul_1000"].small.values())
    assert WORKLOADS["matmul_1000"].sizes == {"m": 1000, "n": 1000, "k": 1000}
    assert WORKLOADS["row_sum_127"].small["n"] == WORKLOADS["row_sum_127"].sizes["n"] == 127


def test_inputs_are_float32_with_nan_outputs() -> None:
    w = WORKLOADS["layer_norm"]
    args = w.inputs(np.random.default_rng(0), m=3, n=5)
    assert [a.shape for a in args] == [(3, 5), (5,), (5,), (3, 5)]
    assert all(a.dtype == np.float32 for a in args)
    assert np.isfinite(np.concatenate([a.ravel() for a in args[:3]])).all()
    assert np.isnan(args[3]).all()


def test_an_unwritten_output_shows_as_nan() -> None:
    # A reference compared against a run that skips the program leaves NaN: the check can fail.
    w = WORKLOADS["vector_add"]
    args = w.inputs(np.random.default_rng(0), n=4)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(args[2], w.reference(*args)[2])


def test_wrong_size_names_are_refused() -> None:
    w: Workload = WORKLOADS["softmax"]
    with pytest.raises(TypeError, match=r"workload softmax takes sizes \['m', 'n'\], got \['k'\]"):
        w.inputs(np.random.default_rng(0), k=3)
