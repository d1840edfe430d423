"""Every legality rule a primitive can cite has a negative test that checks it by name, and
every message cites its rule's statement."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tilewright.schedule import RULES, ScheduleError

TESTS = Path(__file__).parent


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_has_a_negative_test(rule: str) -> None:
    sources = "\n".join(p.read_text() for p in TESTS.glob("test_*.py") if p.name != "test_rules.py")
    assert re.search(rf'\.rule == "{re.escape(rule)}"', sources), f"no test checks rule {rule!r}"


def test_message_names_the_primitive_detail_and_rule() -> None:
    error = ScheduleError("split", "split-factors", "loop 'i': factor 0 is not positive")
    text = str(error)
    assert text.startswith("split: loop 'i': factor 0 is not positive\n")
    assert f"rule split-factors: {RULES['split-factors']}" in text
    assert error.ir == ""
