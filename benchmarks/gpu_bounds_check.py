"""Bounds checks on the GPU: ``benchmarks/bounds_check.py``'s CUDA cases alone (the notebook's
``blocking_with_shared`` matmul and a gather, plain / checked / every access checked), named
``gpu_*`` so that ``scripts/gpu-check`` runs it on the device. Writes JSON under $OUT when set.

    python benchmarks/gpu_bounds_check.py [--size 1024] [--rounds 5]
"""

import sys

from bounds_check import main  # the script's directory is on sys.path when it runs

if __name__ == "__main__":
    sys.argv.append("--gpu-only")
    main()
