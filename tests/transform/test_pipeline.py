from __future__ import annotations

import numpy as np
import pytest
from evaluator import run
from hypothesis import given, settings
from hypothesis import strategies as st

from tilewright import config
from tilewright.backend import lowering_stages
from tilewright.driver import lower
from tilewright.ir import (
    IfThenElse,
    IRModule,
    PrimFunc,
    Ramp,
    assert_structural_equal,
    decl_buffer,
    op,
    seq,
)

from .programs import (
    ALL,
    R,
    S,
    arg,
    assert_passes_preserve,
    const,
    grid,
    loop,
    realize,
    root,
    store,
    var,
)

STAGE_NAMES = [
    "verify_bounds",
    "lower_init_block",
    "collect_storage_align",
    "lower_blocks",
    "inline_unit_loops",
    "plan_buffer_allocation",
    "compact_buffer_allocation",
    "inject_software_pipeline",
    "apply_storage_align",
    "flatten_buffers",
    "apply_unroll_pragmas",
    "simplify",
    "lower_vectorized",
    "remove_no_op",
    "verify",
]


def test_stages_run_in_documented_order():
    assert [s.name for s in lowering_stages("c")] == STAGE_NAMES
    assert [s.name for s in lowering_stages("llvm")] == STAGE_NAMES


def test_unknown_target_kind_is_rejected():
    with pytest.raises(ValueError, match="unknown target 'vulkan'; known kinds: c, llvm, cuda"):
        lower(IRModule({"main": ALL["vector_add"]().func}), "vulkan")


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_stage_preserves_results(name):
    assert_passes_preserve(ALL[name](), [s.run for s in lowering_stages("c")])


def test_matmul_lowers_to_the_expected_loop_nest():
    func = ALL["matmul"]().func
    got = lower(IRModule({"main": func}))["main"]
    (_, a), (_, b), (_, c) = func.buffer_map
    a1, b1, c1 = (
        decl_buffer((n,), "float32", x.name, data=x.data) for x, n in ((a, 128), (b, 192), (c, 96))
    )
    i, j, k = var("i"), var("j"), var("k")
    body = seq(
        IfThenElse(op.eq(k, 0), store(c1, 0.0, i * 12 + j)),
        store(c1, c1[i * 12 + j] + a1[i * 16 + k] * b1[k * 12 + j], i * 12 + j),
    )
    expected = PrimFunc(func.params, grid([i, j, k], [8, 12, 16], body), func.buffer_map)
    assert_structural_equal(got, expected)


def test_params_and_buffer_map_are_kept():
    func = ALL["root_alloc"]().func
    got = lower(IRModule({"main": func}))["main"]
    assert got.params is func.params and got.buffer_map is func.buffer_map


def test_every_function_of_the_module_is_lowered():
    mod = IRModule({"add": ALL["vector_add"]().func, "mm": ALL["matmul"]().func})
    got = lower(mod)
    assert list(got) == ["add", "mm"]
    x = [np.ones((8, 16), "float32"), np.ones((16, 12), "float32"), np.zeros((8, 12), "float32")]
    np.testing.assert_array_equal(run(got["mm"], *x)[2], np.full((8, 12), 16.0, "float32"))


def test_dump_dir_gets_one_file_per_stage(tmp_path):
    mod = IRModule({"mm": ALL["matmul"]().func})
    with config.scope(dump_dir=tmp_path):
        lower(mod, "c")
    names = sorted(p.name for p in tmp_path.iterdir())
    expected = ["mm.00_input.txt"] + [f"mm.{n:02d}_{s}.txt" for n, s in enumerate(STAGE_NAMES, 1)]
    assert names == expected
    assert "T.init()" in (tmp_path / "mm.00_input.txt").read_text()
    assert "T.block" not in (tmp_path / "mm.04_lower_blocks.txt").read_text()


def test_dump_dir_defaults_to_config(tmp_path):
    with config.scope(dump_dir=tmp_path / "ir"):
        lower(IRModule({"main": ALL["vector_add"]().func}))
    assert (tmp_path / "ir" / "main.10_flatten_buffers.txt").exists()


def test_no_dump_without_dump_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with config.scope(dump_dir=None):
        lower(IRModule({"main": ALL["vector_add"]().func}))
    assert list(tmp_path.iterdir()) == []


# The seed notebook's programs, small, through the parser (both spellings), lowered and run.
_NOTEBOOK = {
    "vector_add": """
@T.prim_func
def main(
    A: T.Buffer[(16,), "float32"], B: T.Buffer[(16,), "float32"], C: T.Buffer[(16,), "float32"]
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i in T.grid(16):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = A[vi] + B[vi]
""",
    "window_sum": """
@T.prim_func
def main(A: T.Buffer((19,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.grid(16):
        with T.sblock("C"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] + A[vi + 1] + A[vi + 2]
""",
    "matmul": """
@T.prim_func
def main(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0.0
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
""",
    "scheduled_matmul": """
@T.prim_func
def main(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    C_local = T.alloc_buffer((16, 16), scope="local")
    for i_0, j_0 in T.grid(2, 2):
        for k_1, i_1, k_0, j_1 in T.grid(4, 8, 4, 8):
            with T.block("C"):
                vi = T.axis.spatial(16, i_0 * 8 + i_1)
                vj = T.axis.spatial(16, j_0 * 8 + j_1)
                vk = T.axis.reduce(16, k_0 * 4 + k_1)
                with T.init():
                    C_local[vi, vj] = T.float32(0)
                C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
        for ax0, ax1 in T.grid(8, 8):
            with T.block("C_local"):
                v0 = T.axis.spatial(16, i_0 * 8 + ax0)
                v1 = T.axis.spatial(16, j_0 * 8 + ax1)
                C[v0, v1] = C_local[v0, v1]
""",
    "predicated_shared_copy": """
@T.prim_func
def main(A: T.Buffer((19,), "float32"), B: T.Buffer((16,), "float32")):
    A_shared = T.alloc_buffer((19,), scope="shared")
    for i_0 in range(2):
        for ax0_0, ax0_1 in T.grid(2, 8):
            with T.block("A_shared"):
                v0 = T.axis.spatial(19, i_0 * 8 + (ax0_0 * 8 + ax0_1))
                T.where(ax0_0 * 8 + ax0_1 < 11)
                A_shared[v0] = A[v0]
        for i_1 in range(8):
            with T.block("C"):
                vi = T.axis.spatial(16, i_0 * 8 + i_1)
                B[vi] = A_shared[vi] + A_shared[vi + 1] + A_shared[vi + 2]
""",
}


