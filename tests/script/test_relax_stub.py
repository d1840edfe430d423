"""Relax is not part of tilewright: its names import (the notebook's import cell runs) and
any use says so, pointing to the compatibility table."""

from __future__ import annotations

import pytest


def test_notebook_import_cell_runs() -> None:
    import tilewright as tvm
    from tilewright import relax
    from tilewright.script import relax as R
    from tilewright.script import tir as T

    assert T.prim_func is not None
    assert tvm.relax is relax
    assert R.__name__ == "tilewright.script.relax"


@pytest.mark.parametrize(
    ("module", "name", "shown"),
    [
        ("tilewright.script.relax", "function", "R.function"),
        ("tilewright.script.relax", "Tensor", "R.Tensor"),
        ("tilewright.relax", "build", "relax.build"),
        ("tilewright.relax", "transform", "relax.transform"),
    ],
)
def test_any_use_raises_a_clear_error(module: str, name: str, shown: str) -> None:
    import importlib

    from tilewright.script.relax import RelaxNotSupportedError

    mod = importlib.import_module(module)
    with pytest.raises(RelaxNotSupportedError, match="Relax, TVM's graph-level IR") as info:
        getattr(mod, name)
    assert str(info.value).startswith(f"{shown}: ")
    assert "docs/tvm-compat.md" in str(info.value)
    assert isinstance(info.value, NotImplementedError)


def test_decorating_with_relax_fails_at_the_decorator() -> None:
    from tilewright.script import relax as R
    from tilewright.script.relax import RelaxNotSupportedError

    with pytest.raises(RelaxNotSupportedError, match=r"R\.function"):

        @R.function
        def main(x):  # pragma: no cover - never defined
            return x


def test_module_protocol_lookups_stay_attribute_errors() -> None:
    import inspect

    from tilewright import relax

    assert not hasattr(relax, "__wrapped__")
    assert inspect.ismodule(relax)
