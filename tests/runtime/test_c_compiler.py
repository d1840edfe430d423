"""The C compiler driver: cache by content hash, atomic writes, clear errors."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tilewright import config
from tilewright.driver import build_lowered
from tilewright.ir import (
    Allocate,
    BufferStore,
    IntImm,
    IRModule,
    PrimFunc,
    Var,
    decl_buffer,
    dtype,
    op,
)
from tilewright.runtime import CompileError, compile_c
from tilewright.runtime.c_compiler import compile_flags

SOURCE = "int tw_answer(void) { return 42; }\n"


def test_cache_reuses_the_library_by_content(kernel_cache_dir):
    first = compile_c(SOURCE, "answer")
    assert first.parent == kernel_cache_dir / "c"
    stamp = first.stat().st_mtime_ns
    assert compile_c(SOURCE, "answer") == first and first.stat().st_mtime_ns == stamp
    other = compile_c(SOURCE.replace("42", "43"), "answer")
    assert other != first
    assert first.with_suffix(".c").read_text() == SOURCE


def test_concurrent_builds_of_one_source_agree(kernel_cache_dir):
    source = "int tw_concurrent(void) { return 7; }\n"
    paths, errors = [], []

    def build():
        try:
            paths.append(compile_c(source, "concurrent"))
        except Exception as err:  # collected, asserted below
            errors.append(err)

    threads = [threading.Thread(target=build) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(paths)) == 1
    assert not list((kernel_cache_dir / "c").glob("*.tmp"))


def test_openmp_flag_only_when_used():
    assert "-fopenmp" not in compile_flags(("cc",), uses_openmp=False)
    assert "-fopenmp" in compile_flags(("cc",), uses_openmp=True)
    assert {"-O3", "-shared", "-fPIC"} <= set(compile_flags(("cc",), uses_openmp=False))


def test_compile_error_shows_compiler_output_and_source_line():
    broken = "#include <stdint.h>\nint32_t f(void) {\n  return undefined_name;\n}\n"
    with pytest.raises(CompileError) as info:
        compile_c(broken, "broken")
    message = str(info.value)
    assert "C compiler failed on kernel broken" in message
    assert "undefined_name" in message
    assert "generated source line 3: return undefined_name;" in message


def test_missing_compiler_is_a_clear_error():
    with (
        config.scope(cc="/nonexistent/tw-cc"),
        pytest.raises(CompileError, match=r"C compiler '/nonexistent/tw-cc' cannot be run"),
    ):
        compile_c(SOURCE, "answer")


def test_failed_allocation_is_reported_not_crashed():
    size = Var("size", dtype("int64"))
    A = decl_buffer((1,), "float32", "A")
    tmp = decl_buffer((size,), "float32", "tmp", scope="local")
    body = Allocate(tmp, BufferStore(A, op.const(1.0, "float32"), (IntImm(0, dtype("int32")),)))
    pa = Var("A", dtype("handle"))
    rt = build_lowered(IRModule({"main": PrimFunc((pa, size), body, ((pa, A),))}))
    a = np.zeros(1, "float32")
    rt["main"](a, 16)
    assert a[0] == 1.0
    with pytest.raises(RuntimeError, match=r"kernel main failed: could not allocate memory"):
        rt["main"](a, 2**60)
