"""``tw.cuda.tensor_map``: each distinct map a kernel takes becomes one kernel parameter,
printed ``const __grid_constant__ tw_tensor_map`` and used by address in the TMA copies; the
refusals (a buffer that is not a parameter, a box of the wrong rank, targets without maps)."""

from __future__ import annotations

import pytest

import tilewright as tw
from tilewright.codegen.c_like import CodegenError
from tilewright.codegen.cuda import generate_cuda
from tilewright.ir import intrinsics
from tilewright.ir import intrinsics_hopper as hopper
from tilewright.runtime.cuda_runtime import nvrtc
from tilewright.script import tir as T
from tilewright.transform.tensor_maps import (
    TENSOR_MAPS_ATTR,
    TensorMapLiftError,
    TensorMapRecord,
    kernel_tensor_maps,
)


def _program(source: str = "A", box: tuple[int, ...] = (64, 64), swizzle: int = 128):
    """Two loads of A's map (one parameter), a load of B's with another box, and a TMA store
    through C's; ``source`` "S" takes the map of a shared buffer instead of A's."""

    @T.prim_func
    def tiles(
        A: T.Buffer((128, 256), "float16"),
        B: T.Buffer((64, 64), "bfloat16"),
        C: T.Buffer((128, 64), "float16"),
        n: T.int32,
    ):
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                with T.block("tiles"):
                    T.reads(A[0:128, 0:256], B[0:64, 0:64])
                    T.writes(C[0:128, 0:64])
                    S = T.alloc_buffer((8192,), "float16", scope="shared.dyn", align=1024)
                    bar = T.alloc_buffer((1,), "uint64", scope="shared.dyn", align=8)
                    source_data = T.meta_var(A.data if source == "A" else S.data)
                    if tx == 0:
                        for k in range(2):
                            T.evaluate(
                                T.call_intrin(
                                    "int32",
                                    "tw.cuda.tma_load",
                                    S.access_ptr("w"),
                                    T.call_intrin(
                                        "handle", "tw.cuda.tensor_map", source_data, *box, swizzle
                                    ),
                                    T.address_of(bar[0]),
                                    k * 64 + n,
                                    bx * 64,
                                )
                            )
                        T.evaluate(
                            T.call_intrin(
                                "int32",
                                "tw.cuda.tma_load",
                                S.access_ptr("w"),
                                T.call_intrin("handle", "tw.cuda.tensor_map", B.data, 32, 64, 0),
                                T.address_of(bar[0]),
                                0,
                                0,
                            )
                        )
                        T.evaluate(
                            T.call_intrin(
                                "int32",
                                "tw.cuda.tma_store",
                                T.call_intrin("handle", "tw.cuda.tensor_map", C.data, 64, 64, 128),
                                S.access_ptr("r"),
                                0,
                                bx * 64,
                            )
                        )

    return tiles


def test_the_intrinsic_is_in_the_table_and_the_helper_builds_it() -> None:
    assert intrinsics.lookup("tw.cuda.tensor_map") is hopper.TENSOR_MAP
    A = tw.tir.decl_buffer((128, 256), "float16", name="A")
    call = hopper.tensor_map(A, (64, 64), swizzle=128)
    assert hopper.TENSOR_MAP.matches(call) and call.args[0] is A.data
    assert [int(a) for a in call.args[1:]] == [64, 64, 128] and call.dtype.is_handle
    with pytest.raises(ValueError, match=r"tensor_map of buffer A: the box .* 1 dimensions"):
        hopper.tensor_map(A, (64,))


def test_each_distinct_map_becomes_one_kernel_parameter() -> None:
    lowered = tw.lower(_program(), "cuda")
    kernel = lowered["main_kernel"]
    names = [p.name for p in kernel.params]
    # Buffers, scalars, then the maps (A's two loads share one).
    assert names == ["n", "A_tmap", "B_tmap", "C_tmap"]
    assert all(p.dtype.is_handle for p in kernel.params[1:])
    assert kernel_tensor_maps(kernel) == (
        TensorMapRecord(1, "A", "float16", (64, 64), 128),
        TensorMapRecord(2, "B", "bfloat16", (32, 64), 0),
        TensorMapRecord(3, "C", "float16", (64, 64), 128),
    )
    assert TENSOR_MAPS_ATTR in dict(kernel.attrs)
    # The host launch passes each map as its call on the function's buffer.
    launch = lowered["main"].body.value
    maps = launch.args[-3:]
    assert all(hopper.TENSOR_MAP.matches(m) for m in maps)
    host = lowered["main"]
    assert [m.args[0] for m in maps] == [host.buffer_map[i][1].data for i in range(3)]


