"""GPU benchmarks, written as JSON (run by benches/gpu/run.sh on a GPU machine).

- gpu_resize of a batch of 1080p uint8 RGB images to 224x224 and to 455x256 (bilinear,
  antialiased) against ``torchvision.transforms.v2.functional.resize(antialias=True)`` on the same
  GPU and ``cv2.resize`` (INTER_AREA and INTER_LINEAR) on the CPU, one thread;
- the resize kernels' effective memory bandwidth: bytes the passes must read and write (input,
  intermediate, output) over the GPU time, against the device's peak;
- correctness first: the GPU result equals ``fastprep.resize`` on the CPU (max difference);
- the JPEG path end to end (first, as it is the figure the run is for), encoded bytes to a
  normalized 224x224 NCHW float32 batch of 64 1080p q90 JPEGs: ``fastprep.preprocess(device="cuda")``
  with entropy decoding on the GPU (the default) and on the CPU (``entropy="cpu"``), against
  ``torchvision.io.decode_jpeg(device="cuda")`` (nvJPEG) + resize + crop + normalize on the GPU and
  fastprep's CPU pipeline: the GPU entropy decoder's coefficients against libjpeg-turbo's, the max
  difference of each path from the CPU pipeline (fastprep's must be 0), time per batch, GPU time
  per kernel, bytes sent to the device against the JPEG bytes, copies each way (CUPTI), and
  latency P50/P95/P99 at batch sizes 1, 4, 16 and 64.

GPU times are CUDA-event times of the median of repeated runs after warm-up.

``--emulate`` runs every part of this script at a tiny size with no CuPy and no CUDA: numpy
arrays and the CPU emulation of the kernels (``tests/cuda_emu.py``) stand in for the device,
``time.perf_counter`` for CUDA events, torchvision's CPU ``decode_jpeg`` for nvJPEG; what needs
CUDA itself (CUPTI copy counts, the device's peak bandwidth) is skipped with a printed line and
listed under ``"skipped"``. The JSON has the same keys, its figures mean nothing: it is the check
(tests/test_gpu_bench_smoke.py) that the script runs on the GPU machine the first time, where
device time is scarce. The exit status is 1 when a part of fastprep's own failed or differed
from the CPU (the JSON keeps the other parts' results either way).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import fastprep
from fastprep import gpu
from fastprep.gpu import backend as gpu_backend


class _WallEvent:
    """A CUDA event's stand-in for the emulation, whose kernels have finished when launch returns."""

    t = 0.0

    def record(self) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass


class _Device:
    """What the benchmark asks of the device: CuPy and CUDA events on a GPU, or (``emulate``)
    numpy and the CPU emulation of the kernels, at sizes small enough for it."""

    def __init__(self, emulate: bool) -> None:
        self.emulate = emulate
        self.skipped: list[str] = []
        if emulate:
            sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
            from tests.cuda_emu import EmuBackend

            self.be: Any = EmuBackend()
            self.xp: Any = np
            self.name = "CPU emulation of the CUDA kernels (tests/cuda_emu.py), no GPU"
            self.torch_device = "cpu"
        else:
            import cupy

            self.be = gpu._backend()
            self.xp = cupy
            self.name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
            self.torch_device = "cuda"

    def skip(self, what: str) -> None:
        """Say (once) what the emulation leaves out or replaces."""
        if what not in self.skipped:
            print(f"emulation: {what}", flush=True)
            self.skipped.append(what)

    def repeat(self, n: int) -> int:
        return min(n, 2) if self.emulate else n

    def sync(self) -> None:
        if not self.emulate:
            self.xp.cuda.Device().synchronize()

    def event(self) -> Any:
        return _WallEvent() if self.emulate else self.xp.cuda.Event()

    def elapsed(self, start: Any, end: Any) -> float:
        """Seconds between two recorded events."""
        if self.emulate:
            return float(end.t - start.t)
        return float(self.xp.cuda.get_elapsed_time(start, end)) / 1e3

    def asnumpy(self, a: Any) -> Any:
        return np.asarray(a) if self.emulate else self.xp.asnumpy(a)

    def preprocess(self, blobs: list[bytes], **kw: Any) -> Any:
        """fastprep.preprocess(device="cuda") on this device's backend."""
        return fastprep.preprocess(blobs, device="cuda", backend=self.be, **kw)

    def resize(self, batch: Any, size: tuple[int, int], **kw: Any) -> Any:
        return fastprep.gpu_resize(batch, size, backend=self.be, **kw)