def _notebook_reference(name, x):
    if name == "vector_add":
        return [x[0], x[1], x[0] + x[1]]
    if name in ("window_sum", "predicated_shared_copy"):
        return [x[0], x[0][:16] + x[0][1:17] + x[0][2:18]]
    return [x[0], x[1], x[0] @ x[1]]


@pytest.mark.parametrize("name", sorted(_NOTEBOOK))
def test_notebook_programs_lower_and_match_numpy(name):
    from tilewright import script

    header = "from tilewright.script import tir as T\n"
    func = script.from_source(header + _NOTEBOOK[name])
    func = func["main"] if isinstance(func, IRModule) else func
    shapes = [tuple(int(s) for s in b.shape) for _, b in func.buffer_map]
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(s).astype("float32") for s in shapes]
    lowered = lower(IRModule({"main": func}))["main"]
    for got, want in zip(run(lowered, *inputs), _notebook_reference(name, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    for got, want in zip(run(lowered, *inputs), run(func, *inputs)):
        np.testing.assert_array_equal(got, want)


@settings(max_examples=12, deadline=None)
@given(
    k_inner=st.sampled_from([1, 2, 4, 8]),
    order=st.permutations(["i", "j", "k_0", "k_1"]),
)
def test_reduction_init_is_correct_for_any_split_and_loop_order(k_inner, order):
    m, n, k = 3, 4, 8
    args = [arg("A", (m, k)), arg("B", (k, n)), arg("C", (m, n))]
    (_, a), (_, b), (_, c) = args
    loops = {name: var(name) for name in ("i", "j", "k_0", "k_1")}
    extents = {"i": m, "j": n, "k_0": k // k_inner, "k_1": k_inner}
    vi, vj, vk = var("vi"), var("vj"), var("vk")
    block = realize(
        "C",
        [
            (vi, m, S, loops["i"]),
            (vj, n, S, loops["j"]),
            (vk, k, R, loops["k_0"] * k_inner + loops["k_1"]),
        ],
        store(c, c[vi, vj] + a[vi, vk] * b[vk, vj], vi, vj),
        init=store(c, 0.0, vi, vj),
    )
    func = root(args, grid([loops[x] for x in order], [extents[x] for x in order], block))
    lowered = lower(IRModule({"main": func}))["main"]
    rng = np.random.default_rng(2)
    x = [rng.standard_normal(s).astype("float32") for s in ((m, k), (k, n))]
    x.append(np.full((m, n), np.nan, "float32"))  # init must overwrite whatever C held
    np.testing.assert_allclose(run(lowered, *x)[2], x[0] @ x[1], rtol=1e-5, atol=1e-5)


def test_pass_errors_name_the_function_and_stage():
    func = ALL["vector_add"]().func
    # A block with iterators but no bindings cannot be lowered.
    realize_ = func.body.block.body.body
    loop_ = func.body.block.body.replace(body=realize_.replace(iter_values=()))
    bad = func.with_body(func.body.replace(block=func.body.block.replace(body=loop_)))
    with pytest.raises(ValueError, match="block 'C' has 1") as info:
        lower(IRModule({"vadd": bad}))
    # The pass's own error (type and message kept), with a note naming function and stage.
    assert type(info.value) is ValueError
    assert info.value.__notes__ == ["while building 'vadd', stage lower_blocks"]


def test_a_lone_function_is_lowered_as_main():
    got = lower(ALL["vector_add"]().func)
    assert list(got) == ["main"]
    x = [np.arange(16, dtype="float32")] * 2 + [np.zeros(16, "float32")]
    np.testing.assert_array_equal(run(got["main"], *x)[2], x[0] * 2)


def test_vector_accesses_survive_the_whole_pipeline():
    args = [arg("A", (4, 8)), arg("C", (4, 8))]
    (_, a), (_, c) = args
    i = var("i")
    lanes = Ramp(const(0), const(1), 8)
    body = loop(i, 4, store(c, a[i, lanes] + a[i, lanes], i, lanes))
    func = PrimFunc(tuple(v for v, _ in args), body, tuple(args))
    got = lower(func)["main"]
    index = got.body.body.indices[0]
    assert isinstance(index, Ramp) and index.lanes == 8
    x = np.arange(32, dtype="float32").reshape(4, 8)
    np.testing.assert_array_equal(run(got, x, np.zeros_like(x))[1], x * 2)
