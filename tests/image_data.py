"""Test images: real photos shipped inside scikit-learn and matplotlib, and files the tests encode
from them with Pillow (JPEG qualities, subsamplings, progressive, restart markers, grayscale,
CMYK, EXIF orientations) and with a small PNG writer of our own (every colour type and bit
depth, tRNS, Adam7 interlacing), which Pillow cannot all write."""

from __future__ import annotations

import functools
import importlib.util
import io
import struct
import zlib
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

# fastprep's filter names and Pillow's resampling filters, for the resize parity tests.
PIL_FILTERS = {
    "nearest": Image.Resampling.NEAREST,
    "box": Image.Resampling.BOX,
    "bilinear": Image.Resampling.BILINEAR,
    "hamming": Image.Resampling.HAMMING,
    "bicubic": Image.Resampling.BICUBIC,
    "lanczos": Image.Resampling.LANCZOS,
}


def _package_dir(name: str) -> Path:
    # Located, not imported: only the files are needed, so wheels installed without their
    # dependencies (scipy, ...) do, as on the GPU machine (benches/gpu/run.sh).
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin, f"{name} is not installed: the tests read its sample photos"
    return Path(spec.origin).parent


def photo_paths() -> list[Path]:
    paths = sorted((_package_dir("sklearn") / "datasets" / "images").glob("*.jpg"))
    sample = _package_dir("matplotlib") / "mpl-data" / "sample_data"
    paths += sorted(sample.glob("*.jpg")) + sorted(sample.glob("*.png"))
    assert len(paths) >= 4, f"expected the sklearn and matplotlib sample photos, found {paths}"
    return paths


@functools.cache
def photos() -> dict[str, np.ndarray]:
    """name -> RGB array of each real photo."""
    return {p.name: np.asarray(Image.open(p).convert("RGB")) for p in photo_paths() if p.suffix == ".jpg"}


def pillow_decode(data: bytes, mode: str) -> np.ndarray:
    """The reference: what Pillow gives, oriented by EXIF, as (H, W, C)."""
    img = ImageOps.exif_transpose(Image.open(io.BytesIO(data)))
    arr = np.asarray(img.convert(mode) if mode != "unchanged" else img)
    return arr[..., None] if arr.ndim == 2 else arr


def jpeg(arr: np.ndarray, **save: object) -> bytes:
    buf = io.BytesIO()
    mode = save.pop("mode", None)
    img = Image.fromarray(arr)
    if mode:
        img = img.convert(str(mode))
    img.save(buf, "JPEG", **save)
    return buf.getvalue()


def scaled(arr: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """A photo at another size (width, height): a larger "camera" image keeps real textures."""
    return np.asarray(Image.fromarray(arr).resize(size, Image.Resampling.BICUBIC))


@functools.cache
def jpeg_variants() -> dict[str, bytes]:
    """name -> JPEG bytes: every subsampling, qualities 50-95, progressive, restart markers,
    grayscale, CMYK, optimized Huffman tables, odd sizes, and 640x480 up to 4032x3024."""
    out: dict[str, bytes] = {}
    for name, arr in photos().items():
        stem = name.rsplit(".", 1)[0]
        for sub, label in ((0, "444"), (1, "422"), (2, "420")):
            for q in (50, 75, 95):
                out[f"{stem}-q{q}-{label}"] = jpeg(arr, quality=q, subsampling=sub)
            out[f"{stem}-prog-{label}"] = jpeg(arr, quality=85, subsampling=sub, progressive=True)
        out[f"{stem}-gray"] = jpeg(arr, mode="L", quality=90)
        out[f"{stem}-gray-prog"] = jpeg(arr, mode="L", quality=80, progressive=True)
        out[f"{stem}-cmyk"] = jpeg(arr, mode="CMYK", quality=90)
        out[f"{stem}-optimize"] = jpeg(arr, quality=88, optimize=True)
        out[f"{stem}-restart"] = jpeg(arr, quality=85, restart_marker_blocks=3)
        out[f"{stem}-restart-rows"] = jpeg(arr, quality=85, restart_marker_rows=1, subsampling=2)
        odd = arr[: arr.shape[0] - 5, : arr.shape[1] - 3]
        out[f"{stem}-odd-420"] = jpeg(odd, quality=90, subsampling=2)
        out[f"{stem}-odd-422-prog"] = jpeg(odd, quality=70, subsampling=1, progressive=True)
    china = photos()["china.jpg"]
    for w, h in ((640, 480), (1920, 1080), (4032, 3024)):
        big = scaled(china, (w, h))
        out[f"china-{w}x{h}-420"] = jpeg(big, quality=90, subsampling=2)
        out[f"china-{w}x{h}-444-prog"] = jpeg(big, quality=75, subsampling=0, progressive=True)
    return out


# --- PNG, written by hand so that every colour type, bit depth, tRNS and Adam7 is covered ------


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))


