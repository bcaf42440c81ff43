//! PNG decoding with the image-rs `png` crate. PNG is lossless, so any correct decoder gives the
//! file's samples; what must match Pillow is how they become 8-bit channels, done here per
//! Pillow's PngImagePlugin modes: 16-bit RGB/RGBA/LA keep the high byte ("RGB;16B"), 16-bit gray
//! opens as "I;16" and is clamped to 255 when converted to 8-bit (Pillow's I;16 -> L), gray of
//! 1, 2 and 4 bits is scaled to 0..255, palettes are expanded, and tRNS becomes an alpha channel.
use super::alloc;
use super::decode::{check_pixels, no_memory, DecodeError, Raw, RawKind};
use super::png_rewrite::{self, Rewrite};
use super::png_sequence::Sequence;
use png::{BitDepth, ColorType, Transformations};
use std::io::Cursor;

fn map_err(e: png::DecodingError) -> DecodeError {
    match e {
        png::DecodingError::IoError(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => {
            DecodeError::Truncated("PNG", err.to_string())
        }
        png::DecodingError::IoError(err) => DecodeError::Truncated("PNG", err.to_string()),
        png::DecodingError::Format(f) => DecodeError::Corrupt("PNG", f.to_string()),
        png::DecodingError::Parameter(p) => DecodeError::Corrupt("PNG", p.to_string()),
        png::DecodingError::LimitsExceeded => DecodeError::Resources(
            "the PNG needs more memory than its declared size allows; it is corrupt".into(),
        ),
    }
}

/// The pixels and the EXIF orientation Pillow would apply (`orientation::png`).
pub struct PngOut {
    pub raw: Raw,
    pub orientation: u32,
}

/// Deflate's largest expansion: a 258-byte match costs at least one bit per literal/length code
/// and one per distance code, so 1 compressed byte never yields more than 1032 bytes.
const MAX_INFLATE_RATIO: u64 = 1032;

/// What the chunks before the image data say: the header's size and filtered row bytes, and
/// the bytes of every IDAT chunk.
struct Walk {
    width: usize,
    height: usize,
    /// Bytes the image data inflates to: a filter byte and the packed samples per row.
    raw_bytes: Option<u64>,
    idat_bytes: u64,
    /// Whether an IEND chunk was found, and else where the last chunk whose body is whole
    /// ends (before its CRC, which may be cut).
    iend: bool,
    body_end: usize,
    /// IHDR's bit depth, colour type and interlacing, and the last tRNS chunk's body.
    depth: u8,
    color: u8,
    interlaced: bool,
    trns: Option<Vec<u8>>,
    /// Whether the crate would take another tRNS than Pillow's (several, one before PLTE or
    /// after the image data): it takes the first between them, Pillow the last it reads.
    trns_elsewhere: bool,
    /// APNG chunks were read, which the crate checks further than Pillow does (blend and
    /// dispose operations, frame sizes): it gets the file without them. Or IHDR has a
    /// compression or interlace method that the crate refuses and Pillow does not look at.
    apng: bool,
    odd_ihdr: bool,
    /// The last PLTE before the image data (Pillow's palette), and how many there are.
    plte: Option<Vec<u8>>,
    plte_count: usize,
    /// An APNG first frame that is only part of the image (`png_rewrite`).
    partial_frame: Option<[u32; 4]>,
}

impl Walk {
    /// What IHDR (at least 13 bytes) says.
    fn header(&mut self, d: &[u8]) {
        (self.depth, self.color) = (d[8], d[9]);
        self.odd_ihdr = d[10] != 0 || d[12] > 1;
        self.interlaced = d[12] != 0;
        self.width = u32::from_be_bytes([d[0], d[1], d[2], d[3]]) as usize;
        self.height = u32::from_be_bytes([d[4], d[5], d[6], d[7]]) as usize;
        let samples = match self.color {
            0 | 3 => 1,
            2 => 3,
            4 => 2,
            6 => 4,
            _ => 0,
        };
        let row_bits = (self.width as u64).checked_mul(samples * u64::from(self.depth));
        // Interlaced images have more filter bytes, never fewer sample bytes.
        self.raw_bytes = row_bits
            .and_then(|b| (b.div_ceil(8) + 1).checked_mul(self.height as u64))
            .filter(|_| samples > 0);
    }
}

/// Walks the chunks as Pillow's `PngImageFile._open` does: each chunk up to the first IDAT is
/// read and its CRC checked (Pillow: "broken PNG file (bad header checksum ...)"); the IDAT
/// chunks' CRCs and anything after them are not (Pillow reads them without checking). Also
/// sums the IDAT lengths, so that a header claiming more pixels than its data can inflate to
/// is refused before anything is allocated for it (Pillow refuses it as truncated, after
/// allocating the whole image). The walk ends where Pillow stops reading for the first frame
/// (`png_sequence`), which refuses what Pillow's chunk handlers refuse.
fn walk_chunks(data: &[u8]) -> Result<Walk, DecodeError> {
    let be32 = |i: usize| {
        data.get(i..i + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let mut walk = Walk {
        width: 0,
        height: 0,
        raw_bytes: None,
        idat_bytes: 0,
        iend: false,
        body_end: 8,
        depth: 0,
        color: 0,
        interlaced: false,
        trns: None,
        trns_elsewhere: false,
        apng: false,
        odd_ihdr: false,
        plte: None,
        plte_count: 0,
        partial_frame: None,
    };
    let mut i = 8;
    let mut sequence = Sequence::default();
    while let (Some(len), Some(kind)) = (be32(i), data.get(i + 4..i + 8)) {
        let len = len as usize;
        let body = i + 8..(i + 8).saturating_add(len);
        // Pillow's chunk types are four word characters: another refuses the file before the
        // image data ("broken PNG file") and ends the reading after it.
        if !kind.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_') {
            if sequence.in_data() {
                break;
            }
            return Err(DecodeError::Corrupt(
                "PNG",
                format!("broken PNG file: the chunk type {kind:02x?} is not a name"),
            ));
        }
        if kind == b"IEND" {
            walk.iend = true;
            break;
        }
        if sequence.stops_at(kind) {
            break;
        }
        if kind == b"IDAT" {
            walk.idat_bytes += len as u64;
        }
        if body.end <= data.len() {
            walk.body_end = body.end;
        } else {
            // Pillow reads every chunk whose header is there (also after the image data) and
            // refuses the file when its body is cut ("Truncated File Read").
            return Err(DecodeError::Truncated(
                "PNG",
                format!("the {} chunk is cut short", String::from_utf8_lossy(kind)),
            ));
        }
        // Pillow reads tRNS after the image data too (the last one wins).
        if kind == b"tRNS" {
            walk.trns_elsewhere |= walk.trns.is_some() || walk.plte.is_none() || sequence.in_data();
            walk.trns = Some(data[body.start..body.end].to_vec());
        }
        if kind == b"PLTE" && !sequence.in_data() {
            walk.plte_count += 1;
            walk.plte = Some(data[body.start..body.end].to_vec());
        }
        walk.apng |= matches!(kind, b"acTL" | b"fcTL" | b"fdAT");
        sequence.chunk(kind, &data[body.start..body.end])?;
        if !sequence.in_data() {
            let (Some(chunk), Some(crc)) = (data.get(i + 4..body.end), be32(body.end)) else {
                break;
            };
            if crc32(chunk) != crc {
                return Err(DecodeError::Corrupt(
                    "PNG",
                    format!(
                        "bad checksum (CRC) in the {} chunk, as Pillow reports it",
                        String::from_utf8_lossy(kind)
                    ),
                ));
            }
            if kind == b"IHDR" && len >= 13 {
                walk.header(&data[body.start..body.end]);
            }
        }
        i = body.end.saturating_add(4);
    }
    walk.partial_frame = sequence.partial_first_frame(walk.width, walk.height);
    Ok(walk)
}

/// Pillow's transparency for gray and RGB PNGs, which is not the spec's: the tRNS value is
/// compared with the 8-bit samples Pillow holds (1-bit gray as 0/255 with any non-zero value
/// meaning 255, 2- and 4-bit gray scaled to 0..255, 16-bit gray clamped to 255, 16-bit RGB's
/// high bytes), not with the file's samples, and only its low byte counts (libImaging packs it
/// into an 8-bit pixel: 0x2007 makes 7 transparent). fastprep's contract is Pillow's pixels, so the
/// alpha the decoder derived from tRNS is replaced by that comparison.
fn pillow_trns_alpha(pixels: &mut [u8], kind: RawKind, color: u8, depth: u8, trns: &[u8]) {
    let be = |i: usize| trns.get(i..i + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    match (color, kind) {
        (0, RawKind::La) => {
            let Some(mut v) = be(0) else { return };
            if depth == 1 {
                v = if v == 0 { 0 } else { 255 };
            }
            let v = v as u8;
            for p in pixels.chunks_exact_mut(2) {
                p[1] = if p[0] == v { 0 } else { 255 };
            }
        }
        (2, RawKind::Rgba) => {
            let (Some(r), Some(g), Some(b)) = (be(0), be(2), be(4)) else {
                return;
            };
            let t = [r as u8, g as u8, b as u8];
            for p in pixels.chunks_exact_mut(4) {
                let hit = p[..3] == t;
                p[3] = if hit { 0 } else { 255 };
            }
        }
        _ => {}
    }
}

/// The CRC-32 of PNG (ISO 3309), bitwise: only the few chunks before the image data go
/// through it, so a table-driven one would not pay for itself.
pub(super) fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

// One pass over the chunks, in file order, as libpng reads them; splitting it hides that order.
#[allow(clippy::too_many_lines)]
pub fn decode(data: &[u8], max_pixels: Option<u64>) -> Result<PngOut, DecodeError> {
    let walk = walk_chunks(data)?;
    // Read first: Pillow refuses some files for their text chunks alone. Only the chunks Pillow
    // reads for the first frame count (an animated file's later frames may carry EXIF too).
    let orientation = super::orientation::png(&data[..walk.body_end])?;
    // The size is checked from IHDR (always the first chunk) before the decoder reads further.
    if walk.width > 0 && walk.height > 0 {
        check_pixels(walk.width, walk.height, max_pixels)?;
    }
    // A palette's colours and alpha come from the crate's expansion: give it Pillow's.
    let palette = if walk.color == 3 {
        Rewrite {
            plte: Some(walk.plte.as_deref().unwrap_or(&[0; 768])),
            trns: walk.trns.as_deref(),
            ..Rewrite::default()
        }
    } else {
        Rewrite::default()
    };
    if let Some(frame) = walk.partial_frame {
        let size = (walk.width, walk.height);
        let format = (walk.depth, walk.color, walk.interlaced);
        let end = walk.body_end;
        let raw = png_rewrite::partial_frame(data, end, frame, size, format, palette, max_pixels)?;
        return Ok(PngOut { raw, orientation });
    }
    if let Some(raw) = walk.raw_bytes {
        if raw > walk.idat_bytes.saturating_mul(MAX_INFLATE_RATIO) + 1024 {
            return Err(DecodeError::Truncated(
                "PNG",
                format!(
                    "the header claims {}x{} pixels ({raw} bytes of image data) but the file's \
                     {} bytes of compressed data cannot hold that many",
                    walk.width, walk.height, walk.idat_bytes
                ),
            ));
        }
    }
    // CRCs are checked by the walk where Pillow checks them (the image data's are not), and the
    // zlib stream's Adler-32 is checked as Pillow's zlib checks it.
    let mut options = png::DecodeOptions::default();
    options.set_ignore_crc(true);
    options.set_ignore_adler32(false);
    // Pillow stops reading where the walk stopped (a file without IEND, or whose last CRC is
    // cut, decodes; the png crate wants IEND, so it gets one), a palette is Pillow's, and an
    // APNG is its first frame.
    let rewritten;
    let palette_moved = walk.color == 3 && (walk.plte_count != 1 || walk.trns_elsewhere);
    let data = if walk.iend && !palette_moved && !walk.apng && !walk.odd_ihdr {
        data
    } else {
        rewritten = png_rewrite::rewrite(data, walk.body_end, palette)
            .map_err(|e| no_memory(walk.width, walk.height, e))?;
        &rewritten[..]
    };
    let mut decoder = png::Decoder::new_with_options(Cursor::new(data), options);
    decoder.set_transformations(Transformations::EXPAND);
    // The crate's default cap (64 MiB) would refuse large legitimate images; the pixel limit
    // below is the real guard, so allow what that many 16-bit RGBA pixels take.
    let cap = max_pixels.map_or(usize::MAX, |m| {
        usize::try_from(m.saturating_mul(8).saturating_add(1 << 20)).unwrap_or(usize::MAX)
    });
    decoder.set_limits(png::Limits { bytes: cap });
    let mut reader = decoder.read_info().map_err(map_err)?;
    let info = reader.info();
    let (width, height) = (info.width as usize, info.height as usize);
    check_pixels(width, height, max_pixels)?;
    let gray16 = info.color_type == ColorType::Grayscale && info.bit_depth == BitDepth::Sixteen;
    let (color, depth) = reader.output_color_type();
    let size = reader.output_buffer_size().ok_or_else(|| {
        DecodeError::Resources(format!("a {width}x{height} PNG does not fit in memory"))
    })?;
    let mut buf = alloc::zeroed(size).map_err(|e| no_memory(width, height, e))?;
    reader.next_frame(&mut buf).map_err(map_err)?;
    let mut kind = match color {
        ColorType::Grayscale => RawKind::L,
        ColorType::GrayscaleAlpha => RawKind::La,
        ColorType::Rgb => RawKind::Rgb,
        ColorType::Rgba => RawKind::Rgba,
        ColorType::Indexed => {
            return Err(DecodeError::Corrupt(
                "PNG",
                "palette image left unexpanded (missing PLTE chunk)".into(),
            ))
        }
    };
    let pixels = if depth == BitDepth::Sixteen {
        let samples = buf.chunks_exact(2);
        if gray16 {
            // Pillow: "I;16" -> "L" clamps (values above 255 become 255). The tRNS alpha, if the
            // expansion added one, is a 16-bit sample: its high byte like Pillow's "LA;16B".
            let per = kind.channels();
            let mut out = alloc::with_capacity(width * height * per)
                .map_err(|e| no_memory(width, height, e))?;
            out.extend(samples.enumerate().map(|(i, s)| {
                let v = u16::from_be_bytes([s[0], s[1]]);
                if per == 2 && i % 2 == 1 {
                    s[0]
                } else {
                    v.min(255) as u8
                }
            }));
            out
        } else if kind == RawKind::La {
            // Pillow opens 16-bit gray+alpha as RGBA ("LA;16B" unpacks to L, L, L, A).
            let mut rgba = alloc::with_capacity(width * height * 4)
                .map_err(|e| no_memory(width, height, e))?;
            for p in buf.chunks_exact(4) {
                rgba.extend_from_slice(&[p[0], p[0], p[0], p[2]]);
            }
            kind = RawKind::Rgba;
            rgba
        } else {
            // The high bytes, in place: the buffer is twice what they need.
            let n = buf.len() / 2;
            for i in 0..n {
                buf[i] = buf[2 * i];
            }
            buf.truncate(n);
            buf
        }
    } else {
        buf.truncate(width * height * kind.channels());
        buf
    };
    let mut pixels = pixels;
    if let (Some(t), 0 | 2) = (&walk.trns, walk.color) {
        // The decoder may have dropped a tRNS it found malformed or repeated; Pillow reads
        // the last one's first value, so the alpha channel is added where missing.
        if matches!(kind, RawKind::L | RawKind::Rgb) && t.len() >= 2 * kind.channels() {
            let c = kind.channels();
            let mut with_alpha = alloc::with_capacity(width * height * (c + 1))
                .map_err(|e| no_memory(width, height, e))?;
            for p in pixels.chunks_exact(c) {
                with_alpha.extend_from_slice(p);
                with_alpha.push(255);
            }
            pixels = with_alpha;
            kind = if c == 1 { RawKind::La } else { RawKind::Rgba };
        }
        pillow_trns_alpha(&mut pixels, kind, walk.color, walk.depth, t);
    }
    Ok(PngOut {
        raw: Raw {
            width,
            height,
            kind,
            pixels,
        },
        orientation,
    })
}
