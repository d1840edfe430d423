from __future__ import annotations

import pytest

from tilewright import config


@pytest.fixture(scope="session")
def kernel_cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("kernel-cache")


@pytest.fixture(autouse=True)
def _kernel_cache(kernel_cache_dir):
    # Compiled kernels go to a per-session directory, not the user's cache.
    with config.scope(cache_dir=kernel_cache_dir):
        yield
