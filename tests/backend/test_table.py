"""The backend table is the one place that knows target kinds: a new backend is one row."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tilewright as tw
from tilewright.backend import BACKENDS, Backend, backend_for, compilers
from tilewright.codegen import CPrinter
from tilewright.codegen.artifacts import c_artifact
from tilewright.ir import intrinsics
from tilewright.runtime import loader
from tilewright.target import KindSpec, Target
from tilewright.target.tags import C_KIND
from tilewright.transform import cpu_stages

PACKAGE = Path(tw.__file__).parent
# A comparison of something with a target or device kind's name, either way round.
_KIND = r"""["'](?:c|llvm|cuda|nvptx|opencl|metal|cpu|gpu)["']"""
KIND_COMPARISON = re.compile(rf"(?:(?:==|!=|\bin)\s*\(?\s*{_KIND})|(?:{_KIND}\s*(?:==|!=))")


def test_no_target_kind_comparison_outside_the_backend_table():
    found = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if KIND_COMPARISON.search(line)
    ]
    assert found == []


def test_every_row_names_its_kind():
    for name, row in BACKENDS.items():
        assert row.name == name
        assert backend_for(Target(row.kind)) is row


def test_support_of_an_intrinsic_comes_from_the_printer_tables():
    assert backend_for("cuda").supports(intrinsics.COPY_BYTES)
    assert not backend_for("opencl").supports(intrinsics.COPY_BYTES)
    assert backend_for("c").supports(intrinsics.lookup("exp"))
    assert not backend_for("c").supports(intrinsics.SYNC_THREADS)


def test_unknown_kind_names_the_backends():
    orphan = KindSpec("vulkan", (), C_KIND.defaults)
    with pytest.raises(ValueError, match=r"kind vulkan\) has no backend; backends: c, cuda"):
        backend_for(Target(orphan))


TOY = KindSpec("toyc", (), C_KIND.defaults, host_kind=None)


def _toy_codegen(lowered: tw.IRModule, target: Target):
    # C whose exported entry points are named toy_<function>.
    return c_artifact(lowered, str(target), symbol=lambda name: f"toy_{name}")


def test_a_new_backend_is_one_table_row(monkeypatch):
    row = Backend(
        kind=TOY,
        lowering=cpu_stages,
        printer=CPrinter,
        codegen=_toy_codegen,
        compiler=compilers.compile_c_library,
        loader=loader.load_c_library,
        device="cpu",
        suffix="c",
    )
    monkeypatch.setitem(BACKENDS, "toyc", row)
    from seed_notebook import MatmulToday

    small = tw.script.from_source(MatmulToday.script().replace("1024", "64"))
    rt_mod = tw.build(small, Target(TOY))
    assert "TW_EXPORT int32_t toy_main(" in rt_mod.get_source()
    assert rt_mod.artifact is not None and rt_mod.artifact.kind == "toyc"
    rng = np.random.default_rng(0)
    a, b = rng.random((64, 64), dtype=np.float32), rng.random((64, 64), dtype=np.float32)
    c = np.full((64, 64), np.nan, dtype=np.float32)
    rt_mod["main"](a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5)
