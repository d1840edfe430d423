"""``Artifact``: what building produces and loading consumes, as plain serialisable data.

Code generation yields an artifact holding source only; the backend's compiler adds the
binary (a shared library, a cubin). An artifact holds everything a runtime needs to load and
call the kernels: the argument contract of each callable function, the host launch plans
of a GPU module, each kernel's parameter types and dynamic shared memory. It carries no IR,
so another process (a tuner's runner, a later session) loads it without lowering again.

On disk an artifact is a documented pair: ``path`` holds the payload (the binary, or the
source when there is none) and ``path + ".json"`` the description (``save`` / ``load``).
In memory, ``to_bytes`` / ``from_bytes`` give one byte string for pipes and queues.

Example::

    >>> art = tw.backend.compile(mod, "cuda")     # lowered, generated and compiled
    >>> data = art.to_bytes()                      # send it anywhere
    >>> rt_mod = tw.runtime.load(Artifact.from_bytes(data))
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from tilewright.artifact.host_plan import HostPlan
from tilewright.artifact.signature import FuncSignature

FORMAT = "tilewright.artifact"
VERSION = 2


class ArtifactError(ValueError):
    """An artifact file that is missing, damaged or of another format."""


# A kernel parameter of this kind is a TMA tensor map passed by value (``KernelInfo``).
TENSOR_MAP = "tensor_map"


@dataclasses.dataclass(frozen=True)
class TensorMapParam:
    """A kernel's tensor-map parameter: the runtime encodes it at launch from the argument
    passed for function parameter ``param`` (its address, shape and strides), with this
    element ``dtype``, ``box`` (outermost first) and ``swizzle`` (bytes), and passes its 128
    bytes by value as the kernel's parameter number ``index``.

    Example: ``TensorMapParam(2, "A", "float16", (128, 64), 128)``.
    """

    index: int
    param: str
    dtype: str
    box: tuple[int, ...]
    swizzle: int

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"box": list(self.box)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> TensorMapParam:
        return TensorMapParam(
            int(data["index"]),
            str(data["param"]),
            str(data["dtype"]),
            tuple(int(b) for b in data["box"]),
            int(data["swizzle"]),
        )


@dataclasses.dataclass(frozen=True)
class KernelInfo:
    """A device kernel: per parameter ``None`` (a pointer), a scalar dtype or ``TENSOR_MAP``;
    the bytes of dynamic shared memory its declarations need; and its tensor-map parameters
    (one ``TensorMapParam`` per ``TENSOR_MAP`` in ``params``)."""

    params: tuple[str | None, ...]
    dyn_shared_bytes: int = 0
    tensor_maps: tuple[TensorMapParam, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "params": list(self.params),
            "dyn_shared_bytes": self.dyn_shared_bytes,
        }
        if self.tensor_maps:  # kernels without maps are described as before
            data["tensor_maps"] = [m.to_json() for m in self.tensor_maps]
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> KernelInfo:
        maps = tuple(TensorMapParam.from_json(m) for m in data.get("tensor_maps", ()))
        return KernelInfo(tuple(data["params"]), data["dyn_shared_bytes"], maps)


@dataclasses.dataclass(frozen=True)
class Artifact:
    """A built module.

    Attributes:
        format: how the payload is loaded: ``"c-library"`` (a shared library),
            ``"cubin"`` (CUDA), ``"opencl-source"`` (built by the OpenCL driver on load)
            or ``"source"`` (text only: nothing here can run it).
        target: the target it was built for, as spelled (``"nvidia/h200"``).
        kind: the target kind (``"c"``, ``"cuda"``, ...).
        source: the generated source text.
        binary: the compiled payload; empty for the source formats.
        functions: the callable functions' argument contracts, in module order.
        host_plans: for a GPU module, each function's launches.
        kernels: for a GPU module, its kernels by name.
        arch: the architecture the binary was compiled for (``"sm_90"``).
        suffix: the source's file suffix (``"c"``, ``"cu"``, ``"cl"``, ``"metal"``).
        device: the kind of device the kernels run on (``"cpu"``, ``"cuda"``, ...).
        local_file: a file holding ``binary`` in this process, when the compiler left one.
    """

    format: str
    target: str
    kind: str
    source: str
    binary: bytes = b""
    functions: tuple[FuncSignature, ...] = ()
    host_plans: tuple[HostPlan, ...] = ()
    kernels: dict[str, KernelInfo] = dataclasses.field(default_factory=dict)
    arch: str = ""
    suffix: str = "txt"
    device: str = "cpu"
    # Where this process already has the binary as a file (the compiler's cache); never
    # serialised, so a loaded artifact writes its own copy.
    local_file: Path | None = dataclasses.field(default=None, compare=False, repr=False)

    def replace(self, **changes: Any) -> Artifact:
        """A copy with ``changes``. Example: ``art.replace(format="cubin", binary=cubin)``."""
        return dataclasses.replace(self, **changes)

    @property
    def digest(self) -> str:
        """A content hash of the payload (names cached files)."""
        return hashlib.sha256(self.binary or self.source.encode()).hexdigest()[:32]

    def describe(self) -> dict[str, Any]:
        """The JSON description: everything but the payload."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "artifact_format": self.format,
            "target": self.target,
            "kind": self.kind,
            "arch": self.arch,
            "suffix": self.suffix,
            "device": self.device,
            "source": self.source,
            "functions": [sig.to_json() for sig in self.functions],
            "host_plans": [plan.to_json() for plan in self.host_plans],
            "kernels": {name: k.to_json() for name, k in self.kernels.items()},
        }

    @staticmethod
    def from_description(meta: dict[str, Any], binary: bytes, where: str = "") -> Artifact:
        """The artifact described by ``meta`` (``describe()``'s output) with ``binary``."""
        if meta.get("format") != FORMAT:
            raise ArtifactError(f"{where or 'data'} is not a tilewright artifact description")
        if meta.get("version") != VERSION:
            raise ArtifactError(
                f"{where or 'artifact'} has version {meta.get('version')}; this tilewright "
                f"reads version {VERSION}: build it again"
            )
        return Artifact(
            format=meta["artifact_format"],
            target=meta["target"],
            kind=meta["kind"],
            source=meta["source"],
            binary=binary,
            functions=tuple(FuncSignature.from_json(f) for f in meta["functions"]),
            host_plans=tuple(HostPlan.from_json(p) for p in meta["host_plans"]),
            kernels={name: KernelInfo.from_json(k) for name, k in meta["kernels"].items()},
            arch=meta["arch"],
            suffix=meta["suffix"],
            device=meta["device"],
        )

    def to_bytes(self) -> bytes:
        """One byte string: the description's length, the description, the payload."""
        meta = json.dumps(self.describe()).encode()
        return len(meta).to_bytes(8, "little") + meta + self.binary

    @staticmethod
    def from_bytes(data: bytes) -> Artifact:
        """The artifact ``to_bytes`` wrote."""
        size = int.from_bytes(data[:8], "little")
        try:
            meta = json.loads(data[8 : 8 + size])
        except ValueError as err:
            raise ArtifactError(f"not a tilewright artifact: {err}") from None
        return Artifact.from_description(meta, bytes(data[8 + size :]))

    def save(self, path: str | Path) -> Path:
        """Write the payload to ``path`` and the description to ``path + ".json"``.

        Example: ``art.save("matmul.so")`` writes ``matmul.so`` and ``matmul.so.json``.
        """
        out = Path(path).absolute()
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(out, self.binary or self.source.encode())
        atomic_write(description_path(out), json.dumps(self.describe(), indent=1).encode())
        return out

    @staticmethod
    def load(path: str | Path) -> Artifact:
        """The artifact ``save`` wrote at ``path`` (relative paths are from the current
        directory)."""
        payload = Path(path).absolute()
        meta_file = description_path(payload)
        if not payload.exists():
            raise FileNotFoundError(f"load_module: no file at {path}")
        if not meta_file.exists():
            raise FileNotFoundError(
                f"load_module: {path} has no description {meta_file.name}; "
                "write it with Module.export_library"
            )
        try:
            meta = json.loads(meta_file.read_text())
        except ValueError as err:
            raise ArtifactError(f"load_module: {meta_file} is damaged: {err}") from None
        artifact = Artifact.from_description(meta, b"", str(meta_file))
        data = payload.read_bytes()
        if artifact.format in SOURCE_FORMATS:
            return artifact
        return artifact.replace(binary=data)


# Formats whose payload is the source itself (nothing compiled ahead of loading).
SOURCE_FORMATS = ("source", "opencl-source")


def description_path(path: Path) -> Path:
    """Where the description of the artifact saved at ``path`` lives."""
    return path.with_name(path.name + ".json")


def atomic_write(path: Path, data: str | bytes, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
