"""The DCT stages of JPEG decoding on the GPU (``cuda/jpeg_idct.cu``): libjpeg-turbo's decoding
set-up per file (``plan_jpeg``) and the two launches for a batch (``run_jpeg_decode``):
dequantization + IDCT per component plane, upsampling + colour + orientation per image."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..kernels import kernel_source
from .backend import BLOCK, Backend

PDESC_LEN = 8
IDESC_LEN = 32
MAX_GRID_Z = 65535
C_LEN = 7
# (swap axes, flip x, flip y) of EXIF orientations 1-8, as fastprep's CPU path applies them.
_ORIENT = {
    1: (False, False, False),
    2: (False, True, False),
    3: (False, True, True),
    4: (False, False, True),
    5: (True, False, False),
    6: (True, False, True),
    7: (True, True, True),
    8: (True, True, False),
}


@dataclass
class _Plane:
    """One component as libjpeg-turbo decodes it at a given scale."""

    wb: int  # blocks per row and block rows (libjpeg's width_in_blocks / height_in_blocks)
    hb: int
    scale: int  # DCT_scaled_size: 8, 4, 2 or 1
    dw: int  # downsampled_width / downsampled_height: the real samples
    dh: int
    mode: int  # 0 full size, 1 replicate, 2 h2v1 fancy, 3 h1v2 fancy, 4 h2v2 fancy
    hx: int
    vy: int
    quant: bytes


@dataclass
class JpegPlan:
    """How one JPEG decodes on the GPU at 1/denom scale: its planes and its output size."""

    width: int  # the decoded (scaled) image, before orientation
    height: int
    denom: int
    orientation: int
    planes: list[_Plane]

    @property
    def coefficients(self) -> int:
        return sum(p.wb * p.hb * 64 for p in self.planes)

    @property
    def oriented_size(self) -> tuple[int, int]:
        """(width, height) of the decoded image after EXIF orientation."""
        return (self.height, self.width) if _ORIENT[self.orientation][0] else (self.width, self.height)


def plan_jpeg(layout: dict[str, Any], denom: int = 1) -> JpegPlan | None:
    """libjpeg-turbo's decoding set-up for one file (jdmaster.c jpeg_calc_output_dimensions and
    jdsample.c jinit_upsampler): per component the DCT scale, the real sample size and the
    upsampler. None for what the kernels do not decode (CMYK, RGB-coded files, odd samplings,
    progressive files libjpeg-turbo block-smooths): those go through the CPU decoder."""
    if layout["color_space"] not in ("gray", "ycbcr") or denom not in (1, 2, 4, 8) or layout["block_smoothing"]:
        return None
    w, h, max_h, max_v = layout["width"], layout["height"], layout["max_h"], layout["max_v"]
    min_s = 8 // denom
    fancy = min_s > 1  # do_fancy: fancy upsampling is off at 1/8
    planes = []
    for _id, ch, cv, wb, hb, quant in layout["components"]:
        # Chroma is scaled up in the IDCT where the sampling ratio allows (jdmaster.c), so that
        # the upsampler has less to do.
        s = min_s
        while s < 8 and (max_h * min_s) % (ch * s * 2) == 0 and (max_v * min_s) % (cv * s * 2) == 0:
            s *= 2
        dw = -(-w * ch * s // (max_h * 8))
        dh = -(-h * cv * s // (max_v * 8))
        h_in, v_in = ch * s // min_s, cv * s // min_s
        hx, vy = 1, 1
        if h_in == max_h and v_in == max_v:
            mode = 0
        elif h_in * 2 == max_h and v_in == max_v and fancy and dw > 2:
            mode = 2
        elif h_in == max_h and v_in * 2 == max_v and fancy:
            mode = 3
        elif h_in * 2 == max_h and v_in * 2 == max_v and fancy and dw > 2:
            mode = 4
        elif max_h % h_in == 0 and max_v % v_in == 0:
            mode, hx, vy = 1, max_h // h_in, max_v // v_in
        else:
            return None
        planes.append(_Plane(wb, hb, s, dw, dh, mode, hx, vy, quant))
    return JpegPlan(-(-w // denom), -(-h // denom), denom, layout["orientation"], planes)


def _affine(plan: JpegPlan, offset: int) -> tuple[int, int, int]:
    """(byte offset of decoded pixel (0, 0), byte step per x, per y) in the oriented RGB image
    packed at `offset`: the CPU path's `orient` (output (ox, oy) reads source (sx, sy)) inverted."""
    swap, fx, fy = _ORIENT[plan.orientation]
    w, h = plan.width, plan.height
    ow = h if swap else w
    ax, ay = (ow * 3, 3) if swap else (3, ow * 3)  # byte steps of the source's x and y axes
    base = offset
    if fx:
        base += (w - 1) * ax
        ax = -ax
    if fy:
        base += (h - 1) * ay
        ay = -ay
    return base, ax, ay


