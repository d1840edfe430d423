from __future__ import annotations

import numpy as np
import pytest
from interpreter import run
from programs import ALL, assert_passes_preserve, grid, store, var

from tilewright import config
from tilewright.ir import (
    IfThenElse,
    IRModule,
    PrimFunc,
    assert_structural_equal,
    decl_buffer,
    op,
    seq,
)
from tilewright.transform import lower_module, stages

STAGE_NAMES = [
    "lower_init_block",
    "lower_blocks",
    "flatten_buffers",
    "simplify",
    "remove_no_op",
    "verify",
]


def test_stages_run_in_documented_order():
    assert [s.name for s in stages("c")] == STAGE_NAMES
    assert [s.name for s in stages("llvm")] == STAGE_NAMES


def test_unknown_target_kind_is_rejected():
    with pytest.raises(ValueError, match="no lowering pipeline for target kind 'vulkan'"):
        lower_module(IRModule({"main": ALL["vector_add"]().func}), "vulkan")


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_stage_preserves_results(name):
    assert_passes_preserve(ALL[name](), [s.run for s in stages("c")])


def test_matmul_lowers_to_the_expected_loop_nest():
    pytest.importorskip("tilewright.arith")
    func = ALL["matmul"]().func
    got = lower_module(IRModule({"main": func}))["main"]
    (_, a), (_, b), (_, c) = func.buffer_map
    a1, b1, c1 = (
        decl_buffer((n,), "float32", x.name, data=x.data) for x, n in ((a, 128), (b, 192), (c, 96))
    )
    i, j, k = var("i"), var("j"), var("k")
    body = seq(
        IfThenElse(op.eq(k, 0), store(c1, 0.0, i * 12 + j)),
        store(c1, c1[i * 12 + j] + a1[i * 16 + k] * b1[k * 12 + j], i * 12 + j),
    )
    expected = PrimFunc(func.params, grid([i, j, k], [8, 12, 16], body), func.buffer_map)
    assert_structural_equal(got, expected)


def test_params_and_buffer_map_are_kept():
    func = ALL["root_alloc"]().func
    got = lower_module(IRModule({"main": func}))["main"]
    assert got.params is func.params and got.buffer_map is func.buffer_map


def test_every_function_of_the_module_is_lowered():
    mod = IRModule({"add": ALL["vector_add"]().func, "mm": ALL["matmul"]().func})
    got = lower_module(mod)
    assert list(got) == ["add", "mm"]
    x = [np.ones((8, 16), "float32"), np.ones((16, 12), "float32"), np.zeros((8, 12), "float32")]
    np.testing.assert_array_equal(run(got["mm"], *x)[2], np.full((8, 12), 16.0, "float32"))


def test_dump_dir_gets_one_file_per_stage(tmp_path):
    mod = IRModule({"mm": ALL["matmul"]().func})
    lower_module(mod, "c", dump_dir=tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    expected = ["mm.00_input.txt"] + [f"mm.{n:02d}_{s}.txt" for n, s in enumerate(STAGE_NAMES, 1)]
    assert names == expected
    assert "T.init()" in (tmp_path / "mm.00_input.txt").read_text()
    assert "T.block" not in (tmp_path / "mm.02_lower_blocks.txt").read_text()


def test_dump_dir_defaults_to_config(tmp_path):
    with config.scope(dump_dir=tmp_path / "ir"):
        lower_module(IRModule({"main": ALL["vector_add"]().func}))
    assert (tmp_path / "ir" / "main.03_flatten_buffers.txt").exists()


def test_no_dump_without_dump_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with config.scope(dump_dir=None):
        lower_module(IRModule({"main": ALL["vector_add"]().func}))
    assert list(tmp_path.iterdir()) == []
