"""tw.build as one list of named stages: dumped, timed, and naming the stage in errors."""

from __future__ import annotations

import numpy as np
import pytest
from seed_notebook import Expected_1, MyModuleVecAdd
from tirx.test_lower_tirx import round_trip_kernel

import tilewright as tw
from tilewright import config
from tilewright.backend import lowering_stages
from tilewright.codegen import CodegenError
from tilewright.driver import build_lowered
from tilewright.ir import Evaluate, IRModule, PrimFunc, intrinsics
from tilewright.layout import S, TileLayout
from tilewright.target import Target

# The CPU pass list's own order is tested in tests/transform/test_pipeline.py.
CPU_PASSES = [stage.name for stage in lowering_stages("c")]


def test_every_stage_is_timed_in_order():
    rt_mod = tw.build(MyModuleVecAdd, "c")
    assert list(rt_mod.build_times) == [*CPU_PASSES, "codegen", "compile", "load"]
    assert all(seconds >= 0 for seconds in rt_mod.build_times.values())
    report = rt_mod.build_report()
    assert report.splitlines()[0].split() == ["stage", "ms", "share"]
    assert "lower_blocks" in report and report.splitlines()[-1].startswith("total")


def test_every_stage_is_dumped_the_tile_program_first(tmp_path):
    kernel = round_trip_kernel((32, 32), "float32", TileLayout(S[(32, 32)]))
    with config.scope(dump_dir=tmp_path):
        rt_mod = tw.build(kernel, "cuda")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names[:3] == [
        "main.00_input.txt",
        "main.01_lower_tirx.txt",
        "main.02_verify_bounds.txt",
    ]
    assert "Tx.warp.copy" in (tmp_path / "main.00_input.txt").read_text()
    assert "Tx." not in (tmp_path / "main.01_lower_tirx.txt").read_text()
    sources = [n for n in names if n.endswith(".cu")]
    assert len(sources) == 1
    assert (tmp_path / sources[0]).read_text() == rt_mod.imported_modules[0].get_source()
    last = len(lowering_stages("cuda")) + 1  # after the input and lower_tirx
    assert f"main_kernel.{last:02d}_verify_split.txt" in names  # dumped under their names
    assert next(iter(rt_mod.build_times)) == "lower_tirx"


def test_a_stage_error_keeps_its_type_and_names_the_stage():
    # A lowered function calling the tile layer's barrier, which no C printer spells.
    func = PrimFunc((), Evaluate(intrinsics.CTA_SYNC.call()))
    with pytest.raises(
        CodegenError, match=r"'tw\.cuda\.cta_sync' is not supported by the c"
    ) as info:
        build_lowered(IRModule({"main": func}), "c")
    assert info.value.__notes__ == ["while building 'main', stage codegen"]


def test_the_target_reaches_the_passes_explicitly():
    # Lowering for a target with 64 threads per block refuses a 128-thread kernel, whatever
    # target is current around the call.
    small = Target("cuda -max_num_threads=64")
    with Target("cuda"), pytest.raises(ValueError, match="uses 128 threads per block"):
        tw.build(Expected_1, small)
    # No target given: the current one, as in TVM.
    with small, pytest.raises(ValueError, match="uses 128 threads per block"):
        tw.build(Expected_1, None)


def test_build_lowered_and_build_agree():
    lowered = tw.lower(MyModuleVecAdd, "c")
    a, b = np.arange(1024, dtype="float32"), np.full(1024, 2, "float32")
    for rt_mod in (tw.build(MyModuleVecAdd, "c"), build_lowered(lowered, "c")):
        c = np.zeros(1024, "float32")
        rt_mod["main"](a, b, c)
        np.testing.assert_array_equal(c, a + b)


def test_a_stage_log_takes_a_string_dump_dir(tmp_path):
    from tilewright.transform import StageLog

    log = StageLog(dump_dir=str(tmp_path / "ir"))  # type: ignore[arg-type]  # as users write it
    log.dump("f", 0, "input", "text")
    assert (tmp_path / "ir" / "f.00_input.txt").read_text() == "text\n"
