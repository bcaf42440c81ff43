"""The upload and entropy stage of ``preprocess(device="cuda")``: the pinned staging block holds
the compressed scans, the CPU-entropy-decoded coefficients and the CPU-decoded pixels; the scans are
entropy-decoded on the GPU while the CPU decodes the rest part by part, each part uploaded as it
is done. A file a decoder refuses goes to the CPU decoder, which has the last word (for the scans
the GPU flags, once the whole batch is queued: ``preprocess.py`` reads their status words)."""

from __future__ import annotations

import os
from typing import Any

from .. import _core
from .backend import Backend, _staging, _upload
from .jpeg_entropy import EntropyBatch, ScanPlan, decode_scans
from .jpeg_idct import JpegPlan
from .plan import _align, _cpu_decode, _Options, _Plan


def _upload_and_entropy(
    be: Backend, blobs: list[bytes], plan: _Plan, opts: _Options, limit: int | None, apply_exif_orientation: bool
) -> tuple[Any, Any]:
    """The device buffer of `plan`, with every coefficient and CPU-decoded pixel in place (once
    the queued work is done), and the device array of the GPU-decoded scans' status words (one
    per scan of `plan.scans`, in its order; None without any), not read here: the caller reads
    them, and has the CPU decode the scans they flag. JPEGs libjpeg-turbo's coefficient reader
    refuses leave `plan.jpegs` and are decoded on the CPU (libjpeg-turbo has the last word);
    their pixels (rarely any) are appended to the buffer, which is then returned grown."""
    xp = be.xp
    host, release = _staging(be, plan.staged)
    flat = xp.empty(max(plan.end, 1), dtype="uint8")
    refused, status = _entropy_decode(
        be,
        blobs,
        plan.jpegs,
        plan.scans,
        plan.scan_batch,
        plan.coef_offsets,
        (plan.gpu_coefs, plan.scan_at),
        host,
        flat,
        opts.num_threads,
    )
    late: dict[int, Any] = {}
    if refused:
        for i in refused:
            del plan.jpegs[i]
        late, late_over = _cpu_decode(
            blobs, refused, plan.layouts, opts.draft, opts.shorter, opts.size, limit, apply_exif_orientation, 1
        )
        plan.decoded.update(late)
        plan.cpu_over |= late_over
    for i, at in plan.pix_offsets.items():
        a = plan.decoded[i]
        host[at : at + a.size] = a.reshape(-1)
    _upload(be, flat, host, plan.cpu_pixels_at, plan.staged)
    release()  # the staging block goes back to its pool once the copies reading it are done
    plan.fused &= set(plan.jpegs)
    # After the rest (rarely) the pixels of JPEGs only the CPU decoder could read.
    late_at = off = plan.end
    for i, a in late.items():
        if a is not None:
            plan.pix_offsets[i] = off
            off += _align(a.size)
    if off > late_at:
        grown = xp.empty(off, dtype="uint8")
        grown[:late_at] = flat[:late_at]
        flat = grown
        for i, a in late.items():
            if a is not None:
                flat[plan.pix_offsets[i] : plan.pix_offsets[i] + a.size] = be.asarray(a.reshape(-1))
    return flat, status


def _entropy_decode(
    be: Backend,
    blobs: list[bytes],
    plans: dict[int, JpegPlan],
    scans: dict[int, ScanPlan],
    batch: EntropyBatch | None,
    coef_offsets: dict[int, int],
    at: tuple[int, int],
    host: Any,
    flat: Any,
    num_threads: int | None,
) -> tuple[list[int], Any]:
    """Every planned JPEG's coefficients into flat[coef_offsets[i]:]: the scans of `batch` go up
    (from `host`, at byte at[1] of both buffers) and are decoded on the GPU into the zeroed region
    from byte at[0]; the other JPEGs are entropy-decoded on the CPU into `host` and uploaded chunk
    by chunk meanwhile. Returns the JPEGs libjpeg-turbo's coefficient reader refused (the CPU
    decoder has the last word on those) and the GPU decoder's status array (or None)."""
    xp = be.xp
    gpu_coefs, scan_at = at
    coef_bytes = scan_at
    status = None
    if batch is not None:
        # Only the compressed scans go up: the GPU unstuffs and decodes them into coefficients
        # while the CPU entropy-decodes the other JPEGs below.
        for i, src in zip(scans, batch.src_offsets, strict=True):
            sp = scans[i]
            host[scan_at + src : scan_at + src + sp.end - sp.start] = memoryview(blobs[i])[sp.start : sp.end]
        _upload(be, flat, host, scan_at, scan_at + batch.nbytes)
        flat[gpu_coefs:coef_bytes] = 0
        coefs_all = flat[:coef_bytes].view(xp.int16)
        status = decode_scans(be, flat[scan_at : scan_at + batch.nbytes], batch, coefs_all)
    cpu_jpeg = [i for i in plans if i not in scans]
    refused: list[int] = []
    if cpu_jpeg:
        # Entropy decoding in a few chunks, each chunk's coefficients copied to the device
        # (asynchronously, from pinned memory) while the CPU decodes the next one.
        threads = num_threads or os.cpu_count() or 1
        chunks = max(1, min(4, len(cpu_jpeg) // threads))
        step = -(-len(cpu_jpeg) // chunks)
        errors: list[Any] = []
        for lo in range(0, len(cpu_jpeg), step):
            part = cpu_jpeg[lo : lo + step]
            errors += _core.jpeg_coefficients_into(
                [blobs[i] for i in part], [coef_offsets[i] for i in part], host, num_threads
            )
            end = coef_offsets[part[-1]] + _align(2 * plans[part[-1]].coefficients)
            _upload(be, flat, host, coef_offsets[part[0]], end)
        refused = [i for i, e in zip(cpu_jpeg, errors, strict=True) if e is not None]
    return refused, status
