"""GPU programs: thread bindings, ``T.launch_thread``, shared memory and barriers, virtual
threads, cross-thread reductions and TVM's wmma calls (printed and parsed; the C target has
no threads, so none runs here)."""

from __future__ import annotations

from corpus import Case
from tilewright.script import tir as T


@T.prim_func
def thread_bound_loops(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            B[bx * 128 + tx] = A[bx * 128 + tx] * T.float32(2)


@T.prim_func
def thread_bound_blocks(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32")):
    for i_0 in T.thread_binding(8, thread="blockIdx.x"):
        for j_0 in T.thread_binding(8, thread="blockIdx.y"):
            for i_1 in T.thread_binding(8, thread="threadIdx.y"):
                for j_1 in T.thread_binding(8, thread="threadIdx.x"):
                    with T.block("B"):
                        vi = T.axis.spatial(64, i_0 * 8 + i_1)
                        vj = T.axis.spatial(64, j_0 * 8 + j_1)
                        T.reads(A[vj, vi])
                        T.writes(B[vi, vj])
                        B[vi, vj] = A[vj, vi]


@T.prim_func
def launch_thread_by_name(A: T.Buffer((64,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 32)
    A[bx * 32 + tx] = T.float32(0)


@T.prim_func
def launch_thread_env(A: T.Buffer((32,), "float32")):
    tx = T.env_thread("threadIdx.x")
    T.launch_thread(tx, 32)
    A[tx] = A[tx] + T.float32(1)


@T.prim_func
def launch_thread_frames(A: T.Buffer((64,), "float32")):
    tx = T.env_thread("threadIdx.x")
    bx = T.env_thread("blockIdx.x")
    with T.launch_thread(bx, 2):  # noqa: SIM117 - one frame a with, as TVM prints
        with T.launch_thread(tx, 32):
            A[bx * 32 + tx] = A[bx * 32 + tx] * T.float32(2)


@T.prim_func
def launch_thread_as(A: T.Buffer((32,), "float32")):
    with T.launch_thread("threadIdx.x", 32) as tx:
        A[tx] = T.float32(0)


@T.prim_func
def shared_memory_and_barrier(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    for _bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            with T.decl_buffer((128,), "float32", scope="shared") as S:
                S[tx] = A[tx]
                T.tvm_storage_sync("shared")
                B[tx] = S[127 - tx]


@T.prim_func
def virtual_threads(A: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for vx in T.thread_binding(2, thread="vthread.x"):
            for tx in T.thread_binding(16, thread="threadIdx.x"):
                A[bx * 32 + vx * 16 + tx] = T.float32(1)


@T.prim_func
def local_accumulator(A: T.Buffer((32, 16), "float32"), B: T.Buffer((32,), "float32")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        acc = T.decl_buffer((1,), "float32", scope="local")
        acc[0] = T.float32(0)
        for k in range(16):
            acc[0] = acc[0] + A[tx, k]
        B[tx] = acc[0]


@T.prim_func
def cross_thread_allreduce(A: T.Buffer((64,), "float32"), B: T.Buffer((2,), "float32")):
    for i in T.thread_binding(2, thread="blockIdx.x"):
        for k in T.thread_binding(32, thread="threadIdx.x"):
            with T.decl_buffer((1,), "float32", scope="local") as cross:
                with T.attr(
                    T.comm_reducer(lambda x, y: x + y, [T.float32(0)]),
                    "reduce_scope",
                    T.reinterpret(T.uint64(0), dtype="handle"),
                ):
                    T.evaluate(
                        T.tvm_thread_allreduce(
                            T.uint32(1), A[i * 32 + k], T.bool(True), cross[0], k
                        )
                    )
                if k == 0:
                    B[i] = cross[0]


@T.prim_func
def warp_reduction_block(A: T.Buffer((4, 32), "float32"), B: T.Buffer((4,), "float32")):
    for i in T.thread_binding(4, thread="blockIdx.x"):
        for k in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.reads(A[vi, vk])
                T.writes(B[vi])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def wmma_builtins(
    A: T.Buffer((16, 16), "float16"),
    B: T.Buffer((16, 16), "float16"),
    C: T.Buffer((16, 16), "float32"),
):
    for _tx in T.thread_binding(32, thread="threadIdx.x"):
        Af = T.decl_buffer((16, 16), "float16", scope="wmma.matrix_a")
        Bf = T.decl_buffer((16, 16), "float16", scope="wmma.matrix_b")
        Cf = T.decl_buffer((16, 16), "float32", scope="wmma.accumulator")
        T.tvm_fill_fragment(Cf.data, 16, 16, 16, 0, T.float32(0))
        T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 0, A.access_ptr("r"), 16, "row_major")
        T.tvm_load_matrix_sync(
            Bf.data,
            16,
            16,
            16,
            0,
            T.tvm_access_ptr(T.type_annotation("float16"), B.data, 0, 256, 1),
            16,
            "col_major",
        )
        T.tvm_mma_sync(Cf.data, 0, Af.data, 0, Bf.data, 0, Cf.data, 0)
        T.tvm_store_matrix_sync(Cf.data, 16, 16, 16, 0, C.access_ptr("w"), 16, "row_major")


@T.prim_func
def dynamic_shared_memory(A: T.Buffer((256,), "float32")):
    for tx in T.thread_binding(256, thread="threadIdx.x"):
        S = T.decl_buffer((256,), "float32", scope="shared.dyn")
        S[tx] = A[tx]
        T.tvm_storage_sync("shared")
        A[tx] = S[255 - tx] + S[tx]


CASES = [
    Case(thread_bound_loops),
    Case(thread_bound_blocks),
    Case(launch_thread_by_name),
    Case(launch_thread_env),
    Case(launch_thread_frames),
    Case(launch_thread_as),
    Case(shared_memory_and_barrier),
    Case(virtual_threads),
    Case(local_accumulator),
    Case(cross_thread_allreduce),
    Case(warp_reduction_block),
    Case(wmma_builtins),
    Case(dynamic_shared_memory),
]
