"""The CUDA runtime: NVRTC/nvcc compilation, driver-API launches, device memory, events."""

from tilewright.runtime.cuda_runtime.driver import CUDAError, device_arch, device_count
from tilewright.runtime.cuda_runtime.nvrtc import CUDACompileError, compile_cuda

__all__ = ["CUDACompileError", "CUDAError", "compile_cuda", "device_arch", "device_count"]
