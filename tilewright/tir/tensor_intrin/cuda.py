"""TVM's ``tir.tensor_intrin.cuda``: the tensor-core intrinsics and their name constants,
defined in ``tilewright.schedule.tensor_intrin_cuda``.

Example::

    from tilewright.tir.tensor_intrin.cuda import MMA_f16f16f32_INTRIN, get_mma_intrin_group
"""

from tilewright.schedule.tensor_intrin_cuda import *  # noqa: F403 - a re-export
from tilewright.schedule.tensor_intrin_cuda import (  # noqa: F401 - the helpers by name
    INTRIN_NAMES,
    get_mma_intrin_group,
    ldmatrix_32x8_to_shared_16x16_layout,
    shared_16x16_to_ldmatrix_32x8_layout,
)

globals().update(INTRIN_NAMES)
