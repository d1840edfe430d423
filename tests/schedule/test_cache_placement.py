"""Where cache_read and cache_write put their copy (TVM's placement), the compact cache of a
copy placed in a non-root block, one-iteration loops in copy nests, the union of an input's
declared regions, and region inference for hand-written root blocks, ``match_buffer`` and
``T.tvm_access_ptr``. Expected scripts are written as TVM prints them; each schedule is also
replayed from its trace and compared numerically with the unscheduled program."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule

from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def inner_and_outer(
    A: T.Buffer((16, 8), "float32"),
    C: T.Buffer((16, 8), "float32"),
    D: T.Buffer((16, 8), "float32"),
):
    B = T.alloc_buffer((16, 8))
    for i in range(16):
        for j in range(8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j in range(8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1)
    for i, j in T.grid(16, 8):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = B[vi, vj] * T.float32(3)


def test_cache_read_with_a_consumer_inside_the_producer_loop_copies_there() -> None:
    # The wrong-code case: with C in B's loop and D after it, the copy used to follow the
    # loop, so C read the cache before anything was copied into it.
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        C: T.Buffer((16, 8), "float32"),
        D: T.Buffer((16, 8), "float32"),
    ):
        B = T.alloc_buffer((16, 8))
        B_local = T.alloc_buffer((16, 8), scope="local")
        for i in range(16):
            for j in range(8):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2)
            for ax0, ax1 in T.grid(1, 8):
                with T.block("B_local"):
                    v0 = T.axis.spatial(16, i + ax0)
                    v1 = T.axis.spatial(8, ax1)
                    B_local[v0, v1] = B[v0, v1]
            for j in range(8):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = B_local[vi, vj] + T.float32(1)
        for i, j in T.grid(16, 8):
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = B_local[vi, vj] * T.float32(3)

    sch = Schedule(inner_and_outer)
    cache = sch.cache_read(sch.get_block("C"), 0, "local")
    assert sch.get(cache).name == "B_local"
    check_schedule(sch, inner_and_outer, expected)


def test_cache_read_for_one_consumer_in_the_loop_leaves_the_other_alone() -> None:
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        C: T.Buffer((16, 8), "float32"),
        D: T.Buffer((16, 8), "float32"),
    ):
        B = T.alloc_buffer((16, 8))
        B_shared = T.alloc_buffer((16, 8), scope="shared")
        for i in range(16):
            for j in range(8):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2)
            for j in range(8):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = B[vi, vj] + T.float32(1)
        for ax0, ax1 in T.grid(16, 8):
            with T.block("B_shared"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                B_shared[v0, v1] = B[v0, v1]
        for i, j in T.grid(16, 8):
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = B_shared[vi, vj] * T.float32(3)

    sch = Schedule(inner_and_outer)
    sch.cache_read(sch.get_block("D"), 0, "shared", consumer_blocks=[sch.get_block("D")])
    check_schedule(sch, inner_and_outer, expected)


def test_cache_write_with_a_reader_inside_the_writer_loop_copies_back_there() -> None:
    # Refused before ("reads the buffer in the same loop nest as its writer"); TVM puts the
    # copy back in the loop, before the reader.
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        C: T.Buffer((16, 8), "float32"),
        D: T.Buffer((16, 8), "float32"),
    ):
        B = T.alloc_buffer((16, 8))
        B_local = T.alloc_buffer((16, 8), scope="local")
        for i in range(16):
            for j in range(8):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B_local[vi, vj] = A[vi, vj] * T.float32(2)
            for ax0, ax1 in T.grid(1, 8):
                with T.block("B_local"):
                    v0 = T.axis.spatial(16, i + ax0)
                    v1 = T.axis.spatial(8, ax1)
                    B[v0, v1] = B_local[v0, v1]
            for j in range(8):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = B[vi, vj] + T.float32(1)
        for i, j in T.grid(16, 8):
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = B[vi, vj] * T.float32(3)

    sch = Schedule(inner_and_outer)
    sch.cache_write(sch.get_block("B"), 0, "local")
    check_schedule(sch, inner_and_outer, expected)


@T.prim_func
def with_bystander(
    A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"), E: T.Buffer((8,), "float32")
):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + T.float32(1)
    for i in range(8):
        with T.block("E"):
            vi = T.axis.spatial(8, i)
            E[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] * B[vi]


def test_cache_read_copy_goes_right_before_the_first_consumer() -> None:
    @T.prim_func
    def expected(
        A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"), E: T.Buffer((8,), "float32")
    ):
        B = T.alloc_buffer((8,))
        B_shared = T.alloc_buffer((8,), scope="shared")
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] + T.float32(1)
        for i in range(8):
            with T.block("E"):
                vi = T.axis.spatial(8, i)
                E[vi] = A[vi] * T.float32(2)
        for ax0 in range(8):
            with T.block("B_shared"):
                v0 = T.axis.spatial(8, ax0)
                B_shared[v0] = B[v0]
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = B_shared[vi] * B_shared[vi]

    sch = Schedule(with_bystander)
    sch.cache_read(sch.get_block("C"), 0, "shared")
    check_schedule(sch, with_bystander, expected)


def test_cache_write_without_readers_copies_back_at_the_end_of_the_scope() -> None:
    @T.prim_func
    def expected(
        A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"), E: T.Buffer((8,), "float32")
    ):
        B = T.alloc_buffer((8,))
        E_local = T.alloc_buffer((8,), scope="local")
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] + T.float32(1)
        for i in range(8):
            with T.block("E"):
                vi = T.axis.spatial(8, i)
                E_local[vi] = A[vi] * T.float32(2)
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = B[vi] * B[vi]
        for ax0 in range(8):
            with T.block("E_local"):
                v0 = T.axis.spatial(8, ax0)
                E[v0] = E_local[v0]

    sch = Schedule(with_bystander)
    sch.cache_write(sch.get_block("E"), 0, "local")
    check_schedule(sch, with_bystander, expected)


@T.prim_func
def rows_under_a_block(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i in range(4):
        with T.block("outer"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi * 4 : vi * 4 + 2, 0:16], A[vi * 4 + 2 : vi * 4 + 4, 0:16])
            T.writes(C[vi * 4 : vi * 4 + 4, 0:16])
            for r, j in T.grid(4, 16):
                with T.block("C"):
                    vr, vj = T.axis.remap("SS", [r, j])
                    C[vi * 4 + vr, vj] = A[vi * 4 + vr, vj] + T.float32(1)


def test_cache_read_of_an_input_read_in_two_regions_covers_their_union() -> None:
    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i in range(4):
            with T.block("outer"):
                vi = T.axis.spatial(4, i)
                T.reads(A[vi * 4 : vi * 4 + 2, 0:16], A[vi * 4 + 2 : vi * 4 + 4, 0:16])
                T.writes(C[vi * 4 : vi * 4 + 4, 0:16])
                A_shared = T.alloc_buffer((4, 16), scope="shared")
                for ax0, ax1 in T.grid(4, 16):
                    with T.block("A_shared"):
                        v0, v1 = T.axis.remap("SS", [ax0, ax1])
                        A_shared[v0, v1] = A[vi * 4 + v0, v1]
                for r, j in T.grid(4, 16):
                    with T.block("C"):
                        vr, vj = T.axis.remap("SS", [r, j])
                        C[vi * 4 + vr, vj] = A_shared[vr, vj] + T.float32(1)

    sch = Schedule(rows_under_a_block)
    sch.cache_read(sch.get_block("C"), 0, "shared")
    check_schedule(sch, rows_under_a_block, expected)


def test_cache_write_under_a_block_is_compact() -> None:
    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i in range(4):
            with T.block("outer"):
                vi = T.axis.spatial(4, i)
                T.reads(A[vi * 4 : vi * 4 + 2, 0:16], A[vi * 4 + 2 : vi * 4 + 4, 0:16])
                T.writes(C[vi * 4 : vi * 4 + 4, 0:16])
                C_local = T.alloc_buffer((4, 16), scope="local")
                for r, j in T.grid(4, 16):
                    with T.block("C"):
                        vr, vj = T.axis.remap("SS", [r, j])
                        C_local[vr, vj] = A[vi * 4 + vr, vj] + T.float32(1)
                for ax0, ax1 in T.grid(4, 16):
                    with T.block("C_local"):
                        v0, v1 = T.axis.remap("SS", [ax0, ax1])
                        C[vi * 4 + v0, v1] = C_local[v0, v1]

    sch = Schedule(rows_under_a_block)
    sch.cache_write(sch.get_block("C"), 0, "local")
    check_schedule(sch, rows_under_a_block, expected)


@T.prim_func
def reads_before_write(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + T.float32(1)
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)


def test_cache_write_whose_reader_runs_first_in_the_loop_is_refused() -> None:
    sch = Schedule(reads_before_write)
    check_refused(sch, lambda: sch.cache_write(sch.get_block("B"), 0, "local"), "data-flow")


def test_a_hand_written_root_block_keeps_empty_regions() -> None:
    @T.prim_func
    def hand_written(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
        with T.block("root"):
            B = T.alloc_buffer((8,))
            for i in range(8):
                with T.block("B"):
                    vi = T.axis.spatial(8, i)
                    B[vi] = A[vi] * T.float32(2)
            for i in range(8):
                with T.block("C"):
                    vi = T.axis.spatial(8, i)
                    C[vi] = B[vi] + T.float32(1)

    root = hand_written.body.block
    assert root.name == "root" and root.reads == () and root.writes == ()
    # So cache_read of an input at the root copies the whole buffer, as in TVM.
    sch = Schedule(hand_written)
    cache = sch.cache_read(sch.get_block("B"), 0, "shared")
    copied = sch.get(cache)
    assert [str(r.extent) for r in copied.reads[0].region] == ["1"]
    assert int(sch.get(sch.get_loops(cache)[0]).extent) == 8


def test_regions_are_inferred_through_match_buffer_and_tvm_access_ptr() -> None:
    @T.prim_func
    def matched(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                sub = T.match_buffer(A[vi * 4 : vi * 4 + 4, 0:16], (4, 16))
                for j, k in T.grid(4, 16):
                    C[vi * 4 + j, k] = sub[j, k] * T.float32(2)

    @T.prim_func
    def pointers(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                T.evaluate(
                    T.call_extern(
                        "int32",
                        "copy16",
                        T.tvm_access_ptr(T.type_annotation("float32"), C.data, vi * 16, 16, 2),
                        T.tvm_access_ptr(T.type_annotation("float32"), A.data, vi * 16, 16, 1),
                    )
                )

    block = matched.body.block.body.body.block
    assert str(block.reads[0]) == str(block.writes[0]).replace("C", "A")
    assert [r.buffer.name for r in block.reads] == ["A"]
    # As in TVM, an access pointer covers the whole buffer, by its mask.
    block = pointers.body.block.body.body.block
    assert [(r.buffer.name, str(r.region[0].extent)) for r in block.reads] == [("A", "64")]
    assert [(r.buffer.name, str(r.region[0].extent)) for r in block.writes] == [("C", "64")]