def test_the_kernel_takes_maps_by_value_and_copies_through_their_address() -> None:
    source = generate_cuda(tw.lower(_program(), "cuda"))
    text = source.text
    assert "struct __align__(64) tw_tensor_map { unsigned long long opaque[16]; };" in text
    assert (
        "main_kernel(int n, const __grid_constant__ tw_tensor_map A_tmap, "
        "const __grid_constant__ tw_tensor_map B_tmap, "
        "const __grid_constant__ tw_tensor_map C_tmap)"
    ) in text
    load = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
    loads = [line for line in text.splitlines() if load in line]
    assert len(loads) == 2  # A's (in a loop over k) and B's
    assert '"l"((unsigned long long)(&A_tmap)), "r"((int)(k * 64 + n))' in loads[0]
    assert '"l"((unsigned long long)(&B_tmap))' in loads[1]
    store = text[text.index("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") :]
    assert '"l"((unsigned long long)(&C_tmap))' in store.splitlines()[0]
    assert text.count("tw_tensor_map {") == 1  # the struct is defined once


def test_a_map_written_by_tma_stores_marks_its_buffer_written() -> None:
    from tilewright.codegen.artifacts import device_artifact

    artifact = device_artifact(tw.lower(_program(), "cuda"), generate_cuda, "cuda", "cuda")
    (sig,) = artifact.functions
    assert [(p.name, p.written) for p in sig.params] == [
        ("A", False),
        ("B", False),
        ("C", True),
        ("n", False),
    ]


@pytest.mark.skipif(nvrtc.nvrtc_version() is None, reason="needs NVRTC")
def test_nvrtc_compiles_grid_constant_maps_for_sm_90a() -> None:
    from tilewright.codegen.artifacts import device_artifact

    made = device_artifact(tw.lower(_program(), "cuda"), generate_cuda, "cuda", "cuda")
    cubin = nvrtc.compile_cuda(made.source, "sm_90a")
    assert len(cubin) > 0


def test_a_map_of_a_buffer_that_is_not_a_parameter_is_refused() -> None:
    with pytest.raises(
        TensorMapLiftError,
        match=r"kernel main_kernel: tw\.cuda\.tensor_map of buffer S: S is not a buffer parameter",
    ):
        tw.lower(_program(source="S"), "cuda")


@pytest.mark.parametrize(
    ("box", "swizzle", "message"),
    [
        ((64,), 128, r"buffer A: the box must be 2 positive constants .* got \(64\)"),
        ((64, 0), 128, "buffer A: the box must be 2 positive constants"),
        ((64, 64), 16, "buffer A: swizzle 16"),
    ],
)
def test_a_map_without_a_box_or_swizzle_tma_has_is_refused(box, swizzle, message) -> None:
    with pytest.raises(TensorMapLiftError, match=message):
        tw.lower(_program(box=box, swizzle=swizzle), "cuda")


def test_targets_without_tensor_maps_refuse_them() -> None:
    from tilewright.backend import backend_for
    from tilewright.codegen.opencl import generate_opencl

    assert backend_for("cuda").supports(hopper.TENSOR_MAP)
    assert not backend_for("opencl").supports(hopper.TENSOR_MAP)

    with pytest.raises(
        CodegenError,
        match=r"kernel main_kernel takes the TMA tensor map of buffer A, B, C .* the opencl "
        "target has no tensor maps",
    ):
        generate_opencl(tw.lower(_program(), "opencl"))

    @T.prim_func
    def host(A: T.Buffer((64, 64), "float16"), out: T.Buffer((1,), "int64")):
        out[0] = T.reinterpret(
            "int64", T.call_intrin("handle", "tw.cuda.tensor_map", A.data, 64, 64, 0)
        )

    with pytest.raises(CodegenError, match=r"takes the TMA tensor map of buffer A .* the c target"):
        tw.build_artifact(host, target="c")
