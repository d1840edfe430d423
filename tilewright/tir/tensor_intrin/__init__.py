"""TVM's ``tir.tensor_intrin`` namespace: importing ``cuda`` registers the CUDA tensor-core
intrinsics (``tilewright.schedule.tensor_intrin_cuda``)."""