DEV: _Device  # set by main()


def _gpu_time(fn: Any, repeat: int = 20) -> float:
    for _ in range(DEV.repeat(3)):
        fn()
    DEV.sync()
    times = []
    for _ in range(DEV.repeat(repeat)):
        start, end = DEV.event(), DEV.event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(DEV.elapsed(start, end))
    return statistics.median(times)


def _kernel_time(fn: Any, repeat: int = 20) -> float:
    """The median over calls of the summed GPU time of the kernels fn() launches (CUDA events
    around each launch), without the host's planning and launch overhead between them; a
    ``preprocess`` batch as one chunk on one stream."""
    be = DEV.be
    spans: list[tuple[Any, Any]] = []
    launch = be.launch

    def timed(*args: Any, **kw: Any) -> None:
        start, end = DEV.event(), DEV.event()
        start.record()
        launch(*args, **kw)
        end.record()
        spans.append((start, end))

    be.launch = timed  # type: ignore[method-assign]
    chunk, gpu.streams.CHUNK = gpu.streams.CHUNK, 0  # one stream: spans that do not overlap
    try:
        for _ in range(DEV.repeat(3)):
            fn()
        DEV.sync()
        totals = []
        for _ in range(DEV.repeat(repeat)):
            spans.clear()
            fn()
            DEV.sync()
            totals.append(sum(DEV.elapsed(a, b) for a, b in spans))
    finally:
        del be.launch
        gpu.streams.CHUNK = chunk
    return statistics.median(totals)


def _cpu_time(fn: Any, repeat: int = 3) -> float:
    fn()
    times = []
    for _ in range(DEV.repeat(repeat)):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _peak_bandwidth() -> float | None:
    """The device's nominal memory bandwidth: 2 transfers a clock (DDR) x bus width. CUDA 13 took
    memoryClockRate out of cudaDeviceProp, so the device attribute is asked where the field is gone."""
    if DEV.emulate:
        DEV.skip("no peak memory bandwidth (a CUDA device property)")
        return None
    import cupy

    dev = cupy.cuda.Device()
    try:
        props = cupy.cuda.runtime.getDeviceProperties(dev.id)
        clock_khz, bus_bits = props.get("memoryClockRate"), props.get("memoryBusWidth")
        if not clock_khz or not bus_bits:
            attrs = dev.attributes
            clock_khz, bus_bits = attrs.get("MemoryClockRate"), attrs.get("GlobalMemoryBusWidth")
        return 2.0 * clock_khz * 1e3 * bus_bits / 8 if clock_khz and bus_bits else None
    except Exception:
        return None


def _copy_bandwidth() -> float:
    """What a device-to-device copy of 2 GiB achieves (bytes read + written per second): the
    practical ceiling that the resize kernels' figure can be read against."""
    a = DEV.xp.empty(1 << (20 if DEV.emulate else 31), dtype="uint8")
    b = DEV.xp.empty_like(a)
    t = _gpu_time(lambda: b.__setitem__(slice(None), a), repeat=10)
    return 2 * a.nbytes / t


def _host_transfers(fn: Any) -> dict[str, Any]:
    """The memcpys between host and device while fn() runs, as CUPTI sees them (torch's profiler
    traces every CUDA call of the process, CuPy's too): the check of "no round trip"."""
    if DEV.emulate:
        fn()
        DEV.skip("no host/device copy counts (CUPTI needs CUDA)")
        return {"host_to_device": None, "device_to_host": None, "kernels_and_copies": None}
    import cupy
    import torch
    from torch.profiler import ProfilerActivity, profile

    cupy.cuda.Device().synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        cupy.cuda.Device().synchronize()
    torch.cuda.synchronize()
    names = [e.name for e in prof.events()]
    return {
        "host_to_device": sum("HtoD" in n for n in names),
        "device_to_host": sum("DtoH" in n for n in names),
        "kernels_and_copies": len(names),
    }


