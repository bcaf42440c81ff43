"""The plan of a ``preprocess(device="cuda")`` batch, made on the host before anything goes to the
device: the transform asked for (``_Options``), which decoder takes each file (the kernels, with
the JPEG's plan and, for baseline ones, its scan's; or the CPU), the CPU decodes themselves, and
where each file's data lies in the one device buffer (``_Plan``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import _core
from ..errors import DecodeError
from ..image import Filter, _decode_all
from . import jpeg_fused
from .jpeg_entropy import EntropyBatch, ScanPlan, parse_scan, plan_batch
from .jpeg_idct import JpegPlan, plan_jpeg
from .resize import _Image


def _resized_size(shorter: int | None, size: tuple[int, int] | None, w: int, h: int) -> tuple[int, int]:
    # torchvision's Resize(int): int(size * long / short), as the CPU pipeline (pipeline.rs) does.
    if size is not None:
        return size
    assert shorter is not None
    return (shorter, int(shorter * h / w)) if w <= h else (int(shorter * w / h), shorter)


def _draft_denom(layout: dict[str, Any], shorter: int | None, size: tuple[int, int] | None) -> int:
    """The CPU pipeline's draft scale (pipeline.rs `draft_denominator`, Pillow's `draft`): the
    largest of 8, 4, 2, 1 not above the stored size over the target, the target computed from
    the oriented full-size image and turned back to the stored orientation."""
    sw, sh = layout["width"], layout["height"]
    swapped = layout["orientation"] >= 5
    w, h = (sh, sw) if swapped else (sw, sh)
    rw, rh = _resized_size(shorter, size, w, h)
    tw, th = (rh, rw) if swapped else (rw, rh)
    scale = min(sw // max(tw, 1), sh // max(th, 1))
    # 1 also where the image is smaller than the target (scale 0: upscaled), as pipeline.rs does
    return next((a for a in (8, 4, 2, 1) if scale >= a), 1)


def _align(n: int, to: int = 256) -> int:
    return -(-n // to) * to


def _plan_jpegs(
    blobs: list[bytes],
    layouts: list[dict[str, Any] | tuple[str, str]],
    draft: bool,
    shorter: int | None,
    size: tuple[int, int] | None,
    entropy: str,
) -> tuple[dict[int, JpegPlan], dict[int, ScanPlan]]:
    """The JPEGs the kernels decode, with their plans (the rest go through the CPU decoder), and
    of those the baseline ones whose scans the GPU entropy-decodes (the others, progressive or
    arithmetic, are entropy-decoded by libjpeg-turbo on the CPU)."""
    plans: dict[int, JpegPlan] = {}
    scans: dict[int, ScanPlan] = {}
    for i, lay in enumerate(layouts):
        if not isinstance(lay, dict):
            continue
        plan = plan_jpeg(lay, _draft_denom(lay, shorter, size) if draft else 1)
        if plan is None:
            continue
        plans[i] = plan
        sp = parse_scan(blobs[i], lay) if entropy == "gpu" else None
        if sp is not None:
            scans[i] = sp
    return plans, scans


@dataclass(frozen=True)
class _Options:
    """The transform a call asks for, checked."""

    shorter: int | None
    size: tuple[int, int] | None
    cw: int
    ch: int
    mean: Sequence[float]
    std: Sequence[float]
    layout: str
    dtype: str
    filter: Filter
    draft: bool
    num_threads: int | None
    entropy: str

    @staticmethod
    def checked(
        shorter: int | None,
        size: tuple[int, int] | None,
        crop: int | tuple[int, int] | None,
        mean: Sequence[float],
        std: Sequence[float],
        layout: str,
        dtype: str,
        filter: Filter,
        draft: bool,
        num_threads: int | None,
        on_error: str,
        entropy: str,
    ) -> _Options:
        if size is not None:
            size = (int(size[0]), int(size[1]))
            shorter = None
        cw, ch = (crop, crop) if isinstance(crop, int) else (crop if crop is not None else (0, 0))
        if crop is None:
            if size is None:
                raise ValueError(
                    "images of different shapes cannot share a batch: give crop=..., or size=(width, height)"
                )
            cw, ch = size
        if dtype not in ("float32", "float16", "uint8") or layout not in ("NCHW", "NHWC"):
            raise ValueError(
                f"dtype must be float32, float16 or uint8 and layout NCHW or NHWC, got {dtype!r}, {layout!r}"
            )
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
        if entropy not in ("gpu", "cpu"):
            raise ValueError(f"entropy must be 'gpu' or 'cpu', got {entropy!r}")
        return _Options(shorter, size, cw, ch, mean, std, layout, dtype, filter, draft, num_threads, entropy)


@dataclass
class _Plan:
    """Where each file of a batch goes and where its data lies in the device buffer, in byte
    order: the coefficients (CPU-entropy JPEGs' first, uploaded; then the GPU-entropy ones',
    zeroed and written on the device), the compressed scans, the CPU-decoded pixels (these three
    are the upload, ``staged`` bytes), then each kernel-decoded JPEG's full-size RGB image unless
    it is decoded fused with its horizontal resize (``end`` bytes in all)."""

    layouts: list[dict[str, Any] | tuple[str, str]]
    jpegs: dict[int, JpegPlan]  # the JPEGs the kernels decode
    scans: dict[int, ScanPlan]  # of those, the ones entropy-decoded on the GPU
    scan_batch: EntropyBatch | None
    coef_offsets: dict[int, int]
    coef_bytes: int
    gpu_coefs: int  # where the GPU-entropy JPEGs' coefficients start
    decoded: dict[int, Any]  # CPU-decoded pixels (None: refused)
    cpu_over: set[int]  # of those, the ones over MAX_IMAGE_PIXELS
    pix_offsets: dict[int, int]
    staged: int
    fused: set[int]
    rgb_offsets: dict[int, int]
    end: int

    @property
    def scan_at(self) -> int:
        return self.coef_bytes

    @property
    def cpu_pixels_at(self) -> int:
        return self.coef_bytes + (_align(self.scan_batch.nbytes) if self.scan_batch else 0)


def _plan(
    blobs: list[bytes], opts: _Options, limit: int | None, apply_exif_orientation: bool, kernels: bool = True
) -> _Plan:
    """Reads the headers, plans the kernel-decoded JPEGs and their scans, decodes the other files
    on the CPU, and lays the device buffer out (see `_Plan`). ``kernels=False`` has the CPU
    decode every file."""
    layouts = _core.jpeg_layouts(blobs, limit, apply_exif_orientation, opts.num_threads) if blobs else []
    jpegs: dict[int, JpegPlan] = {}
    scans: dict[int, ScanPlan] = {}
    if kernels:
        jpegs, scans = _plan_jpegs(blobs, layouts, opts.draft, opts.shorter, opts.size, opts.entropy)
    coef_offsets: dict[int, int] = {}
    coef_bytes = 0
    for i in [*(i for i in jpegs if i not in scans), *scans]:
        coef_offsets[i] = coef_bytes
        coef_bytes += _align(2 * jpegs[i].coefficients)
    gpu_coefs = coef_offsets[next(iter(scans))] if scans else coef_bytes
    scan_batch = None
    if scans:
        lays = [lay for i in scans if isinstance(lay := layouts[i], dict)]
        scan_batch = plan_batch(list(scans.values()), lays, [coef_offsets[i] // 2 for i in scans])
    staged = coef_bytes + (_align(scan_batch.nbytes) if scan_batch else 0)
    cpu_idx = [i for i in range(len(blobs)) if i not in jpegs]
    decoded, cpu_over = _cpu_decode(
        blobs, cpu_idx, layouts, opts.draft, opts.shorter, opts.size, limit, apply_exif_orientation, opts.num_threads
    )
    pix_offsets: dict[int, int] = {}
    for i, a in decoded.items():
        if a is not None:
            pix_offsets[i] = staged
            staged += _align(a.size)
    # JPEGs decoded and resized horizontally in one kernel (jpeg_fused): no full-size image.
    fused = {
        i
        for i, jp in jpegs.items()
        if jpeg_fused.fusable(jp, *_target(jp, layouts[i], opts.shorter, opts.size, opts.cw, opts.ch), opts.filter)
    }
    rgb_offsets: dict[int, int] = {}
    end = staged
    for i, jp in jpegs.items():
        if i not in fused:
            rgb_offsets[i] = end
            end += _align(jp.width * jp.height * 3)
    return _Plan(
        layouts,
        jpegs,
        scans,
        scan_batch,
        coef_offsets,
        coef_bytes,
        gpu_coefs,
        decoded,
        cpu_over,
        pix_offsets,
        staged,
        fused,
        rgb_offsets,
        end,
    )


def _target(
    plan: JpegPlan,
    layout: dict[str, Any] | tuple[str, str],
    shorter: int | None,
    size: tuple[int, int] | None,
    cw: int,
    ch: int,
) -> tuple[tuple[int, int], tuple[int, int, int, int]]:
    """The resize target and crop window of a kernel-decoded JPEG, from its oriented full-size
    image (as `_crop_windows` computes them; a crop that does not fit is refused there)."""
    assert isinstance(layout, dict)
    swap = plan.orientation >= 5
    fw, fh = (layout["height"], layout["width"]) if swap else (layout["width"], layout["height"])
    tw, th = _resized_size(shorter, size, fw, fh)
    return (tw, th), (round((tw - cw) / 2.0), round((th - ch) / 2.0), min(cw, tw), min(ch, th))


def _crop_windows(
    ok_idx: list[int],
    plans: dict[int, JpegPlan],
    layouts: list[dict[str, Any] | tuple[str, str]],
    decoded: dict[int, Any],
    where: dict[int, int],
    draft: bool,
    shorter: int | None,
    size: tuple[int, int] | None,
    cw: int,
    ch: int,
) -> tuple[list[_Image], list[tuple[int, int]], list[tuple[int, int, int, int]]]:
    """Per decoded image (at byte where[i] of the device buffer): its RGB image, its resize target
    and the centred crop window of that target."""
    srcs, targets, windows = [], [], []
    for i in ok_idx:
        if i in plans:
            lay = layouts[i]
            assert isinstance(lay, dict)
            swap = plans[i].orientation >= 5
            fw, fh = (lay["height"], lay["width"]) if swap else (lay["width"], lay["height"])
            w, h = plans[i].oriented_size
        else:
            h, w = decoded[i].shape[:2]
            fw, fh = _full_size(layouts[i], w, h, draft)
        # The target comes from the full-size image, also after a draft decode (as the CPU
        # pipeline does, so that draft and exact mode crop the same region).
        tw, th = _resized_size(shorter, size, fw, fh)
        if cw > tw or ch > th:
            raise ValueError(f"crop {cw}x{ch} does not fit in the resized {tw}x{th} image {i}")
        windows.append((round((tw - cw) / 2.0), round((th - ch) / 2.0), cw, ch))
        targets.append((tw, th))
        srcs.append(_Image(where[i], h, w, w * 3, 3, 1))
    return srcs, targets, windows


def _full_size(layout: dict[str, Any] | tuple[str, str], w: int, h: int, draft: bool) -> tuple[int, int]:
    """The oriented full-size (width, height) of a CPU-decoded image of (w, h): a JPEG decoded
    at a draft scale is as large as its header says."""
    if not draft or not isinstance(layout, dict):
        return w, h
    swap = layout["orientation"] >= 5
    return (layout["height"], layout["width"]) if swap else (layout["width"], layout["height"])


def _cpu_decode(
    blobs: list[bytes],
    idx: list[int],
    layouts: list[dict[str, Any] | tuple[str, str]],
    draft: bool,
    shorter: int | None,
    size: tuple[int, int] | None,
    limit: int | None,
    apply_exif_orientation: bool,
    num_threads: int | None,
) -> tuple[dict[int, Any], set[int]]:
    """RGB arrays (None for a failure) of the images the kernels do not decode: in one parallel
    batch, except JPEGs that draft mode decodes at a reduced scale (CMYK and the like); and
    which of them the core found over ``MAX_IMAGE_PIXELS``."""
    import numpy as np

    out: dict[int, Any] = {}
    over: set[int] = set()
    scaled = {}
    for i in idx:
        lay = layouts[i]
        denom = _draft_denom(lay, shorter, size) if draft and isinstance(lay, dict) else 1
        if denom > 1:
            scaled[i] = denom
    plain = [i for i in idx if i not in scaled]
    if plain:
        arrays, _, plain_over = _decode_all(
            [blobs[i] for i in plain], "RGB", apply_exif_orientation, limit, num_threads
        )
        out.update(zip(plain, arrays, strict=True))
        over.update(plain[k] for k, _, _ in plain_over)
    for i, denom in scaled.items():
        try:
            pixels, big = _core.decode_image(blobs[i], "RGB", apply_exif_orientation, limit, denom)
        except DecodeError:
            out[i] = None
            continue
        out[i] = np.asarray(pixels)
        if big:
            over.add(i)
    return out, over
