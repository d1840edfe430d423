"""Config knobs: values from the environment and from scope/set converted to their types."""

from __future__ import annotations

from pathlib import Path

import pytest
from seed_notebook import MyModuleVecAdd

import tilewright as tw
from tilewright import config


def test_the_docstring_example_dumps_each_stage_under_a_string_dir(tmp_path):
    with config.scope(dump_dir=str(tmp_path / "ir")):
        assert config.get().dump_dir == tmp_path / "ir"
        tw.build(MyModuleVecAdd, target="c")
    assert any(p.name.endswith("_lower_blocks.txt") for p in (tmp_path / "ir").iterdir())


def test_scope_converts_strings_and_restores_the_settings():
    before = config.get()
    with config.scope(cache_dir="~/tw", fuzz_cases="12", slow_tests="TRUE", cc=Path("/x/cc")):
        now = config.get()
        assert now.cache_dir == Path.home() / "tw"
        assert now.fuzz_cases == 12 and now.slow_tests is True and now.cc == "/x/cc"
        assert config.fuzz_cases == 12  # module attributes read the settings in force
    assert config.get() is before


@pytest.mark.parametrize(
    ("text", "value"),
    [
        *[("1", True), ("true", True), ("Yes", True), ("on", True)],
        *[("0", False), ("false", False), ("NO", False), (" off ", False)],
    ],
)
def test_bool_spellings(text, value):
    with config.scope(color=text):
        assert config.get().color is value


def test_none_only_where_the_knob_is_optional():
    with config.scope(dump_dir=None):
        assert config.get().dump_dir is None
    with pytest.raises(TypeError, match=r"config\.cache_dir: expected a path, got None"):
        config.set(cache_dir=None)


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"fuzz_cases": "many"}, ValueError, r"config\.fuzz_cases: expected an integer, got 'ma"),
        ({"fuzz_cases": True}, TypeError, r"config\.fuzz_cases: expected an integer, got True"),
        ({"fuzz_cases": 2.5}, TypeError, r"config\.fuzz_cases: expected an integer"),
        ({"slow_tests": "maybe"}, ValueError, r"config\.slow_tests: expected a bool .*'maybe'"),
        ({"slow_tests": 2}, TypeError, r"config\.slow_tests: expected a bool"),
        ({"dump_dir": 3}, TypeError, r"config\.dump_dir: expected a path, got 3"),
        ({"dump_dir": ""}, ValueError, r"config\.dump_dir: expected a path, got ''"),
        ({"cc": ["gcc"]}, TypeError, r"config\.cc: expected a string"),
    ],
)
def test_a_bad_value_names_the_knob_and_changes_nothing(changes, error, message):
    before = config.get()
    with pytest.raises(error, match=message), config.scope(**changes):
        pass
    with pytest.raises(error, match=message):
        config.set(**changes)
    assert config.get() is before


def test_an_unknown_knob_is_named_with_the_closest_one():
    close = r"no knob 'dump_dirs' \(did you mean 'dump_dir'\?\)"
    with pytest.raises(TypeError, match=close), config.scope(dump_dirs="/tmp/ir"):
        pass
    with pytest.raises(TypeError, match=r"no knob 'verbose'; the knobs are cache_dir, dump_dir"):
        config.set(verbose=True)
    with pytest.raises(TypeError, match="no knob 'verbose'"):
        config.get().verbose = True  # type: ignore[attr-defined]  # the mistake under test


def test_set_lasts_until_the_enclosing_scope_ends():
    before = config.get()
    with config.scope():
        assert config.set(fuzz_cases="7").fuzz_cases == 7
        assert config.get().fuzz_cases == 7
    assert config.get() is before


def test_assigning_a_field_converts_it(tmp_path):
    settings = config.Config()
    settings.dump_dir = str(tmp_path)  # type: ignore[assignment]  # converted on assignment
    assert settings.dump_dir == tmp_path


def test_environment_values_are_converted(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEWRIGHT_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("TILEWRIGHT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TILEWRIGHT_FUZZ_CASES", "30")
    monkeypatch.setenv("TILEWRIGHT_SLOW_TESTS", "false")  # was true: any value but "" and "0"
    monkeypatch.setenv("TILEWRIGHT_CC", "gcc -O1")
    settings = config.Config()
    assert settings.dump_dir == tmp_path and settings.cache_dir == tmp_path / "cache"
    assert settings.fuzz_cases == 30 and settings.slow_tests is False
    assert settings.cc == "gcc -O1"


def test_empty_environment_values_mean_unset(monkeypatch):
    for name in ("TILEWRIGHT_DUMP_DIR", "TILEWRIGHT_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, "")
    for name in ("TILEWRIGHT_FUZZ_CASES", "TILEWRIGHT_SLOW_TESTS", "TILEWRIGHT_CC"):
        monkeypatch.setenv(name, "")
    settings = config.Config()
    assert settings.dump_dir is None
    assert settings.cache_dir == Path.home() / ".cache" / "tilewright"
    assert settings.fuzz_cases == 200 and settings.slow_tests is False and settings.cc == "cc"


def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("TILEWRIGHT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert config.Config().cache_dir == tmp_path / "tilewright"


@pytest.mark.parametrize(
    ("variable", "text", "message"),
    [
        ("TILEWRIGHT_FUZZ_CASES", "lots", r"config\.fuzz_cases \(from \$TILEWRIGHT_FUZZ_CASES\)"),
        ("TILEWRIGHT_SLOW_TESTS", "sure", r"config\.slow_tests \(from \$TILEWRIGHT_SLOW_TESTS\)"),
    ],
)
def test_a_bad_environment_value_names_the_variable(monkeypatch, variable, text, message):
    monkeypatch.setenv(variable, text)
    with pytest.raises(ValueError, match=message):
        config.Config()


@pytest.mark.parametrize(
    ("text", "value"), [("true", True), ("1", True), ("woodpecker", True), ("false", False)]
)
def test_ci_is_any_value_but_an_empty_or_false_one(monkeypatch, text, value):
    # CI belongs to the CI system, which may set it to its own name.
    monkeypatch.setenv("CI", text)
    assert config.Config().ci is value
