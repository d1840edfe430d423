"""Target tags: named devices and the attributes (arch, limits, core count) a build needs."""

from __future__ import annotations

# Per-kind defaults. The CUDA figures are those of sm_90; a tag refines them for one device.
# OpenCL guarantees 32 KiB of local memory on full-profile devices; Metal threadgroups too.
KIND_DEFAULTS: dict[str, dict[str, str | int]] = {
    "c": {
        "arch": "",
        "max_num_threads": 1,
        "max_shared_memory_per_block": 0,
        "thread_warp_size": 1,
        "num_cores": 0,  # 0: as many as the host has
    },
    "cuda": {
        "arch": "sm_90",
        "max_num_threads": 1024,
        "max_shared_memory_per_block": 232448,
        "thread_warp_size": 32,
        "num_cores": 132,
    },
    "opencl": {
        "arch": "",
        "max_num_threads": 256,
        "max_shared_memory_per_block": 32768,
        "thread_warp_size": 1,
        "num_cores": 0,
    },
    "metal": {
        "arch": "apple",
        "max_num_threads": 256,
        "max_shared_memory_per_block": 32768,
        "thread_warp_size": 32,
        "num_cores": 0,
    },
}

# Spellings accepted for each kind; the first is the kind itself.
KIND_ALIASES: dict[str, str] = {
    "c": "c",
    "llvm": "c",
    "cuda": "cuda",
    "nvptx": "cuda",
    "opencl": "opencl",
    "metal": "metal",
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
