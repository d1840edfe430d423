"""The elementwise epilogue kernel the CPU tests (tests/tirx/test_elementwise_ops.py) and the
GPU tests (tests/runtime/test_gpu_hopper_tiles.py) both run: a float32 tile in a wgmma
accumulator's layout gets a bias row, ReLU and a float16 conversion, then is stored."""

from __future__ import annotations

from tilewright.layout import wgmma_accumulator_layout
from tilewright.script import tirx as T
from tilewright.script.tirx import tile as Tx

ACC = wgmma_accumulator_layout(64, 16)


@T.prim_func
def bias_relu_epilogue(
    A: T.Buffer((64, 16), "float32"),
    bias: T.Buffer((16,), "float16"),
    C: T.Buffer((64, 16), "float16"),
):
    T.device_entry()
    T.thread_id([128])
    acc = T.alloc_buffer((64, 16), "float32", scope="local", layout=ACC)
    out = T.alloc_buffer((64, 16), "float16", scope="local", layout=ACC)
    Tx.wg.copy(acc[0:64, 0:16], A[0:64, 0:16])  # stands for the wgmma result
    Tx.wg.add(acc[0:64, 0:16], acc[0:64, 0:16], bias[0:16])  # one bias per column
    Tx.wg.relu(acc[0:64, 0:16], acc[0:64, 0:16])
    Tx.wg.cast(out[0:64, 0:16], acc[0:64, 0:16])
    Tx.wg.copy(C[0:64, 0:16], out[0:64, 0:16])