def _jpegs(n: int, size: tuple[int, int] = (1920, 1080)) -> tuple[list[bytes], str]:
    """n JPEGs: the photos shipped in the wheel, re-encoded at `size` (1920x1080: a camera-like
    size) 4:2:0 quality 90 with OpenCV where it is installed, else with Pillow (torchvision's
    dependency), else as shipped."""
    import io
    import pathlib

    folder = pathlib.Path(fastprep.__file__).parent / "data" / "images"
    raw = [p.read_bytes() for p in sorted(folder.glob("*.jpg"))]
    blobs: list[bytes] = []
    what = "the wheel's sample photos as shipped"
    try:
        import cv2

        for k, b in enumerate(raw):
            img = cv2.imdecode(np.frombuffer(b, np.uint8), cv2.IMREAD_COLOR)
            img = cv2.resize(img, size, interpolation=cv2.INTER_CUBIC)
            img = np.ascontiguousarray(np.roll(img, 37 * k, axis=1))
            ok, enc = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 90])
            assert ok
            blobs.append(enc.tobytes())
        what = f"{size[0]}x{size[1]} 4:2:0 q90 (OpenCV re-encoded)"
    except Exception:
        try:
            from PIL import Image

            blobs = []
            for k, b in enumerate(raw):
                img = Image.open(io.BytesIO(b)).convert("RGB").resize(size, Image.Resampling.BICUBIC)
                arr = np.ascontiguousarray(np.roll(np.asarray(img), 37 * k, axis=1))
                buf = io.BytesIO()
                Image.fromarray(arr).save(buf, "JPEG", quality=90, subsampling=2)
                blobs.append(buf.getvalue())
            what = f"{size[0]}x{size[1]} 4:2:0 q90 (Pillow re-encoded)"
        except Exception:
            blobs = raw
    return [blobs[i % len(blobs)] for i in range(n)], what


def _wall(fn: Any, repeat: int = 5) -> float:
    fn()
    DEV.sync()
    times = []
    for _ in range(DEV.repeat(repeat)):
        t0 = time.perf_counter()
        fn()
        DEV.sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _jpeg_stages(blobs: list[bytes]) -> dict[str, float]:
    """Where the GPU JPEG path's time goes, stage by stage (best of 5, seconds): header parsing,
    entropy decoding on the CPU threads into pinned memory, and the coefficients' upload."""
    from fastprep import _core

    def best(fn: Any) -> float:
        return min(_cpu_time(fn, repeat=1) for _ in range(DEV.repeat(5)))

    layouts = _core.jpeg_layouts(blobs, None, True, None)
    offsets, total = [], 0
    for lay in layouts:
        plan = gpu.plan_jpeg(lay, 1)
        assert plan is not None
        offsets.append(total)
        total += gpu._align(2 * plan.coefficients)
    host, release = gpu_backend._staging(DEV.be, total)
    dev = DEV.xp.empty(max(total, 1), dtype="uint8")

    def upload() -> None:
        gpu_backend._upload(DEV.be, dev, host, 0, total)
        DEV.sync()

    r = {
        "coefficient_MB": total / 1e6,
        "headers_s": best(lambda: _core.jpeg_layouts(blobs, None, True, None)),
        "entropy_decoding_s": best(lambda: _core.jpeg_coefficients_into(blobs, offsets, host, None)),
        "upload_s": best(upload),
    }
    release()
    return r


def _quantiles(times: list[float], n: int) -> dict[str, float]:
    q = np.percentile(np.asarray(times), [50, 95, 99])
    return {"p50_s": float(q[0]), "p95_s": float(q[1]), "p99_s": float(q[2]), "images_per_s": n / float(q[0])}


def _latencies(fn: Any, repeat: int, sync: bool = True) -> list[float]:
    """Wall times of fn() each to its result on the device (synchronised), after two warm-ups."""
    for _ in range(DEV.repeat(2)):
        fn()
    DEV.sync()
    out = []
    for _ in range(DEV.repeat(repeat)):
        t0 = time.perf_counter()
        fn()
        if sync:
            DEV.sync()
        out.append(time.perf_counter() - t0)
    return out


