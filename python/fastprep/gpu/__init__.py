"""GPU image preprocessing through CuPy: ``gpu_resize`` and ``preprocess(device="cuda")``.

The kernels are the CUDA sources of the repository's ``cuda/`` (shipped inside the extension),
compiled at run time by CuPy's NVRTC once per device and parameter set, then cached. The resize
weights come from the CPU path's own code (``fastprep._core.resize_tables``), so the GPU result
equals ``fastprep.resize``, and so Pillow's, byte for byte for uint8. Baseline JPEGs go up
compressed and are entropy-decoded on the GPU into libjpeg-turbo's exact coefficients
(``cuda/jpeg_entropy.cu``), the others by libjpeg-turbo on the CPU; kernels that follow
libjpeg-turbo's integer IDCT and upsampling exactly (``cuda/jpeg_idct.cu``) decode them, so
``preprocess(device="cuda")`` equals the CPU pipeline too. Most JPEGs are decoded and resized
horizontally by one kernel per row strip in shared memory (``cuda/jpeg_fused.cu``), and the
resize's two passes run as one launch (``resize_hv``): no full-size image or intermediate is
written to device memory.

Everything is ordered on the caller's current CuPy stream (a large batch runs in chunks on two
streams of its own that start after the caller's and that the caller's waits for, so one chunk's
upload and entropy decoding overlap the previous one's pixel kernels); the result is a CuPy array
(DLPack-exportable, so ``torch.from_dlpack(out)`` shares it). Nothing goes back to the host but
one status word per GPU-decoded JPEG.

The launch plan (tables, per-image descriptors, grids, the order of the passes) is built here
independently of the array library, so the tests run the very same plan through a CPU emulation
of the kernels (tests/cuda_emu.py) on machines without a GPU.

One module per kernel file of ``cuda/`` (``resize``, ``normalize``, ``jpeg_idct``,
``jpeg_entropy``, ``jpeg_fused``), ``backend`` (CuPy, pinned staging), and ``preprocess``'s
stages: ``plan`` (the host's plan of a batch), ``upload`` (staging, upload, entropy decoding),
``pixels`` (IDCT, resize, crop, normalize) and ``streams`` (the chunks of a batch on two streams).
"""

from __future__ import annotations

from . import jpeg_fused as jpeg_fused
from . import resize as resize
from . import streams as streams

# The public names, and (as explicit re-exports) what the tests and benchmarks reach; the mutable
# settings live in their modules: resize.H_SHARED, resize.FUSED, resize._RGBA_CHECKED,
# jpeg_fused.ENABLED, jpeg_idct.MAX_GRID_Z, streams.CHUNK.
from .backend import BLOCK as BLOCK
from .backend import Backend as Backend
from .backend import CupyBackend as CupyBackend
from .backend import _backend as _backend
from .jpeg_idct import JpegPlan as JpegPlan
from .jpeg_idct import plan_jpeg as plan_jpeg
from .jpeg_idct import run_jpeg_decode as run_jpeg_decode
from .plan import _align as _align
from .plan import _draft_denom as _draft_denom
from .preprocess import gpu_preprocess
from .resize import gpu_resize
from .resize import run_resize as run_resize

__all__ = ["gpu_preprocess", "gpu_resize"]