def run_jpeg_decode(
    backend: Backend, coefs: Any, plans: list[JpegPlan], coef_offsets: list[int], dst: Any, dst_offsets: list[int]
) -> None:
    """Decodes the JPEGs whose coefficients (int16) are at coef_offsets[i] of `coefs` (a device
    array) into packed, oriented RGB at byte dst_offsets[i] of `dst` (uint8): one IDCT launch for
    every component plane of the batch, one upsampling + colour launch for every image."""
    import numpy as np

    xp = backend.xp
    source = kernel_source("jpeg_idct.cu")
    pdesc: list[tuple[int, ...]] = []
    idesc: list[Any] = []
    quant: list[Any] = []
    plane_bytes = 0
    for plan, coff, doff in zip(plans, coef_offsets, dst_offsets, strict=True):
        row = np.zeros(IDESC_LEN, np.int64)
        base, dx, dy = _affine(plan, doff)
        row[:6] = (plan.width, plan.height, len(plan.planes), base, dx, dy)
        for c, p in enumerate(plan.planes):
            pitch = p.wb * p.scale
            pdesc.append((coff, 64 * len(quant), p.wb, p.hb, plane_bytes, pitch, p.scale, 0))
            # libjpeg's ISLOW_MULT_TYPE is a short: a 16-bit table value wraps as it does there.
            quant.append(np.frombuffer(p.quant, np.uint16).view(np.int16).astype(np.int32))
            row[6 + c * C_LEN : 6 + (c + 1) * C_LEN] = (plane_bytes, pitch, p.dw, p.dh, p.mode, p.hx, p.vy)
            coff += p.wb * p.hb * 64
            plane_bytes += pitch * p.hb * p.scale
        idesc.append(row)
    planes = xp.empty(max(plane_bytes, 1), dtype="uint8")
    pd = np.asarray(pdesc, np.int64)
    q = backend.asarray(np.concatenate(quant))
    # Grid z is one plane / one image; CUDA allows 65535, so a larger batch takes more launches.
    for lo in range(0, len(pd), MAX_GRID_Z):
        part = pd[lo : lo + MAX_GRID_Z]
        grid = (-(-int(part[:, 2].max()) // BLOCK[0]), -(-int(part[:, 3].max()) // BLOCK[1]), len(part))
        backend.launch(source, {}, "jpeg_idct", grid, (coefs, q, planes, backend.asarray(part)))
    ides = np.stack(idesc)
    for lo in range(0, len(plans), MAX_GRID_Z):
        sub = plans[lo : lo + MAX_GRID_Z]
        grid = (-(-max(p.width for p in sub) // BLOCK[0]), -(-max(p.height for p in sub) // BLOCK[1]), len(sub))
        backend.launch(source, {}, "jpeg_color", grid, (planes, dst, backend.asarray(ides[lo : lo + MAX_GRID_Z])))