def _h2d_bytes(fn: Any) -> dict[str, int]:
    """Bytes fastprep's CuPy backend sends to the device while fn() runs: the pinned uploads
    (scans, coefficients, CPU-decoded pixels) and the small arrays (tables, descriptors). The
    emulation's backend has no upload of its own: the plain copy that replaces it is counted."""
    be = DEV.be
    count = {"uploads": 0, "small_arrays": 0}
    up, asarray = getattr(be, "upload", None), be.asarray

    def counted_upload(dst: Any, host: Any, start: int, end: int) -> None:
        count["uploads"] += end - start
        if up is not None:
            up(dst, host, start, end)
        else:
            dst[start:end] = host[start:end]

    def counted_asarray(obj: Any) -> Any:
        if isinstance(obj, np.ndarray):
            count["small_arrays"] += obj.nbytes
        return asarray(obj)

    be.upload = counted_upload  # type: ignore[method-assign]
    be.asarray = counted_asarray  # type: ignore[method-assign]
    try:
        fn()
    finally:
        del be.upload, be.asarray
    count["total"] = count["uploads"] + count["small_arrays"]
    return count


def _kernel_breakdown(fn: Any, repeat: int = 5) -> dict[str, float]:
    """Median GPU time per kernel name over calls of fn() (CUDA events around each launch), the
    batch as one chunk on one stream."""
    be = DEV.be
    spans: list[tuple[str, Any, Any]] = []
    launch = be.launch

    def timed(source: str, defines: Any, kernel: str, *args: Any, **kw: Any) -> None:
        start, end = DEV.event(), DEV.event()
        start.record()
        launch(source, defines, kernel, *args, **kw)
        end.record()
        spans.append((kernel, start, end))

    be.launch = timed  # type: ignore[method-assign]
    chunk, gpu.streams.CHUNK = gpu.streams.CHUNK, 0  # one stream: spans that do not overlap
    try:
        fn()
        per: dict[str, list[float]] = {}
        for _ in range(DEV.repeat(repeat)):
            spans.clear()
            fn()
            DEV.sync()
            sums: dict[str, float] = {}
            for k, a, b in spans:
                sums[k] = sums.get(k, 0.0) + DEV.elapsed(a, b)
            for k, v in sums.items():
                per.setdefault(k, []).append(v)
    finally:
        del be.launch
        gpu.streams.CHUNK = chunk
    return {k: statistics.median(v) for k, v in per.items()}


def _device_coefficients_check(blobs: list[bytes]) -> dict[str, Any]:
    """The GPU entropy decoder's coefficients against libjpeg-turbo's for every blob."""
    from fastprep import _core
    from fastprep.gpu import jpeg_entropy as ge

    layouts = _core.jpeg_layouts(blobs)
    scans = [ge.parse_scan(b, lay) for b, lay in zip(blobs, layouts, strict=True)]  # type: ignore[arg-type]
    if any(s is None for s in scans):
        return {"error": "a benchmark JPEG has no GPU scan plan"}
    counts = [sum(c[3] * c[4] * 64 for c in lay["components"]) for lay in layouts]  # type: ignore[index]
    offsets = [sum(counts[:i]) for i in range(len(counts))]
    batch = ge.plan_batch(scans, layouts, offsets)  # type: ignore[arg-type]
    src = np.zeros(batch.nbytes, np.uint8)
    for sp, b, at in zip(scans, blobs, batch.src_offsets, strict=True):
        assert sp is not None
        src[at : at + sp.end - sp.start] = np.frombuffer(b, np.uint8, sp.end - sp.start, sp.start)
    coefs = DEV.xp.zeros(sum(counts), dtype="int16")
    status = DEV.asnumpy(ge.decode_scans(DEV.be, DEV.be.asarray(src), batch, coefs))
    want = np.zeros(sum(counts), np.int16)
    errors = _core.jpeg_coefficients_into(blobs, [2 * o for o in offsets], want.view(np.uint8))
    got = DEV.asnumpy(coefs)
    return {
        "images": len(blobs),
        "flagged": int(np.count_nonzero(status[: len(blobs)])),
        "cpu_errors": sum(e is not None for e in errors),
        "coefficients_differing": int(np.count_nonzero(got != want)),
    }


