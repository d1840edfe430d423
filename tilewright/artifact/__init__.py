"""What building produces and loading consumes: plain data, no IR.

``Artifact`` (the generated source, the compiled binary, and what a runtime needs to call
it), ``FuncSignature`` (a function's argument contract) and ``HostPlan`` (a GPU module's
launches). Code generation writes them; the runtime reads them; they serialize to JSON and
bytes so that another process can load a module without lowering it again.
"""

from tilewright.artifact.artifact import (
    SOURCE_FORMATS,
    TENSOR_MAP,
    Artifact,
    ArtifactError,
    KernelInfo,
    TensorMapParam,
    atomic_write,
    description_path,
)
from tilewright.artifact.host_plan import HostPlan, Launch, LaunchPlanError
from tilewright.artifact.signature import (
    BoundsCheck,
    Dim,
    FuncSignature,
    ParamSpec,
    SignatureError,
)

__all__ = [
    "SOURCE_FORMATS",
    "TENSOR_MAP",
    "Artifact",
    "ArtifactError",
    "BoundsCheck",
    "Dim",
    "FuncSignature",
    "HostPlan",
    "KernelInfo",
    "Launch",
    "LaunchPlanError",
    "ParamSpec",
    "SignatureError",
    "TensorMapParam",
    "atomic_write",
    "description_path",
]