def _pack_rows(samples: np.ndarray, depth: int) -> list[bytes]:
    """samples: (h, w, c) integers -> packed scanlines (without filter bytes)."""
    h, _w, _c = samples.shape
    rows = []
    for y in range(h):
        flat = samples[y].reshape(-1)
        if depth == 16:
            rows.append(flat.astype(">u2").tobytes())
        elif depth == 8:
            rows.append(flat.astype(np.uint8).tobytes())
        else:
            per = 8 // depth
            padded = np.zeros(-(-len(flat) // per) * per, np.uint8)
            padded[: len(flat)] = flat
            packed = np.zeros(len(padded) // per, np.uint8)
            for k in range(per):
                packed |= (padded[k::per] << (8 - depth * (k + 1))).astype(np.uint8)
            rows.append(packed.tobytes())
    return rows


def png(
    samples: np.ndarray,
    color_type: int,
    depth: int,
    *,
    palette: np.ndarray | None = None,
    trns: bytes | None = None,
    interlace: bool = False,
    exif: bytes | None = None,
) -> bytes:
    """A PNG of `samples` (h, w, c) as stored (palette indices for colour type 3)."""
    h, w = samples.shape[:2]
    if samples.ndim == 2:
        samples = samples[..., None]
    raw = b""
    if interlace:
        for x0, y0, dx, dy in _ADAM7:
            sub = samples[y0::dy, x0::dx]
            if sub.size:
                raw += b"".join(b"\x00" + r for r in _pack_rows(sub, depth))
    else:
        raw = b"".join(b"\x00" + r for r in _pack_rows(samples, depth))
    out = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, int(interlace)))
    if palette is not None:
        out += _chunk(b"PLTE", palette.astype(np.uint8).tobytes())
    if trns is not None:
        out += _chunk(b"tRNS", trns)
    if exif is not None:
        out += _chunk(b"eXIf", exif)
    return out + _chunk(b"IDAT", zlib.compress(raw, 6)) + _chunk(b"IEND", b"")


@functools.cache
def png_variants() -> dict[str, bytes]:
    """name -> PNG bytes: gray 1/2/4/8/16-bit, gray+alpha 8/16, RGB 8/16, RGBA 8/16, palette 1-8
    bit with and without tRNS, gray and RGB tRNS, each also Adam7-interlaced."""
    rng = np.random.default_rng(7)
    photo = photos()["flower.jpg"][:97, :131]  # odd sizes exercise Adam7's partial passes
    h, w = photo.shape[:2]
    gray = np.asarray(Image.fromarray(photo).convert("L"))
    alpha = rng.integers(0, 256, (h, w), dtype=np.uint8)
    out: dict[str, bytes] = {}
    for interlace in (False, True):
        tag = "-adam7" if interlace else ""
        for depth in (1, 2, 4, 8):
            out[f"gray{depth}{tag}"] = png(gray >> (8 - depth), 0, depth, interlace=interlace)
        g16 = gray.astype(np.uint16) * 257 // 3  # spans 0..21845: Pillow clamps above 255
        g16[::7] = rng.integers(0, 256, g16[::7].shape)  # and some values below 256 pass through
        out[f"gray16{tag}"] = png(g16, 0, 16, interlace=interlace)
        out[f"gray8-trns{tag}"] = png(gray, 0, 8, trns=struct.pack(">H", int(gray[5, 5])), interlace=interlace)
        out[f"la8{tag}"] = png(np.dstack([gray, alpha]), 4, 8, interlace=interlace)
        out[f"la16{tag}"] = png(np.dstack([gray, alpha]).astype(np.uint16) * 257 + 3, 4, 16, interlace=interlace)
        out[f"rgb8{tag}"] = png(photo, 2, 8, interlace=interlace)
        rgb16 = photo.astype(np.uint16) * 257 + rng.integers(0, 200, photo.shape)
        out[f"rgb16{tag}"] = png(rgb16, 2, 16, interlace=interlace)
        r, g, b = (int(v) for v in photo[3, 4])
        out[f"rgb8-trns{tag}"] = png(photo, 2, 8, trns=struct.pack(">HHH", r, g, b), interlace=interlace)
        out[f"rgba8{tag}"] = png(np.dstack([photo, alpha]), 6, 8, interlace=interlace)
        out[f"rgba16{tag}"] = png(np.dstack([photo, alpha]).astype(np.uint16) * 257, 6, 16, interlace=interlace)
        for depth in (1, 2, 4, 8):
            n = 1 << depth
            pal = rng.integers(0, 256, (n, 3), dtype=np.uint8)
            idx = rng.integers(0, n, (h, w), dtype=np.uint8)
            out[f"pal{depth}{tag}"] = png(idx, 3, depth, palette=pal, interlace=interlace)
            t = rng.integers(0, 256, n // 2 + 1, dtype=np.uint8).tobytes()
            out[f"pal{depth}-trns{tag}"] = png(idx, 3, depth, palette=pal, trns=t, interlace=interlace)
    return out


def exif_orientation(o: int) -> bytes:
    """A minimal little-endian EXIF (TIFF) block holding one Orientation tag."""
    ifd = struct.pack("<H", 1) + struct.pack("<HHIHH", 0x0112, 3, 1, o, 0) + struct.pack("<I", 0)
    return b"II*\x00" + struct.pack("<I", 8) + ifd


def jpeg_with_orientation(arr: np.ndarray, o: int, **save: object) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = o
    return jpeg(arr, quality=90, exif=exif.tobytes(), **save)