def _jpeg_bench(
    n: int,
    out: dict[str, Any],
    save: Any,
    size: tuple[int, int] = (1920, 1080),
    latency_batches: tuple[tuple[int, int], ...] = ((1, 50), (4, 40), (16, 25), (64, 15)),
) -> None:
    """Encoded bytes to a normalized 224x224 NCHW float32 batch: fastprep's GPU path (entropy
    decoding on the GPU, and on the CPU), torchvision's decode_jpeg(device="cuda") (nvJPEG) +
    resize + crop + normalize, fastprep's CPU pipeline; correctness first, then batch 64 timings,
    bytes sent to the device, copies back, and latency at `latency_batches` (size, repeats)."""
    blobs, what = _jpegs(n, size)
    r: dict[str, Any] = out
    r.update(input=what, batch=n, output="224x224 NCHW float32, resize 256 + center crop")
    r["jpeg_bytes"] = sum(len(b) for b in blobs)
    cpu = fastprep.preprocess(blobs)
    sections: list[tuple[str, Any]] = []

    def correctness() -> None:
        r["coefficients_gpu_vs_libjpeg_turbo"] = _device_coefficients_check(blobs)
        for entropy in ("gpu", "cpu"):
            for draft in (False, True):
                tag = f"fastprep_gpu_{entropy}_entropy" + ("_draft" if draft else "")
                got = DEV.preprocess(blobs, draft=draft, entropy=entropy)
                want = cpu if not draft else fastprep.preprocess(blobs, draft=True)
                r[f"{tag}_max_diff_vs_cpu"] = float(np.abs(DEV.asnumpy(got) - want).max())

    def batch_timings() -> None:
        for entropy in ("gpu", "cpu"):
            tag = f"fastprep_gpu_{entropy}_entropy"
            t = _wall(lambda e=entropy: DEV.preprocess(blobs, entropy=e))
            r[f"{tag}_s"] = t
            r[f"{tag}_images_per_s"] = n / t
        r["fastprep_gpu_kernels_s"] = _kernel_breakdown(lambda: DEV.preprocess(blobs))
        # The same batch without the fused decode + horizontal pass (jpeg_idct, jpeg_color, then
        # resize.cu over the full-size RGB images): what the fusion saves, and its result alike.
        # The same batch as one chunk on the caller's stream (no overlap of chunk stages on two
        # streams, gpu/streams.py): what the overlap saves, and its result alike.
        chunk = gpu.streams.CHUNK
        r["chunk_images"] = chunk
        gpu.streams.CHUNK = 0
        try:
            r["fastprep_gpu_one_chunk_s"] = _wall(lambda: DEV.preprocess(blobs))
            one = DEV.asnumpy(DEV.preprocess(blobs))
        finally:
            gpu.streams.CHUNK = chunk
        r["fastprep_gpu_chunked_vs_one_chunk_max_diff"] = float(np.abs(DEV.asnumpy(DEV.preprocess(blobs)) - one).max())
        gpu.jpeg_fused.ENABLED = False
        try:
            r["fastprep_gpu_unfused_s"] = _wall(lambda: DEV.preprocess(blobs))
            r["fastprep_gpu_unfused_kernels_s"] = _kernel_breakdown(lambda: DEV.preprocess(blobs))
            unfused = DEV.asnumpy(DEV.preprocess(blobs))
        finally:
            gpu.jpeg_fused.ENABLED = True
        r["fastprep_gpu_fused_vs_unfused_max_diff"] = float(np.abs(DEV.asnumpy(DEV.preprocess(blobs)) - unfused).max())
        t = _cpu_time(lambda: fastprep.preprocess(blobs), repeat=3)
        r["fastprep_cpu_s"] = t
        r["fastprep_cpu_images_per_s"] = n / t

    def transfers() -> None:
        for entropy in ("gpu", "cpu"):
            fn = lambda e=entropy: DEV.preprocess(blobs, entropy=e)  # noqa: E731
            fn()
            h2d = _h2d_bytes(fn)
            h2d["ratio_to_jpeg_bytes"] = h2d["total"] / r["jpeg_bytes"]  # type: ignore[assignment]
            r[f"h2d_bytes_{entropy}_entropy"] = h2d
            try:
                r[f"host_transfers_{entropy}_entropy"] = _host_transfers(fn)
            except Exception as e:
                r[f"host_transfers_{entropy}_entropy_error"] = repr(e)
        r["stages_cpu_entropy"] = _jpeg_stages(blobs)

    tv: Any = None

    def torchvision_path() -> None:
        nonlocal tv
        import torch
        import torchvision
        from torchvision.io import decode_jpeg
        from torchvision.transforms.v2 import functional as tvf

        data = [torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in blobs]
        where = DEV.torch_device
        if DEV.emulate:
            DEV.skip("torchvision decodes on the CPU (decode_jpeg(device='cpu')), not with nvJPEG")
        mean = torch.tensor(fastprep.IMAGENET_MEAN, device=where).view(1, 3, 1, 1)
        std = torch.tensor(fastprep.IMAGENET_STD, device=where).view(1, 3, 1, 1)

        def run(k: int) -> Any:
            imgs = decode_jpeg(data[:k], device=where)
            out = [tvf.center_crop(tvf.resize(im, 256, antialias=True), [224, 224]) for im in imgs]
            return (torch.stack(out).float() / 255 - mean) / std

        tv = run
        ref = run(n)
        r["torchvision"] = torchvision.__version__
        r["torchvision_max_diff_vs_cpu"] = float((ref.cpu() - torch.from_numpy(cpu)).abs().max())
        t = _wall(lambda: run(n))
        r["torchvision_nvjpeg_s"] = t
        r["torchvision_nvjpeg_images_per_s"] = n / t
        if "fastprep_gpu_gpu_entropy_s" in r:
            r["speedup_fastprep_gpu_vs_torchvision"] = t / r["fastprep_gpu_gpu_entropy_s"]

    def latency() -> None:
        lat: dict[str, Any] = {}
        r["latency"] = lat
        for k, repeat in latency_batches:
            if k > n:
                continue
            sub = blobs[:k]
            row: dict[str, Any] = {}
            lat[f"batch_{k}"] = row
            row["fastprep_gpu"] = _quantiles(_latencies(lambda s=sub: DEV.preprocess(s), repeat), k)
            row["fastprep_cpu"] = _quantiles(_latencies(lambda s=sub: fastprep.preprocess(s), repeat, sync=False), k)
            if tv is not None:
                row["torchvision_nvjpeg"] = _quantiles(_latencies(lambda k=k: tv(k), repeat), k)
            save()

    sections = [
        ("correctness", correctness),
        ("batch_timings", batch_timings),
        ("transfers", transfers),
        ("torchvision", torchvision_path),
        ("latency", latency),
    ]
    for name, fn in sections:
        try:
            fn()
        except Exception as e:  # one failing part keeps the others' results
            r[f"{name}_error"] = repr(e)
        print(name, json.dumps({k: v for k, v in r.items()}, default=str)[-3000:], flush=True)
        save()


