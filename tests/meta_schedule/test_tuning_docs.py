"""The examples of docs/tuning.md run as written (in a temporary directory), one after
another in one namespace, and leave what the text says."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tilewright import config

DOC = Path(__file__).parents[2] / "docs" / "tuning.md"


@pytest.mark.skipif(shutil.which(config.get().cc) is None, reason="no C compiler")
def test_the_tuning_guide_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 5
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    # Two sessions into one work_dir: 8 + 8 trials, no candidate measured twice.
    records = namespace["records"]
    assert len({r.candidate_shash for r in records}) == 16  # type: ignore[attr-defined]
    assert len(records) > 16  # type: ignore[arg-type]  # leaders timed again
    assert (tmp_path / "tune_matmul" / "tuning_curve.csv").exists()
    assert namespace["gpu_runner"].evaluator_config.warmup_ms == 700  # type: ignore[attr-defined]
    again = namespace["database"].get_all_tuning_records()  # type: ignore[attr-defined]
    assert len({r.candidate_shash for r in again}) == 8
