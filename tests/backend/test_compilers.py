"""The CUDA compiler stage without a compiler, and for an architecture CUDA no longer builds."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from seed_notebook import Expected_1, Expected_4

import tilewright as tw
from tilewright.runtime.cuda_runtime import driver, nvrtc


def test_without_a_cuda_compiler_the_source_is_still_built(monkeypatch):
    monkeypatch.setattr(nvrtc, "compiler_available", lambda: False)
    rt_mod = tw.build(Expected_1, "cuda")
    assert rt_mod.artifact is not None and rt_mod.artifact.format == "source"
    source = rt_mod.imported_modules[0].get_source()
    assert "__global__ void __launch_bounds__(128) main_kernel(" in source
    a = np.zeros(1024, "float32")
    with pytest.raises(RuntimeError, match=r"source only .* pip install 'tilewright\[cuda\]'"):
        rt_mod["main"](a, a, a)


def test_an_unsupported_tag_arch_compiles_for_the_oldest_supported_one(monkeypatch, caplog):
    monkeypatch.setattr(driver, "device_arch", lambda index=0: None)  # no GPU here
    monkeypatch.setattr(nvrtc, "supported_archs", lambda: ("sm_75", "sm_80", "sm_90"))
    monkeypatch.setattr(nvrtc, "compiler_available", lambda: True)
    compiled: list[str] = []
    monkeypatch.setattr(
        nvrtc, "compile_cuda", lambda source, arch, kernels: compiled.append(arch) or b"cubin"
    )
    with caplog.at_level(logging.WARNING, logger="tilewright.backend.compilers"):
        rt_mod = tw.build(Expected_1, "nvidia/tesla-p100")
    assert compiled == ["sm_75"] and rt_mod.artifact.arch == "sm_75"
    assert "sm_60, which the installed CUDA compiler no longer supports" in caplog.text
    assert "compiling for sm_75 instead" in caplog.text


def test_the_tags_limits_still_apply():
    # Expected_4's kernel keeps 130 floats (528 bytes) in shared memory.
    tw.build(Expected_4, "nvidia/tesla-p100 -max_shared_memory_per_block=1024")
    with pytest.raises(ValueError, match=r"the target nvidia/tesla-p100 .* allows 0.5 KB"):
        tw.build(Expected_4, "nvidia/tesla-p100 -max_shared_memory_per_block=512")


@pytest.mark.skipif(not nvrtc.supported_archs(), reason="no CUDA compiler here")
def test_supported_archs_lists_hopper():
    assert "sm_90" in nvrtc.supported_archs()
    assert list(nvrtc.supported_archs()) == sorted(
        nvrtc.supported_archs(), key=lambda a: int(a[3:])
    )
