"""loop_partition: TVM's layout (common and partition blocks, renamed copies), inferred and
remainder partitions, nested partitions, reductions, and every rule it enforces."""

from __future__ import annotations

from schedule_checks import check_refused, check_schedule

from tilewright.ir import IntImm
from tilewright.script import tir as T
from tilewright.tir import Schedule


@T.prim_func
def elementwise(A: T.Buffer((16, 8, 4), "float32"), B: T.Buffer((16, 8, 4), "float32")):
    for i, j, k in T.grid(16, 8, 4):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


def _loops(func=elementwise, block="B"):
    sch = Schedule(func)
    return sch, sch.get_loops(block)


def test_partition_with_a_remainder_then_a_nested_partition() -> None:
    @T.prim_func
    def expected(A: T.Buffer((16, 8, 4), "float32"), B: T.Buffer((16, 8, 4), "float32")):
        with T.block("root"):
            T.reads()
            T.writes()
            with T.block("B_i_common"):
                with T.block("B_i0_partition"):
                    for i0 in range(2):
                        with T.block("B_i0_j_common"):
                            with T.block("B_i0_j0_partition"):
                                for j0, k in T.grid(3, 4):
                                    with T.block("B_i0_j0"):
                                        vi = T.axis.spatial((0, 2), i0)
                                        vj = T.axis.spatial((0, 3), j0)
                                        vk = T.axis.spatial(4, k)
                                        B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)
                            with T.block("B_i0_j1_partition"):
                                for j1 in T.serial(3, 8):
                                    for k in range(4):
                                        with T.block("B_i0_j1"):
                                            vi = T.axis.spatial((0, 2), i0)
                                            vj = T.axis.spatial((3, 8), j1)
                                            vk = T.axis.spatial(4, k)
                                            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)
                with T.block("B_i1_partition"):
                    for i1 in T.serial(2, 3):
                        for j, k in T.grid(8, 4):
                            with T.block("B_i1"):
                                vi = T.axis.spatial((2, 3), i1)
                                vj, vk = T.axis.remap("SS", [j, k])
                                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)
                with T.block("B_i2_partition"):
                    for i2 in T.serial(3, 11):
                        for j, k in T.grid(8, 4):
                            with T.block("B_i2"):
                                vi = T.axis.spatial((3, 11), i2)
                                vj, vk = T.axis.remap("SS", [j, k])
                                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)
                with T.block("B_i3_partition"):
                    for i3 in T.serial(11, 16):
                        for j, k in T.grid(8, 4):
                            with T.block("B_i3"):
                                vi = T.axis.spatial((11, 16), i3)
                                vj, vk = T.axis.remap("SS", [j, k])
                                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)

    sch, (i, _, _) = _loops()
    parts = sch.loop_partition(i, factors=[2, 1, 8])
    assert [(sch.get(p).min.value, sch.get(p).extent.value) for p in parts] == [
        (0, 2),
        (2, 1),
        (3, 8),
        (11, 5),
    ]
    _, j, _ = sch.get_loops(sch.get_block("B_i0"))
    assert len(sch.loop_partition(j, factors=[3])) == 2
    check_schedule(sch, elementwise, expected)
    assert sch.trace.as_python()[2] == (
        "l4, l5, l6, l7 = sch.loop_partition(loop=l1, factors=[2, 1, 8], preserve_unit_iters=True)"
    )


def test_none_takes_what_the_other_factors_leave() -> None:
    @T.prim_func
    def expected(A: T.Buffer((16, 8, 4), "float32"), B: T.Buffer((16, 8, 4), "float32")):
        for i, j in T.grid(16, 8):
            with T.block("B_k_common"):
                with T.block("B_k0_partition"):
                    for _k0 in range(1):
                        with T.block("B_k0"):
                            vi, vj = T.axis.remap("SS", [i, j])
                            vk = T.axis.spatial((0, 1), 0)
                            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)
                with T.block("B_k1_partition"):
                    for k1 in T.serial(1, 4):
                        with T.block("B_k1"):
                            vi, vj = T.axis.remap("SS", [i, j])
                            vk = T.axis.spatial((1, 4), k1)
                            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)

    sch, (_, _, k) = _loops()
    sch.loop_partition(k, [IntImm(1, "int32"), None], preserve_unit_iters=False)
    check_schedule(sch, elementwise, expected)