# Errors of the peers (torchvision, OpenCV, CUPTI, the copy bandwidth probe) are reported, not
# counted against fastprep in the exit status.
PEER_ERRORS = ("torchvision_error", "opencv_error", "copy_bandwidth_error", "host_transfers_")


def _ours_vs_reference(key: str) -> bool:
    """A figure of fastprep's result against the CPU path or libjpeg-turbo, 0 when right (not
    torchvision's difference, which is its own rounding)."""
    ours = key == "max_diff_vs_cpu" or (key.startswith("fastprep_gpu") and key.endswith("max_diff_vs_cpu"))
    return ours or key in ("coefficients_differing", "flagged")


def problems(report: dict[str, Any]) -> list[str]:
    """What in a report says fastprep's own GPU path failed or differed from the CPU: an error
    of one of its parts, a result not equal to the CPU path's, coefficients not libjpeg-turbo's."""
    out: list[str] = []

    def walk(d: dict[str, Any], where: str) -> None:
        for k, v in d.items():
            at = f"{where}.{k}" if where else k
            if isinstance(v, dict):
                walk(v, at)
            elif k.endswith("error") and not k.startswith(PEER_ERRORS):
                out.append(f"{at}: {v}")
            elif v != 0 and _ours_vs_reference(k):
                out.append(f"{at} = {v}")

    walk(report.get("results", {}), "")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, default=None, help="resize batch (64; 2 with --emulate)")
    ap.add_argument("--jpeg-batch", type=int, default=None, help="JPEG batch (64; 2 with --emulate)")
    ap.add_argument(
        "--emulate",
        action="store_true",
        help="no GPU: every part at a tiny size on numpy and the CPU emulation of the kernels (a smoke run)",
    )
    args = ap.parse_args(argv)
    global DEV
    DEV = _Device(args.emulate)
    if args.emulate:
        # Tiny sizes: the emulation runs every GPU thread on one CPU core.
        n, jpeg_n = args.batch or 2, args.jpeg_batch or 2
        H, W = 90, 160
        jpeg_size = (96, 64)
        latency_batches: tuple[tuple[int, int], ...] = ((1, 2), (2, 2))
        sizes = [(24, 32), (61, 45), (17, 90)]
    else:
        n, jpeg_n = args.batch or 64, args.jpeg_batch or 64
        H, W = 1080, 1920
        jpeg_size = (1920, 1080)
        latency_batches = ((1, 50), (4, 40), (16, 25), (64, 15))
        sizes = [(480, 640), (1080, 1920), (3024, 4032), (720, 1280)] * 4
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (n, H, W, 3), dtype=np.uint8)
    # smooth, photo-like content (random noise is the worst case for nothing here; keep it real)
    yy, xx = np.mgrid[0:H, 0:W]
    base[:] = ((xx[..., None] * 255 // (W - 1) + yy[..., None] // 5 + np.arange(3) * 60) % 256).astype(np.uint8)
    base ^= rng.integers(0, 16, base.shape, dtype=np.uint8)
    dev = DEV.be.asarray(base)
    report: dict[str, Any] = {
        "device": DEV.name,
        "emulated": args.emulate,
        "batch": n,
        "input": f"{W}x{H} RGB uint8",
        "fastprep": fastprep.build_info(),
        "skipped": DEV.skipped,
        "results": {},
    }

    def save() -> None:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=2, default=str)

    # The JPEG path first (the figure the GPU run is for); the file is rewritten after each part,
    # so a run cut short by its time limit keeps what it measured.
    jpeg: dict[str, Any] = {}
    report["results"]["jpeg_preprocess"] = jpeg
    try:
        _jpeg_bench(jpeg_n, jpeg, save, jpeg_size, latency_batches)
    except Exception as e:  # keep the resize results when this part fails
        jpeg["error"] = repr(e)
    save()
    peak = _peak_bandwidth()
    report["peak_bandwidth_GBps"] = None if peak is None else peak / 1e9
    try:
        report["copy_bandwidth_GBps"] = _copy_bandwidth() / 1e9
    except Exception as e:
        report["copy_bandwidth_error"] = repr(e)
    torch = tv_resize = None
    try:
        import torch
        from torchvision.transforms.v2 import functional as tvf

        tv_resize = tvf.resize
    except Exception as e:
        report["torchvision_error"] = repr(e)
    try:
        import cv2

        cv2.setNumThreads(1)
    except Exception as e:
        cv2 = None
        report["opencv_error"] = repr(e)
    for w, h in ((224, 224), (455, 256)):
        key = f"{w}x{h}"
        r: dict[str, Any] = {}
        report["results"][key] = r
        try:
            _resize_bench(dev, base, w, h, peak, r, torch, tv_resize, cv2)
        except Exception as e:  # one failing part keeps the others' results
            r["error"] = repr(e)
        print(key, json.dumps(r, default=str), flush=True)
        save()
    # ragged batch: mixed sizes in one launch per pass
    try:
        ragged = [DEV.be.asarray(rng.integers(0, 256, (hh, ww, 3), dtype=np.uint8)) for hh, ww in sizes]
        t = _gpu_time(lambda: DEV.resize(ragged, (224, 224), filter="bilinear"), repeat=10)
        report["results"]["ragged_mixed_to_224"] = {
            "images": len(ragged),
            "sizes": sorted(set(sizes)),
            "fastprep_gpu_s": t,
            "images_per_s": len(ragged) / t,
        }
    except Exception as e:
        report["results"]["ragged_mixed_to_224"] = {"error": repr(e)}
    save()
    print(json.dumps(report, indent=2, default=str))
    bad = problems(report)
    for line in bad:
        print("PROBLEM", line)
    print(f"gpu_bench: {len(bad)} problems" + (" (emulated: the figures are no GPU's)" if args.emulate else ""))
    return 1 if bad else 0


def _resize_bench(
    dev: Any, base: Any, w: int, h: int, peak: float | None, r: dict[str, Any], torch: Any, tv_resize: Any, cv2: Any
) -> None:
    """gpu_resize of the batch `dev` (the device copy of `base`) to w x h: equal to the CPU path,
    call and kernel times, effective bandwidth, the other horizontal-pass form, torchvision's
    resize on the same device and OpenCV's on the CPU."""
    n, H = base.shape[:2]
    out = DEV.resize(dev, (w, h), filter="bilinear")
    cpu = np.stack([fastprep.resize(base[i], (w, h), filter="bilinear") for i in range(min(n, 2))])
    r["max_diff_vs_cpu"] = int(np.abs(DEV.asnumpy(out[:2]).astype(int) - cpu.astype(int)).max())
    call = lambda: DEV.resize(dev, (w, h), filter="bilinear")  # noqa: E731
    t = _gpu_time(call)
    r["fastprep_gpu_s"] = t
    r["fastprep_images_per_s"] = n / t
    # bytes the two passes must move: read input rows, write + read the intermediate, write out
    inter = n * H * w * 3
    moved = base.nbytes + 2 * inter + n * h * w * 3
    r["effective_GBps"] = moved / t / 1e9
    kt = _kernel_time(call)
    r["kernels_s"] = kt
    r["kernels_effective_GBps"] = moved / kt / 1e9
    if peak:
        r["fraction_of_peak"] = moved / t / peak
        r["kernels_fraction_of_peak"] = moved / kt / peak
    # the bytes any resize must move (the input read once, the output written): resize_hv keeps
    # the intermediate in shared memory, so this is the figure to hold against the copy bandwidth
    essential = base.nbytes + n * h * w * 3
    r["essential_bytes_GBps"] = essential / t / 1e9
    r["kernels_essential_bytes_GBps"] = essential / kt / 1e9
    if peak:
        r["kernels_essential_fraction_of_peak"] = essential / kt / peak
    r["fused_one_launch"] = bool(gpu.resize.FUSED)
    try:  # the two-launch form (intermediate in device memory), for comparison
        gpu.resize.FUSED = False
        r["kernels_s_two_launches"] = _kernel_time(call)
        r["fastprep_gpu_s_two_launches"] = _gpu_time(call)
    finally:
        gpu.resize.FUSED = True
    r["hv_stage"] = int(gpu.resize.HV_STAGE)
    stage = gpu.resize.HV_STAGE
    try:  # the one-launch form's other horizontal phase (16-byte staging / global-memory taps)
        gpu.resize.HV_STAGE = 1 - stage
        r[f"kernels_s_hv_stage_{1 - stage}"] = _kernel_time(call)
        r[f"fastprep_gpu_s_hv_stage_{1 - stage}"] = _gpu_time(call)
    finally:
        gpu.resize.HV_STAGE = stage
    before = gpu.resize.H_SHARED
    other = 1 - before
    try:  # the other form of the two-launch horizontal pass (global reads / shared-memory staging)
        gpu.resize.FUSED = False
        gpu.resize.H_SHARED = other
        r[f"kernels_s_h_shared_{other}"] = _kernel_time(call)
        r[f"fastprep_gpu_s_h_shared_{other}"] = _gpu_time(call)
    finally:
        gpu.resize.FUSED = True
        gpu.resize.H_SHARED = before
    if torch is not None and tv_resize is not None:
        tt = torch.from_dlpack(dev).permute(0, 3, 1, 2)  # NCHW view, as torchvision expects
        tt = tt.contiguous()
        ref = tv_resize(tt, [h, w], antialias=True)
        r["max_diff_vs_torchvision"] = int((ref.permute(0, 2, 3, 1).int() - torch.from_dlpack(out).int()).abs().max())
        if DEV.torch_device == "cuda":
            torch.cuda.synchronize()
        tvt = _gpu_time(lambda: tv_resize(tt, [h, w], antialias=True))
        r["torchvision_gpu_s"] = tvt
        r["speedup_vs_torchvision"] = tvt / t
    if cv2 is not None:
        sub = base[:8]
        for name, interp in (("area", cv2.INTER_AREA), ("linear", cv2.INTER_LINEAR)):
            ct = _cpu_time(lambda interp=interp: [cv2.resize(im, (w, h), interpolation=interp) for im in sub])
            r[f"opencv_{name}_cpu_images_per_s"] = len(sub) / ct


if __name__ == "__main__":
    raise SystemExit(main())
