"""Odd-but-real JPEG and PNG files, made from clean ones the way Pillow's own test images are odd
(Tests/images/junk_jpeg_header.jpg, exif-ifd-offset.jpg, xmp_tags_orientation.png,
exif_imagemagick_orientation.png, truncated_end_chunk.png, 1_trns.png, ...): stray bytes before
markers, JPEGs without Huffman tables (Motion-JPEG frames) or quantization tables, EXIF and XMP
orientation in the places Pillow looks, PNG chunks cut, checksums broken, tRNS edge cases."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
from PIL import Image

XMP_JPEG = b"http://ns.adobe.com/xap/1.0/\x00"


def photo(width: int = 48, height: int = 40, seed: int = 0) -> np.ndarray:
    """A small RGB image with edges and noise (so that every table and coefficient matters)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    a = np.stack([x * 5 % 256, y * 6 % 256, (x + y) * 3 % 256], -1).astype(np.int16)
    a += rng.integers(-20, 20, a.shape).astype(np.int16)
    return np.clip(a, 0, 255).astype(np.uint8)


def jpeg(arr: np.ndarray, **save: object) -> bytes:
    b = io.BytesIO()
    Image.fromarray(arr).save(b, "JPEG", **save)
    return b.getvalue()


def segments(data: bytes) -> list[tuple[int, int, int]]:
    """(marker, start, end) of each marker segment from SOI's end; the SOS entry runs to the end."""
    i, out = 2, []
    while i + 4 <= len(data):
        m = data[i + 1]
        if m == 0xDA:
            out.append((m, i, len(data)))
            break
        n = struct.unpack(">H", data[i + 2 : i + 4])[0]
        out.append((m, i, i + 2 + n))
        i += 2 + n
    return out


def without(data: bytes, marker: int) -> bytes:
    """`data` without its `marker` segments (0xC4: DHT, a Motion-JPEG frame; 0xDB: DQT)."""
    return data[:2] + b"".join(data[s:e] for m, s, e in segments(data) if m != marker)


def stray_before(data: bytes, marker: int, junk: bytes = b"\x00\x13\x37") -> bytes:
    out = bytearray(data[:2])
    for m, s, e in segments(data):
        if m == marker:
            out += junk
        out += data[s:e]
    return bytes(out)


def with_segment(data: bytes, segment: bytes) -> bytes:
    return data[:2] + segment + data[2:]


def app1(body: bytes) -> bytes:
    return b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body


def exif(orientation: int, next_ifd: int = 0, little: bool = True) -> bytes:
    """A TIFF block with IFD0 holding only Orientation; `next_ifd` may point anywhere (bad)."""
    e = "<" if little else ">"
    entry = struct.pack(e + "HHIHH", 0x112, 3, 1, orientation, 0)
    ifd = struct.pack(e + "H", 1) + entry + struct.pack(e + "I", next_ifd)
    return (b"II*\x00" if little else b"MM\x00*") + struct.pack(e + "I", 8) + ifd


def xmp(orientation: int, element: bool = False) -> bytes:
    tiff = 'xmlns:tiff="http://ns.adobe.com/tiff/1.0/"'
    if element:
        d = f'<rdf:Description rdf:about="" {tiff}><tiff:Orientation>{orientation}</tiff:Orientation></rdf:Description>'
    else:
        d = f'<rdf:Description rdf:about="" {tiff} tiff:Orientation="{orientation}"/>'
    return (
        '<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        f'{d}</rdf:RDF></x:xmpmeta><?xpacket end="w"?>'
    ).encode()


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    i, out = 8, []
    while i + 8 <= len(data):
        n = struct.unpack(">I", data[i : i + 4])[0]
        out.append((data[i + 4 : i + 8], data[i + 8 : i + 8 + n]))
        i += 12 + n
    return out


def png_build(chunks: list[tuple[bytes, bytes]]) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + b"".join(chunk(k, b) for k, b in chunks)


def png(arr: np.ndarray) -> bytes:
    b = io.BytesIO()
    Image.fromarray(arr).save(b, "PNG")
    return b.getvalue()


