"""The pixel stage of ``preprocess(device="cuda")``: from the coefficients and CPU-decoded pixels
on the device to the batch: the kernels' IDCT and colour conversion (fused with the horizontal
resize pass where the JPEG allows), the resize of each crop window, and normalize into the batch's
dtype and layout."""

from __future__ import annotations

from typing import Any

from . import jpeg_fused
from .backend import Backend
from .jpeg_idct import run_jpeg_decode
from .normalize import normalize_table, run_normalize
from .plan import _crop_windows, _Options, _Plan
from .resize import _Image, run_resize


def _pixels(be: Backend, plan: _Plan, opts: _Options, flat: Any, ok_idx: list[int], out: Any) -> None:
    """Into `out` (the batch's rows of these images, flat and zeroed: the rows not in `ok_idx` stay
    zero), from the coefficients and pixels in `flat`: the kernels' IDCT and colour conversion
    (fused with the horizontal pass where the JPEG allows), the resize of each crop window, and
    normalize into the batch's dtype and layout."""
    import numpy as np

    xp = be.xp
    cw, ch = opts.cw, opts.ch
    per = cw * ch * 3
    n = out.size // per
    if not ok_idx:
        return
    jpegs, fused = plan.jpegs, plan.fused
    coefs = flat[: plan.coef_bytes].view(xp.int16)
    if len(fused) < len(jpegs):
        idx = [i for i in jpegs if i not in fused]
        run_jpeg_decode(
            be,
            coefs,
            [jpegs[i] for i in idx],
            [plan.coef_offsets[i] // 2 for i in idx],
            flat,
            [plan.rgb_offsets[i] for i in idx],
        )
    where = {i: plan.rgb_offsets.get(i, 0) if i in jpegs else plan.pix_offsets[i] for i in ok_idx}
    srcs, targets, windows = _crop_windows(
        ok_idx, jpegs, plan.layouts, plan.decoded, where, opts.draft, opts.shorter, opts.size, cw, ch
    )

    def fused_into(pos: list[int], out: Any, out_images: list[_Image], lut: Any = None) -> None:
        """Runs the fused decode + resize of the images ok_idx[k] for k in pos."""
        jpeg_fused.run_fused(
            be,
            coefs,
            [jpegs[ok_idx[k]] for k in pos],
            [plan.coef_offsets[ok_idx[k]] // 2 for k in pos],
            [targets[k] for k in pos],
            [windows[k] for k in pos],
            opts.filter,
            out,
            out_images,
            lut,
        )

    everything = range(len(ok_idx))
    if fused == set(ok_idx) and all(targets[k][1] != jpegs[i].oriented_size[1] for k, i in enumerate(ok_idx)):
        # Every image fused and resized vertically too: the vertical pass writes the batch
        # itself, in its dtype (through the normalize table) and layout.
        lut = None if opts.dtype == "uint8" else normalize_table(be, opts.mean, opts.std, opts.dtype)
        sy, sx, sc = (cw, 1, cw * ch) if opts.layout == "NCHW" else (cw * 3, 3, 1)
        fused_into(list(everything), out, [_Image(int(i) * per, ch, cw, sy, sx, sc) for i in ok_idx], lut)
        return
    # The packed HWC uint8 crops: the batch itself where it is that (NHWC uint8, every image).
    in_place = opts.dtype == "uint8" and opts.layout == "NHWC" and len(ok_idx) == n
    crops = out if in_place else xp.empty(len(ok_idx) * per, dtype="uint8")
    outs = [_Image(k * per, ch, cw, cw * 3, 3, 1) for k in everything]
    pos = [k for k, i in enumerate(ok_idx) if i in fused]
    if pos:
        fused_into(pos, crops, [outs[k] for k in pos])
    rest = [k for k, i in enumerate(ok_idx) if i not in fused]
    if rest:
        run_resize(
            be,
            flat,
            [srcs[k] for k in rest],
            3,
            "uint8",
            [targets[k] for k in rest],
            [windows[k] for k in rest],
            opts.filter,
            True,
            crops,
            [outs[k] for k in rest],
        )
    if in_place:
        return
    rows = out.reshape(n, per)
    if opts.dtype == "uint8":
        packed = crops.reshape(len(ok_idx), ch, cw, 3)
        if opts.layout == "NCHW":
            packed = packed.transpose(0, 3, 1, 2)
        dense = packed.reshape(len(ok_idx), per) if opts.layout == "NHWC" else packed
    else:
        into = out if len(ok_idx) == n else None  # written in place: nothing to copy after
        dense = run_normalize(be, crops, len(ok_idx), cw, ch, opts.mean, opts.std, opts.dtype, opts.layout, into)
        if into is not None:
            return
    if len(ok_idx) == n:
        rows.reshape(dense.shape)[...] = dense  # one copy (the transpose too, for uint8 NCHW)
    else:
        rows[xp.asarray(np.asarray(ok_idx))] = dense.reshape(len(ok_idx), per)
