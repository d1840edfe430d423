"""Target tags: named devices and the attributes (arch, limits, core count) a build needs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class KindSpec:
    """A target kind: its name, other spellings, default attributes, and the kind of its
    host code (``None`` for a kind that is itself the host).

    A backend row (``tilewright.backend``) names one; ``Target(spec)`` makes a target of it.
    """

    name: str
    aliases: tuple[str, ...]
    defaults: Mapping[str, str | int]
    host_kind: str | None = "c"


# The CUDA figures are those of sm_90; a tag refines them for one device. OpenCL guarantees
# 32 KiB of local memory on full-profile devices; Metal threadgroups too. A static shared
# limit of 0 means no limit of its own below max_shared_memory_per_block.
C_KIND = KindSpec(
    "c",
    ("llvm",),
    {"arch": "", "max_num_threads": 1, "max_shared_memory_per_block": 0,
     "max_static_shared_memory_per_block": 0, "thread_warp_size": 1,
     "num_cores": 0},  # 0: as many as the host has
    host_kind=None,
)  # fmt: skip
CUDA_KIND = KindSpec(
    "cuda",
    ("nvptx",),
    {"arch": "sm_90", "max_num_threads": 1024, "max_shared_memory_per_block": 232448,
     "max_static_shared_memory_per_block": 49152, "thread_warp_size": 32, "num_cores": 132,
     "max_thread_z": 64, "max_grid_y": 65535, "max_grid_z": 65535},
)  # fmt: skip
OPENCL_KIND = KindSpec(
    "opencl",
    (),
    {"arch": "", "max_num_threads": 256, "max_shared_memory_per_block": 32768,
     "max_static_shared_memory_per_block": 0, "thread_warp_size": 1, "num_cores": 0},
)  # fmt: skip
METAL_KIND = KindSpec(
    "metal",
    (),
    {"arch": "apple", "max_num_threads": 256, "max_shared_memory_per_block": 32768,
     "max_static_shared_memory_per_block": 0, "thread_warp_size": 32, "num_cores": 0},
)  # fmt: skip
KINDS: tuple[KindSpec, ...] = (C_KIND, CUDA_KIND, OPENCL_KIND, METAL_KIND)

# Spellings accepted for each kind → its record.
KIND_ALIASES: dict[str, KindSpec] = {
    name: spec for spec in KINDS for name in (spec.name, *spec.aliases)
}

# max_shared_memory_per_block is the opt-in limit per block (above the static 48 KiB).
TAGS: dict[str, dict[str, str | int]] = {
    "nvidia/h200": {
        "kind": "cuda",
        "arch": "sm_90",
        "max_num_threads": 1024,
        "max_shared_memory_per_block": 232448,
        "thread_warp_size": 32,
        "num_cores": 132,
    },
    "nvidia/h100": {
        "kind": "cuda",
        "arch": "sm_90",
        "max_num_threads": 1024,
        "max_shared_memory_per_block": 232448,
        "thread_warp_size": 32,
        "num_cores": 132,
    },
    "nvidia/a100": {
        "kind": "cuda",
        "arch": "sm_80",
        "max_num_threads": 1024,
        "max_shared_memory_per_block": 166912,
        "thread_warp_size": 32,
        "num_cores": 108,
    },
    "nvidia/tesla-p100": {
        "kind": "cuda",
        "arch": "sm_60",
        "max_num_threads": 1024,
        "max_shared_memory_per_block": 49152,
        "thread_warp_size": 32,
        "num_cores": 56,
    },
    "nvidia/geforce-rtx-2080-ti": {
        "kind": "cuda",
        "arch": "sm_75",
        "max_num_threads": 1024,
        "max_shared_memory_per_block": 65536,
        "thread_warp_size": 32,
        "num_cores": 68,
    },
}


def list_tags() -> list[str]:
    """The known tag names, sorted.

    Example::

        >>> "nvidia/h200" in list_tags()
        True
    """
    return sorted(TAGS)