def test_partitions_of_a_reduction_initialise_once() -> None:
    @T.prim_func
    def row_sum(A: T.Buffer((4, 6), "float32"), B: T.Buffer((4,), "float32")):
        for i, k in T.grid(4, 6):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]

    @T.prim_func
    def expected(A: T.Buffer((4, 6), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("B_k_common"):
                with T.block("B_k0_partition"):
                    for k0 in range(4):
                        with T.block("B_k0"):
                            vi = T.axis.spatial(4, i)
                            vk = T.axis.reduce(6, k0)
                            with T.init():
                                B[vi] = T.float32(0)
                            B[vi] = B[vi] + A[vi, vk]
                with T.block("B_k1_partition"):
                    for k1 in T.serial(4, 6):
                        with T.block("B_k1"):
                            vi = T.axis.spatial(4, i)
                            vk = T.axis.reduce(6, k1)
                            with T.init():
                                B[vi] = T.float32(0)
                            B[vi] = B[vi] + A[vi, vk]

    sch, (_, k) = _loops(row_sum)
    sch.loop_partition(k, [4])
    check_schedule(sch, row_sum, expected)


def test_blocks_nested_in_an_opaque_block_are_renamed_too() -> None:
    @T.prim_func
    def nested(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("outer"):  # noqa: SIM117 (one item a with)
                with T.block("B"):
                    vi = T.axis.remap("S", [i])
                    B[vi] = A[vi] + T.float32(1)

    @T.prim_func
    def expected(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        with T.block("root"):
            T.reads()
            T.writes()
            with T.block("outer_i_common"):
                with T.block("outer_i0_partition"):
                    for i0 in range(6):
                        with T.block("outer_i0"):  # noqa: SIM117 (one item a with)
                            with T.block("B_i0"):
                                vi = T.axis.spatial((0, 6), i0)
                                B[vi] = A[vi] + T.float32(1)
                with T.block("outer_i1_partition"):
                    for i1 in T.serial(6, 8):
                        with T.block("outer_i1"):  # noqa: SIM117 (one item a with)
                            with T.block("B_i1"):
                                vi = T.axis.spatial((6, 8), i1)
                                B[vi] = A[vi] + T.float32(1)

    sch, (i,) = _loops(nested, "outer")
    sch.loop_partition(i, [None, 2])
    check_schedule(sch, nested, expected)


def test_partition_loops_take_later_primitives() -> None:
    sch, (i, _, _) = _loops()
    first, rest = sch.loop_partition(i, [4])
    sch.split(first, [2, 2])
    sch.parallel(rest)
    check_schedule(sch, elementwise)


def test_a_sampled_factor_is_recorded_as_its_reference() -> None:
    sch, (i, _, _) = _loops()
    length = sch.sample_categorical([4, 6], [0.5, 0.5], decision=1)
    first, _ = sch.loop_partition(i, [length])
    assert sch.get(first).extent.value == 6
    assert "factors=[v4]" in sch.trace.as_python()[-1]
    check_schedule(sch, elementwise)


# ---- rules ---------------------------------------------------------------------------------


def test_refuses_factors_that_do_not_fit_the_loop() -> None:
    sch, (i, _, _) = _loops()
    cases = [
        ([8, 8], "sum to 16, not less than its extent 16"),
        ([None, 16], "sum to 16, not less than its extent 16"),
        ([None, None], "at most one factor may be None"),
        ([4, 0], "factor 1 is 0, not positive"),
        ([], "no factors given"),
        (3, "is not a list"),
    ]
    for factors, match in cases:
        error = check_refused(sch, lambda factors=factors: sch.loop_partition(i, factors), match)
        assert error.rule == "partition-factors"
    error = check_refused(sch, lambda: sch.loop_partition(i, [2.5]), "factor 2.5 is not an int")
    assert error.rule == "argument"


def test_refuses_a_loop_of_symbolic_range() -> None:
    @T.prim_func
    def symbolic(a: T.handle, n: T.int32):
        A = T.match_buffer(a, (n,), "float32")
        for i in range(n):
            with T.block("A"):
                vi = T.axis.remap("S", [i])
                A[vi] = T.float32(1)

    sch, (i,) = _loops(symbolic, "A")
    error = check_refused(sch, lambda: sch.loop_partition(i, [2]), "has the symbolic range")
    assert error.rule == "partition-factors"
    assert "for i in range(n):  # <-- here" in str(error)


def test_refuses_a_bound_or_annotated_loop() -> None:
    sch, (i, j, _) = _loops()
    sch.bind(i, "blockIdx.x")
    sch.annotate(j, "key", 1)
    error = check_refused(sch, lambda: sch.loop_partition(i, [2]), "is bound to blockIdx.x")
    assert error.rule == "plain-loop"
    error = check_refused(sch, lambda: sch.loop_partition(j, [2]), "has annotations")
    assert error.rule == "plain-loop"


def test_refuses_a_partition_that_would_duplicate_a_block_name() -> None:
    @T.prim_func
    def taken(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi]
        for i in range(8):
            with T.block("B_i0"):
                vi = T.axis.remap("S", [i])
                A[vi] = T.float32(0)

    sch, (i,) = _loops(taken)
    error = check_refused(
        sch, lambda: sch.loop_partition(i, [4]), "would make a second block named 'B_i0'"
    )
    assert error.rule == "unique-block-names"
