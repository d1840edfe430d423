"""Target parsing, kinds, aliases, tags, options and the current-target scope."""

from __future__ import annotations

import pytest

from tilewright.target import TAGS, Target, list_tags


def test_kinds_and_llvm_alias():
    assert Target("c").kind == "c"
    llvm = Target("llvm")
    assert llvm.kind == "c" and llvm.kind.name == "c"
    assert llvm.spelling == "llvm" and str(llvm) == "llvm"
    assert llvm == Target("c")
    for kind in ("cuda", "opencl", "metal"):
        assert Target(kind).kind == kind
    assert Target("c").num_cores >= 1


def test_cuda_defaults_and_options():
    cuda = Target("cuda")
    assert (cuda.arch, cuda.max_num_threads, cuda.thread_warp_size) == ("sm_90", 1024, 32)
    assert cuda.host == Target("c")
    t = Target("cuda -arch=sm_80 -max_num_threads=512")
    assert (t.arch, t.max_num_threads) == ("sm_80", 512)
    assert str(t) == "cuda -arch=sm_80 -max_num_threads=512"
    assert Target({"kind": "cuda", "arch": "sm_75"}).arch == "sm_75"
    assert Target("cuda -libs=cublas").libs == "cublas"
    assert Target("llvm -mcpu=skylake").mcpu == "skylake"


@pytest.mark.parametrize(
    ("tag", "arch", "smem", "cores"),
    [
        ("nvidia/h200", "sm_90", 232448, 132),
        ("nvidia/h100", "sm_90", 232448, 132),
        ("nvidia/a100", "sm_80", 166912, 108),
        ("nvidia/tesla-p100", "sm_60", 49152, 56),
        ("nvidia/geforce-rtx-2080-ti", "sm_75", 65536, 68),
    ],
)
def test_tags(tag, arch, smem, cores):
    t = Target(tag)
    assert t.kind == "cuda" and t.tag == tag and str(t) == tag
    assert (t.arch, t.max_shared_memory_per_block, t.num_cores) == (arch, smem, cores)
    assert (t.max_num_threads, t.thread_warp_size) == (1024, 32)
    assert tag in list_tags() and len(TAGS) == 5


def test_tag_with_override():
    assert Target("nvidia/a100 -max_num_threads=256").max_num_threads == 256


def test_unknown_target_lists_kinds_and_tags():
    with pytest.raises(ValueError, match=r"unknown target 'vulkan'; known kinds: c, llvm, cuda.*"
                       r"known tags: nvidia/a100.*nvidia/tesla-p100"):  # fmt: skip
        Target("vulkan")


def test_bad_options():
    with pytest.raises(ValueError, match=r"unknown option 'colour'; known options: arch"):
        Target("cuda -colour=red")
    with pytest.raises(ValueError, match=r"option max_num_threads takes an integer, got 'many'"):
        Target("cuda -max_num_threads=many")
    with pytest.raises(ValueError, match=r"option 'sm_80' must read -key=value"):
        Target("cuda sm_80")
    with pytest.raises(ValueError, match=r"empty target string"):
        Target("  ")
    with pytest.raises(TypeError, match=r"a target is a string, dict or Target, got int"):
        Target(3)  # type: ignore[arg-type]


def test_current_target_scopes_nest():
    assert Target.current() is None
    outer, inner = Target("cuda"), Target("c")
    with outer:
        assert Target.current() is outer
        with inner:
            assert Target.current() is inner
        assert Target.current() is outer
    assert Target.current() is None
    with pytest.raises(ValueError, match=r"no current target"):
        Target.current(allow_none=False)


def test_copy_and_host():
    t = Target(Target("nvidia/h200"), host="llvm")
    assert t.tag == "nvidia/h200" and t.host is not None and t.host.spelling == "llvm"
    assert t.attrs()["max_shared_memory_per_block"] == 232448