def png_raw(width: int, height: int, depth: int, color: int, rows: list[bytes], trns: bytes | None = None) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0)
    chunks = [(b"IHDR", ihdr)]
    if trns is not None:
        chunks.append((b"tRNS", trns))
    raw = b"".join(b"\x00" + r for r in rows)
    return png_build([*chunks, (b"IDAT", zlib.compress(raw)), (b"IEND", b"")])


def png_claiming(width: int, height: int) -> bytes:
    """A valid 64x64 PNG whose IHDR (CRC fixed) claims `width` x `height`."""
    d = bytearray(png(photo(64, 64)))
    ihdr = struct.pack(">II", width, height) + d[24:29]
    d[16:29] = ihdr
    d[29:33] = struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return bytes(d)


def jpeg_claiming(width: int, height: int) -> bytes:
    """A valid JPEG whose SOF0 claims `width` x `height`."""
    d = bytearray(jpeg(photo(64, 64), quality=90))
    for m, s, _e in segments(bytes(d)):
        if m == 0xC0:
            d[s + 5 : s + 9] = struct.pack(">HH", height, width)
    return bytes(d)


def odd_jpegs() -> dict[str, bytes]:
    """Name -> an odd JPEG that Pillow decodes."""
    base = jpeg(photo(), quality=90)
    sos = base.index(b"\xff\xda")
    mid = (sos + len(base)) // 2
    out = {
        "mjpeg-no-dht": without(base, 0xC4),
        "stray-before-dqt": stray_before(base, 0xDB),
        "stray-before-sof": stray_before(base, 0xC0),
        "stray-before-dht": stray_before(base, 0xC4),
        "stray-before-sos": stray_before(base, 0xDA),
        "fill-bytes": stray_before(base, 0xC4, b"\xff\xff"),
        "cut-scan-then-eoi": base[:mid] + b"\xff\xd9",
        "restart-marker-inserted": base[:mid] + b"\xff\xd0" + base[mid:],
    }
    for o in (3, 6, 8):
        out[f"exif-{o}-bad-next-ifd"] = with_segment(base, app1(b"Exif\x00\x00" + exif(o, 0xFFFFFF)))
        out[f"exif-{o}-big-endian"] = with_segment(base, app1(b"Exif\x00\x00" + exif(o, little=False)))
        out[f"xmp-{o}-attribute"] = with_segment(base, app1(XMP_JPEG + xmp(o)))
        out[f"xmp-{o}-element"] = with_segment(base, app1(XMP_JPEG + xmp(o, element=True)))
    # EXIF's orientation wins over XMP's; the first EXIF block over later ones
    out["exif-6-over-xmp-3"] = with_segment(
        with_segment(base, app1(XMP_JPEG + xmp(3))), app1(b"Exif\x00\x00" + exif(6))
    )
    return out


