"""Tensor maps passed by value (no GPU needed: the driver is faked): the artifact's record of
each map parameter and its JSON round trip, the host-side encoding from the argument's
address, shape and strides, the 64-byte aligned 128 bytes in the argument array, the
encoding cache, the launch cache's re-encoding for new pointers, and the refusals."""

from __future__ import annotations

import ctypes

import pytest

import tilewright as tw
from tilewright.artifact import TENSOR_MAP, Artifact, KernelInfo, TensorMapParam
from tilewright.codegen.artifacts import device_artifact
from tilewright.codegen.cuda import generate_cuda
from tilewright.runtime.cuda_runtime import driver
from tilewright.runtime.cuda_runtime.launch_cache import LaunchCache
from tilewright.runtime.cuda_runtime.memory import DeviceAllocation
from tilewright.runtime.cuda_runtime.module import CUDAModule
from tilewright.runtime.cuda_runtime.tensor_map import TensorMapError
from tilewright.runtime.cuda_runtime.tensor_map_args import (
    TensorMapCache,
    array_layout,
    map_storage,
)
from tilewright.runtime.ndarray import NDArray
from tilewright.script import tir as T

M, K = 256, 128


def _program(box_rows: int = 128, swizzle: int = 128):
    """One TMA load of A's (box_rows x 64) tile, then the tile copied to C."""

    @T.prim_func
    def copy_tile(A: T.Buffer((M, K), "float16"), C: T.Buffer((128, 64), "float16")):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            with T.block("tile"):
                T.reads(A[0:M, 0:K])
                T.writes(C[0:128, 0:64])
                As = T.alloc_buffer((8192,), "float16", scope="shared.dyn", align=1024)
                bar = T.alloc_buffer((1,), "uint64", scope="shared.dyn", align=8)
                if tx == 0:
                    T.evaluate(
                        T.call_intrin("int32", "tw.cuda.mbarrier_init", T.address_of(bar[0]), 1)
                    )
                    T.evaluate(
                        T.call_intrin(
                            "int32",
                            "tw.cuda.mbarrier_arrive_expect_tx",
                            T.address_of(bar[0]),
                            box_rows * 128,
                        )
                    )
                    T.evaluate(
                        T.call_intrin(
                            "int32",
                            "tw.cuda.tma_load",
                            As.access_ptr("w"),
                            T.call_intrin(
                                "handle", "tw.cuda.tensor_map", A.data, box_rows, 64, swizzle
                            ),
                            T.address_of(bar[0]),
                            0,
                            0,
                        )
                    )
                T.evaluate(T.call_intrin("int32", "tw.cuda.mbarrier_wait", T.address_of(bar[0]), 0))
                for i in range(64):
                    C[tx, i] = As[tx * 64 + i]

    return copy_tile


def _artifact(**kwargs) -> Artifact:
    made = device_artifact(tw.lower(_program(**kwargs), "cuda"), generate_cuda, "cuda", "cuda")
    return made.replace(format="cubin", binary=b"not a real cubin", arch="sm_90a", device="cuda")


def test_the_artifact_records_which_parameter_each_map_describes(tmp_path) -> None:
    artifact = _artifact()
    (info,) = artifact.kernels.values()
    assert info.params == (None, TENSOR_MAP)  # C's pointer, then A's map
    assert info.tensor_maps == (TensorMapParam(1, "A", "float16", (128, 64), 128),)
    (plan,) = artifact.host_plans
    # The plan passes A's argument to the map parameter; the record says how to encode it.
    assert plan.body[3] == [["var", "C_1"], ["var", "A_1"]]
    assert Artifact.from_bytes(artifact.to_bytes()) == artifact
    loaded = Artifact.load(artifact.save(tmp_path / "tile.cubin"))
    assert loaded.kernels == artifact.kernels
    assert '"tensor_maps"' in (tmp_path / "tile.cubin.json").read_text()


def test_kernels_without_maps_are_described_as_before() -> None:
    info = KernelInfo((None, "int32"), 16)
    assert info.to_json() == {"params": [None, "int32"], "dyn_shared_bytes": 16}
    assert KernelInfo.from_json(info.to_json()) == info


def _device_array(address: int, shape: tuple[int, ...], dtype: str = "float16") -> NDArray:
    """A CUDA NDArray at ``address`` without a GPU (nothing reads its memory here)."""
    alloc = DeviceAllocation.__new__(DeviceAllocation)
    alloc.ptr, alloc.index, alloc.nbytes = address, 0, 0
    return NDArray.from_device_buffer(alloc, shape, dtype, tw.cuda(0))


class _FakeDriver:
    """Fakes cuTensorMapEncodeTiled (each map's first word is the address it encodes) and
    records every launch's argument bytes."""

    def __init__(self, monkeypatch) -> None:
        self.encoded: list[tuple] = []
        self.launches: list[list[bytes]] = []
        monkeypatch.setattr(driver, "enum", lambda kind, member: member)
        monkeypatch.setattr(driver, "scalar", lambda kind, value: value)
        monkeypatch.setattr(driver, "call", self.call)
        monkeypatch.setattr(driver, "activate", lambda index: None)
        monkeypatch.setattr(driver, "launch", self.launch)
        monkeypatch.setattr(CUDAModule, "prepare", lambda self: None)
        monkeypatch.setattr(CUDAModule, "loaded", lambda self: self)
        monkeypatch.setattr(CUDAModule, "function", lambda self, name, shared: 7, raising=False)
        monkeypatch.setattr(driver.RawLauncher, "create", staticmethod(lambda index: self))

    def call(self, name: str, *args: object) -> tuple:
        assert name == "cuTensorMapEncodeTiled"
        self.encoded.append(args)

        class Map:
            opaque = (args[2], *range(1, 16))

        return (Map(),)

    def launch(self, function, name, grid, block, shared, stream, args) -> None:
        for value in args.values:
            if isinstance(value, ctypes.Array):
                assert ctypes.addressof(value) % 64 == 0, "a map's storage is 64-byte aligned"
        self.launches.append([bytes(v) for v in args.values])

    def activate(self) -> None:  # as RawLauncher
        pass


