"""The examples of docs/meta_schedule.md run as written, one after another in one namespace,
and do what the text around them says."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).parents[2] / "docs" / "meta_schedule.md"


def test_the_design_space_guide_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 5
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    # The sampled matmul schedule and the explored one differ in the tiles only.
    index = namespace["index"]
    assert namespace["other"].trace.insts[index].decision == [2, 2, 16]  # type: ignore[attr-defined]
    assert namespace["report"].sampled == 4  # type: ignore[attr-defined]
    (space,) = namespace["ctx"].generate_design_space()  # type: ignore[attr-defined]
    assert "split" in str(space.trace)
    # The custom rule split the innermost loop of C by 8.
    script = namespace["spaces"][0].mod.script()  # type: ignore[index]
    assert "k_1 in range(8)" in script or ", 8)" in script, script
