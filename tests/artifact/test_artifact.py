"""Artifacts: built once, serialised, loaded elsewhere (another process) without lowering."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from seed_notebook import Expected_1, MatmulToday, MyModuleVecAdd

import tilewright as tw
from tilewright.artifact import Artifact, ArtifactError


def _small_matmul():
    return tw.script.from_source(MatmulToday.script().replace("1024", "32"))


def test_bytes_round_trip_keeps_everything():
    art = tw.build_artifact(_small_matmul(), "c")
    again = Artifact.from_bytes(art.to_bytes())
    assert again == art
    assert again.format == "c-library" and again.binary[:4] == b"\x7fELF"
    assert [f.name for f in again.functions] == ["main"]


def test_another_process_loads_and_runs_it_without_the_ir(tmp_path):
    path = tmp_path / "matmul.art"
    path.write_bytes(tw.build_artifact(_small_matmul(), "c").to_bytes())
    # The child never parses, schedules or lowers: it imports no script, transform or codegen.
    child = textwrap.dedent(f"""
        import sys
        import numpy as np
        from tilewright.artifact import Artifact
        from tilewright.runtime import load
        rt = load(Artifact.from_bytes(open({str(path)!r}, "rb").read()))
        a = np.ones((32, 32), "float32"); c = np.zeros((32, 32), "float32")
        rt["main"](a, a, c)
        assert float(c[0, 0]) == 32.0, c[0, 0]
        banned = [m for m in sys.modules if m.startswith(("tilewright.transform",
                  "tilewright.codegen", "tilewright.script", "tilewright.schedule"))]
        assert banned == [], banned
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_export_and_load_with_a_relative_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rt_mod = tw.build(MyModuleVecAdd, "c")
    rt_mod.export_library("vecadd.so")
    assert (tmp_path / "vecadd.so").read_bytes()[:4] == b"\x7fELF"  # a real shared library
    meta = json.loads((tmp_path / "vecadd.so.json").read_text())
    assert meta["artifact_format"] == "c-library" and meta["kind"] == "c"
    again = tw.runtime.load_module("vecadd.so")
    a, b = np.arange(1024, dtype="float32"), np.ones(1024, "float32")
    c = np.zeros(1024, "float32")
    again["main"](a, b, c)
    np.testing.assert_array_equal(c, a + 1)


@pytest.mark.parametrize("kind", ["cuda", "opencl", "metal"])
def test_gpu_artifacts_save_and_load(kind, tmp_path):
    if kind == "cuda":
        from tilewright.runtime.cuda_runtime.nvrtc import nvcc_version, nvrtc_version

        if nvrtc_version() is None and nvcc_version() is None and not tw.config.get().ci:
            pytest.skip("no NVRTC or nvcc")
    built = tw.build(Expected_1, kind)
    path = built.export_library(tmp_path / f"vecadd.{kind}")
    loaded = tw.runtime.load_module(path)
    assert loaded.imported_modules[0].get_source() == built.imported_modules[0].get_source()
    assert loaded.artifact == built.artifact
    assert loaded.artifact.host_plans[0].kernels == ("main_kernel",)


def test_damaged_or_foreign_files_are_refused(tmp_path):
    (tmp_path / "x.so").write_bytes(b"")
    (tmp_path / "x.so.json").write_text("{not json")
    with pytest.raises(ArtifactError, match=r"x.so.json is damaged"):
        tw.runtime.load_module(tmp_path / "x.so")
    (tmp_path / "x.so.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(ArtifactError, match=r"is not a tilewright artifact description"):
        tw.runtime.load_module(tmp_path / "x.so")
    with pytest.raises(FileNotFoundError, match=r"no file at"):
        tw.runtime.load_module(tmp_path / "missing.so")


@pytest.mark.gpu
def test_a_cubin_artifact_runs_in_another_process(tmp_path):
    from tilewright.runtime.cuda_runtime import device_count

    if device_count() == 0:
        pytest.skip("needs a CUDA GPU")
    path = tmp_path / "vecadd.art"
    path.write_bytes(tw.build_artifact(Expected_1, "cuda").to_bytes())
    child = textwrap.dedent(f"""
        import numpy as np
        import tilewright as tw
        from tilewright.artifact import Artifact
        rt = tw.runtime.load(Artifact.from_bytes(open({str(path)!r}, "rb").read()))
        a = np.arange(1024, dtype="float32")
        dev = tw.cuda(0)
        c = tw.nd.array(np.full(1024, np.nan, "float32"), dev)
        rt["main"](tw.nd.array(a, dev), tw.nd.array(a, dev), c)
        np.testing.assert_array_equal(c.numpy(), 2 * a)
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