def _first_word(raw: bytes) -> int:
    return int.from_bytes(raw[:8], "little")


def test_a_call_encodes_the_map_on_the_host_and_passes_it_by_value(monkeypatch) -> None:
    fake = _FakeDriver(monkeypatch)
    f = tw.runtime.load(_artifact())["main"]
    a, c = _device_array(0x10000, (M, K)), _device_array(0x90000, (128, 64))
    f(a, c)
    ((dtype, rank, address, shape, strides, box, _, _, swizzle, *_),) = fake.encoded
    assert (dtype, rank, address) == ("CU_TENSOR_MAP_DATA_TYPE_FLOAT16", 2, 0x10000)
    assert (shape, strides, box) == ([K, M], [K * 2], [64, 128])  # innermost first, bytes
    assert swizzle == "CU_TENSOR_MAP_SWIZZLE_128B"
    ((c_arg, a_map),) = fake.launches
    assert int.from_bytes(c_arg, "little") == 0x90000
    assert len(a_map) == 128 and _first_word(a_map) == 0x10000


def test_repeated_calls_reuse_the_encoding_and_new_pointers_get_new_maps(monkeypatch) -> None:
    fake = _FakeDriver(monkeypatch)
    cached: list[bool] = []
    launch = LaunchCache.launch
    monkeypatch.setattr(
        LaunchCache, "launch", lambda self, args: cached.append(launch(self, args)) or cached[-1]
    )
    f = tw.runtime.load(_artifact())["main"]
    c = _device_array(0x90000, (128, 64))
    a1, a2 = _device_array(0x10000, (M, K)), _device_array(0x20000, (M, K))
    f(a1, c)  # checked, then remembered by the launch cache
    f(a1, c)  # cached launch: the map is looked up, not encoded again
    f(a2, c)  # cached launch with a new pointer: its own map
    f(a1, c)
    assert cached == [False, True, True, True]  # the last three skipped the checks
    assert [args[2] for args in fake.encoded] == [0x10000, 0x20000]
    assert [_first_word(launch[1]) for launch in fake.launches] == [0x10000] * 2 + [
        0x20000,
        0x10000,
    ]


def test_the_encoding_cache_keys_on_address_shape_strides_box_and_swizzle(monkeypatch) -> None:
    fake = _FakeDriver(monkeypatch)
    maps = TensorMapCache(limit=2)
    param = TensorMapParam(0, "A", "float16", (128, 64), 128)
    a = _device_array(0x10000, (M, K))
    first = maps.encode(param, a, "k")
    assert maps.encode(param, a, "k") is first and len(fake.encoded) == 1
    maps.encode(TensorMapParam(0, "A", "float16", (64, 64), 128), a, "k")  # another box
    maps.encode(param, _device_array(0x10000, (128, K)), "k")  # another shape
    assert len(fake.encoded) == 3 and len(maps.entries) == 2  # the oldest dropped
    storage = maps.argument(param, a, "k")
    assert ctypes.addressof(storage) % 64 == 0 and _first_word(bytes(storage)) == 0x10000


def test_strides_come_from_the_array() -> None:
    class Strided:  # a column slice of a row-major 256 x 256 float16 tensor
        __cuda_array_interface__ = {  # noqa: RUF012
            "shape": (256, 128),
            "strides": (512, 2),
            "typestr": "<f2",
            "data": (0x4000, False),
            "version": 3,
        }

    assert array_layout(Strided()) == (0x4000, (256, 128), (256, 1))
    assert array_layout(_device_array(0x8000, (4, 8))) == (0x8000, (4, 8), (8, 1))
    assert ctypes.addressof(map_storage(bytes(range(128)))) % 64 == 0


@pytest.mark.parametrize(
    ("shape", "address", "message"),
    [
        ((64, K), 0x10000, r"box dimension 0 is 128 \(1 to 256, at most the extent 64\)"),
        ((M, K), 0x10008, "starts at 0x10008, not a multiple of 16 bytes"),
    ],
)
def test_a_map_the_hardware_refuses_fails_before_anything_runs(
    monkeypatch, shape, address, message
) -> None:
    fake = _FakeDriver(monkeypatch)
    module = CUDAModule(_artifact(), tw.cuda(0))
    a = _device_array(address, shape)
    launch = tw.artifact.Launch("main_kernel", (1, 1, 1), (128, 1, 1), 0, (0x90000, a))
    with pytest.raises(
        TensorMapError, match=f"kernel main_kernel: the tensor map of argument A.*{message}"
    ):
        module.runner([launch], [a])
    assert not fake.encoded and not fake.launches


def test_a_box_wider_than_the_swizzle_is_refused_naming_the_buffer(monkeypatch) -> None:
    fake = _FakeDriver(monkeypatch)
    # 128 float16 elements a row is 256 bytes: wider than a 64-byte swizzle.
    artifact = _artifact(box_rows=64, swizzle=64)
    param = artifact.kernels["main_kernel"].tensor_maps[0]
    wide = TensorMapParam(param.index, param.param, param.dtype, (64, 128), 64)
    with pytest.raises(TensorMapError, match=r"argument A .* wider than the 64-byte swizzle"):
        TensorMapCache().encode(wide, _device_array(0x10000, (M, K)), "main_kernel")
    assert not fake.encoded
