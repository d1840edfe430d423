"""The package order: importing ir, arith, layout or script loads no later package (no tirx).

Each package's modules are imported one by one in a fresh interpreter; after each import the
loaded ``tilewright.*`` packages must all come earlier in the pipeline (or be ``config``).
"""

import json
import subprocess
import sys

import pytest

# The pipeline order of docs/architecture.md, up to the tile layer; `config` is read by all.
ORDER = (
    "ir", "arith", "layout", "script", "schedule", "transform", "target", "codegen", "runtime",
    "tirx",
)  # fmt: skip
SHARED = ("config",)

PROBE = """
import importlib, json, pkgutil, sys

package = importlib.import_module(sys.argv[1])
allowed = set(json.loads(sys.argv[2]))
names = [package.__name__]
names += sorted(m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + "."))
for name in names:
    importlib.import_module(name)
    loaded = {m.split(".")[1] for m in sys.modules if m.startswith("tilewright.")}
    if loaded - allowed:
        print(json.dumps([name, sorted(loaded - allowed), "tilewright.tirx" in sys.modules]))
        break
else:
    print(json.dumps([None, len(names), "tilewright.tirx" in sys.modules]))
"""


@pytest.mark.parametrize("package", ["ir", "arith", "layout", "script"])
def test_package_imports_only_earlier_packages(package):
    allowed = [*ORDER[: ORDER.index(package) + 1], *SHARED]
    result = subprocess.run(
        [sys.executable, "-c", PROBE, f"tilewright.{package}", json.dumps(allowed)],
        capture_output=True,
        text=True,
        check=True,
    )
    culprit, detail, tirx_loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert culprit is None, f"importing {culprit} loads later package(s) {detail}"
    assert detail > 1  # the walk found the package's modules
    assert not tirx_loaded