def odd_pngs() -> dict[str, bytes]:
    """Name -> an odd PNG (Pillow decodes it, or refuses it: the tests compare either way)."""
    p = png(photo())
    ch = png_chunks(p)
    body = png_build([c for c in ch if c[0] != b"IEND"])
    idat = p.index(b"IDAT")
    n = struct.unpack(">I", p[idat - 4 : idat])[0]
    bad_idat_crc = bytearray(p)
    bad_idat_crc[idat + 4 + n] ^= 1
    bad_adler = bytearray(p)
    bad_adler[idat + 4 + n - 1] ^= 1
    bad_adler[idat + 4 + n : idat + 8 + n] = struct.pack(">I", zlib.crc32(bytes(bad_adler[idat : idat + 4 + n])))
    bad_ihdr_crc = bytearray(p)
    bad_ihdr_crc[29] ^= 1
    out = {
        "no-iend": body,
        "no-iend-crc-cut": body[:-2],
        "bad-idat-crc": bytes(bad_idat_crc),
        "bad-adler32": bytes(bad_adler),
        "bad-ihdr-crc": bytes(bad_ihdr_crc),
        "chunk-after-idat-cut": body + struct.pack(">I", 100) + b"tEXt" + b"ab",
        "big-ztxt": png_build([ch[0], (b"zTXt", b"Comment\x00\x00" + zlib.compress(bytes(2 << 20))), *ch[1:]]),
    }
    for o in (3, 6):
        e = exif(o)
        hexed = (b"Exif\x00\x00" + e).hex().encode()
        profile = b"\nexif\n%8d\n" % (len(hexed) // 2) + hexed + b"\n"
        out[f"exif-{o}-before-idat"] = png_build([ch[0], (b"eXIf", e), *ch[1:]])
        out[f"exif-{o}-after-idat"] = png_build([*ch[:-1], (b"eXIf", e), ch[-1]])
        out[f"xmp-{o}-itxt"] = png_build([ch[0], (b"iTXt", b"XML:com.adobe.xmp\x00\x00\x00\x00\x00" + xmp(o)), *ch[1:]])
        out[f"raw-profile-{o}-text"] = png_build([ch[0], (b"tEXt", b"Raw profile type exif\x00" + profile), *ch[1:]])
        out[f"raw-profile-{o}-ztxt"] = png_build(
            [ch[0], (b"zTXt", b"Raw profile type exif\x00\x00" + zlib.compress(profile)), *ch[1:]]
        )
    gray16 = struct.pack(">HHH", 300, 7, 0x0707)
    trns = {
        "1bit-trns-255": (8, 1, 1, 0, [b"\xa5"], 255),
        "1bit-trns-1": (8, 1, 1, 0, [b"\xa5"], 1),
        "1bit-trns-0": (8, 1, 1, 0, [b"\xa5"], 0),
        "2bit-trns-2": (4, 1, 2, 0, [b"\x1b"], 2),
        "2bit-trns-170": (4, 1, 2, 0, [b"\x1b"], 170),
        "4bit-trns-3": (2, 1, 4, 0, [b"\x3f"], 3),
        "4bit-trns-51": (4, 1, 4, 0, [b"\x3f\x12"], 51),
        "16bit-gray-trns-300": (3, 1, 16, 0, [gray16], 300),
        "16bit-gray-trns-7": (3, 1, 16, 0, [gray16], 7),
        "16bit-gray-trns-255": (3, 1, 16, 0, [gray16], 255),
        "8bit-gray-trns-7": (2, 1, 8, 0, [b"\x07\x08"], 7),
        "8bit-gray-trns-0x0107": (2, 1, 8, 0, [b"\x07\x08"], 0x0107),
        "16bit-gray-trns-0x2007": (3, 1, 16, 0, [gray16], 0x2007),
    }
    for name, (w, h, depth, color, rows, t) in trns.items():
        out[name] = png_raw(w, h, depth, color, rows, struct.pack(">H", t))
    # palettes: Pillow keeps the last PLTE before the image data (none: all black) and the last
    # tRNS it reads, also after the image data
    b = io.BytesIO()
    Image.fromarray(photo()).quantize(16).save(b, "PNG", transparency=0)
    p_ihdr, plte, p_trns, *p_rest = png_chunks(b.getvalue())
    other = (b"PLTE", plte[1][::-1])
    out["palette-trns-after-idat"] = png_build([p_ihdr, plte, p_trns, *p_rest[:-1], (b"tRNS", b"\x02"), p_rest[-1]])
    out["palette-only-trns-after-idat"] = png_build([p_ihdr, plte, *p_rest[:-1], (b"tRNS", b"\x09\x00"), p_rest[-1]])
    out["palette-two-trns"] = png_build([p_ihdr, plte, p_trns, (b"tRNS", b"\xff\x05"), *p_rest])
    out["palette-two-plte"] = png_build([p_ihdr, plte, other, p_trns, *p_rest])
    out["palette-plte-after-idat"] = png_build([p_ihdr, plte, p_trns, *p_rest[:-1], other, p_rest[-1]])
    out["palette-no-plte"] = png_build([p_ihdr, p_trns, *p_rest])
    out["palette-trns-before-plte"] = png_build([p_ihdr, p_trns, plte, *p_rest])
    # IHDR's compression method, which Pillow does not read
    out["ihdr-compression-method-1"] = png_build([(b"IHDR", ch[0][1][:10] + b"\x01" + ch[0][1][11:]), *ch[1:]])
    rgb16 = [struct.pack(">6H", 300, 2, 3, 0x0100, 0x0300, 0x0500)]
    out["16bit-rgb-trns-wide"] = png_raw(2, 1, 16, 2, rgb16, struct.pack(">3H", 300, 2, 3))
    out["16bit-rgb-trns-high-bytes"] = png_raw(2, 1, 16, 2, rgb16, struct.pack(">3H", 1, 3, 5))
    # a gray tRNS under 2 bytes or an RGB one under 6: Pillow refuses them, also after the data
    out["trns-rgb-short"] = png_build([ch[0], (b"tRNS", b"\x00\x01\x00\x02"), *ch[1:]])
    out["trns-rgb-short-after-idat"] = png_build([*ch[:-1], (b"tRNS", b"\x00"), ch[-1]])
    out["trns-gray-short"] = png_raw(2, 1, 8, 0, [b"\x07\x08"], b"\x07")
    out["trns-gray-3-bytes"] = png_raw(2, 1, 8, 0, [b"\x07\x08"], b"\x00\x07\x01")
    return out


def odd_apngs() -> dict[str, bytes]:
    """Name -> an APNG (or PNG) whose chunk sequence Pillow reads past the first frame's data:
    frame controls out of sequence or outside the image, fdAT without fcTL, short chunks,
    chunks after the point where Pillow stops reading an animated file."""
    frames = [Image.fromarray(photo(seed=s)) for s in range(3)]
    b = io.BytesIO()
    frames[0].save(b, "PNG", save_all=True, append_images=frames[1:])
    apng = b.getvalue()
    # IHDR, acTL (3 frames), fcTL 0, IDAT, fcTL 1, fdAT 2, fcTL 3, fdAT 4, IEND
    ihdr, actl, fctl0, idat, fctl1, fdat2, _fctl3, _fdat4, iend = png_chunks(apng)

    def seq(c: tuple[bytes, bytes], n: int) -> tuple[bytes, bytes]:
        return c[0], struct.pack(">I", n) + c[1][4:]

    def frames_count(n: int) -> tuple[bytes, bytes]:
        return b"acTL", struct.pack(">II", n, 0)

    def wider(c: tuple[bytes, bytes]) -> tuple[bytes, bytes]:
        width = struct.unpack(">I", c[1][4:8])[0]
        return c[0], c[1][:4] + struct.pack(">I", width + 1) + c[1][8:]

    still = [ihdr, frames_count(1), fctl0, idat]
    cut = png_build([ihdr, actl, fctl0, idat, fctl1, fdat2])
    junk = struct.pack(">I", 1000) + b"\x00\x01\x02\x03" + b"junk"
    return {
        "three-frames": apng,
        # Pillow's Tests/images/apng/chunk_no_fctl.png
        "fdat-without-fctl": png_build([ihdr, frames_count(1), idat, seq(fdat2, 0), iend]),
        "fdat-without-fctl-no-actl": png_build([ihdr, idat, seq(fdat2, 0), iend]),
        "still-fdat-out-of-sequence": png_build([*still, seq(fdat2, 5), iend]),
        "still-fdat-in-sequence": png_build([*still, seq(fdat2, 1), iend]),
        "first-fctl-not-0": png_build([ihdr, actl, seq(fctl0, 1), idat, iend]),
        "first-fctl-outside-image": png_build([ihdr, actl, wider(fctl0), idat, iend]),
        # an animated file: Pillow stops at the next fcTL, so nothing after it counts
        "animated-later-fdat-out-of-sequence": png_build([ihdr, actl, fctl0, idat, fctl1, seq(fdat2, 7), iend]),
        "animated-later-fctl-outside-image": png_build([ihdr, actl, fctl0, idat, wider(fctl1), fdat2, iend]),
        "animated-later-fctl-short": png_build([ihdr, actl, fctl0, idat, (b"fcTL", b"\0" * 8), iend]),
        "animated-cut-in-second-frame": cut[: len(cut) - 100],
        "default-image-then-frame": png_build([ihdr, frames_count(1), idat, seq(fctl1, 0), seq(fdat2, 1), iend]),
        "no-actl-fctl-after-idat-out-of-sequence": png_build([ihdr, idat, seq(fctl1, 3), iend]),
        "no-actl-frame-after-idat": png_build([ihdr, idat, seq(fctl1, 0), seq(fdat2, 1), iend]),
        "zero-frames-then-fdat": png_build([ihdr, frames_count(0), idat, seq(fdat2, 0), iend]),
        "two-actl-still-frames": png_build([ihdr, actl, actl, fctl0, idat, fctl1, fdat2, iend]),
        # blend and dispose operations Pillow does not check (the png crate does)
        "first-fctl-odd-blend-dispose": png_build([ihdr, actl, (b"fcTL", fctl0[1][:24] + b"\x07\x09"), idat, iend]),
        "two-actl-still-bad-sequence": png_build([ihdr, actl, actl, fctl0, idat, fctl1, seq(fdat2, 9), iend]),
        "short-actl": png_build([ihdr, (b"acTL", b"\0\0\0\1"), idat, iend]),
        "short-gama": png_build([ihdr, (b"gAMA", b"\0\1"), idat, iend]),
        "short-phys-after-idat": png_build([ihdr, idat, (b"pHYs", b"\0\0\1"), iend]),
        "animated-exif-before-next-fctl": png_build([ihdr, actl, fctl0, idat, (b"eXIf", exif(6)), fctl1, fdat2, iend]),
        "animated-exif-after-next-fctl": png_build([ihdr, actl, fctl0, idat, fctl1, (b"eXIf", exif(6)), fdat2, iend]),
        "empty-first-frame": png_build(
            [ihdr, actl, (b"fcTL", struct.pack(">IIIIIHHBB", 0, 0, 5, 1, 1, 1, 10, 0, 0)), idat, iend]
        ),
        "not-a-name-after-idat": png_build([ihdr, idat]) + junk,
        "not-a-name-before-idat": png_build([ihdr]) + junk[:12] + png_build([idat, iend])[8:],
    }


def partial_frame_apngs() -> dict[str, bytes]:
    """Name -> an APNG whose first frame (its fcTL before the image data) is only part of the
    image, or whose image data is fdAT chunks: outside the APNG spec, decoded by Pillow onto a
    zero-filled image (where zero may be a palette's first colour, or transparent by tRNS)."""
    full = photo(48, 40, seed=3)
    alpha = np.random.default_rng(3).integers(0, 256, (40, 48), dtype=np.uint8)
    paletted = Image.fromarray(full).quantize(16)
    images = {
        "rgb": (Image.fromarray(full), {}),
        "rgba": (Image.fromarray(np.dstack([full, alpha])), {}),
        "l-trns-0": (Image.fromarray(full[..., 0]), {"transparency": 0}),
        "la": (Image.fromarray(np.dstack([full[..., 0], alpha]), "LA"), {}),
        "p-trns-0": (paletted, {"transparency": 0}),
        "i16": (Image.fromarray(full[..., 1].astype(np.uint16) * 257), {}),
    }

    def saved(im: Image.Image, save: dict) -> list[tuple[bytes, bytes]]:
        b = io.BytesIO()
        im.save(b, "PNG", **save)
        return png_chunks(b.getvalue())

    out = {}
    for name, (im, save) in images.items():
        chunks = saved(im, save)
        header = [c for c in chunks if c[0] not in (b"IDAT", b"IEND")]
        for x, y, w, h in ((5, 3, 30, 20), (0, 0, 48, 40), (47, 39, 1, 1), (0, 10, 48, 30)):
            data = [c for c in saved(im.crop((x, y, x + w, y + h)), save) if c[0] == b"IDAT"]
            fctl = (b"fcTL", struct.pack(">IIIIIHHBB", 0, w, h, x, y, 1, 10, 0, 0))
            fdat = [(b"fdAT", struct.pack(">I", 1 + i) + c[1]) for i, c in enumerate(data)]
            actl = (b"acTL", struct.pack(">II", 1, 0))
            if (w, h) != (48, 40):
                out[f"{name}-{w}x{h}-at-{x},{y}"] = png_build([*header, actl, fctl, *data, (b"IEND", b"")])
            out[f"{name}-{w}x{h}-at-{x},{y}-fdat"] = png_build([*header, actl, fctl, *fdat, (b"IEND", b"")])
        no_actl = [*header, (b"fcTL", struct.pack(">IIIIIHHBB", 0, 10, 8, 2, 2, 1, 10, 0, 0))]
        small = [c for c in saved(im.crop((2, 2, 12, 10)), save) if c[0] == b"IDAT"]
        out[f"{name}-10x8-no-actl"] = png_build([*no_actl, *small, (b"IEND", b"")])
    return out
