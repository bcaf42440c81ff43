//! PNG decoding with the image-rs `png` crate. PNG is lossless, so any correct decoder gives the
//! file's samples; what must match Pillow is how they become 8-bit channels, done here per
//! Pillow's PngImagePlugin modes: 16-bit RGB/RGBA/LA keep the high byte ("RGB;16B"), 16-bit gray
//! opens as "I;16" and is clamped to 255 when converted to 8-bit (Pillow's I;16 -> L), gray of
//! 1, 2 and 4 bits is scaled to 0..255, palettes are expanded, and tRNS becomes an alpha channel.
use super::alloc::{self, AllocError};
use super::decode::{check_pixels, no_memory, DecodeError, Raw, RawKind};
use super::png_idat::{self, DataChunk, Layout};
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
    /// The first run of image data chunks (Pillow's image data), whether the file cuts the last
    /// of them short, and where a rewrite of the file ends (after that cut chunk, or at
    /// `body_end`).
    data: Vec<DataChunk>,
    data_cut: bool,
    rewrite_end: usize,
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
    /// The filtered rows of a `width` x `height` image in IHDR's format.
    fn layout(&self, width: u64, height: u64) -> Layout {
        let samples: u64 = match self.color {
            2 => 3,
            4 => 2,
            6 => 4,
            _ => 1,
        };
        Layout {
            width,
            height,
            bits_per_pixel: samples * u64::from(self.depth),
            interlaced: self.interlaced,
        }
    }

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
/// goes to Pillow's reading of the data (`png_idat`) before anything of the image's size is
/// allocated: Pillow decodes it only where the stream ends on a row boundary. Records the first
/// run of image data chunks, the last of which may be cut short. The walk ends where Pillow
/// stops reading for the first frame (`png_sequence`), which refuses what Pillow's chunk
/// handlers refuse.
// One pass over the chunks, in file order, as Pillow reads them; splitting it hides that order.
#[allow(clippy::too_many_lines)]
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
        data: Vec::new(),
        data_cut: false,
        rewrite_end: 8,
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
    // 0: before the image data, 1: in its first run of chunks, 2: after it
    let mut run = 0;
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
        let image_data = kind == b"IDAT" || kind == b"fdAT";
        run = match (run, image_data) {
            (0, true) => 1,
            (1, false) => 2,
            (r, _) => r,
        };
        if run == 1 {
            // An fdAT's data follows its sequence number.
            let skip = if kind == b"fdAT" { 4 } else { 0 };
            walk.data.push(DataChunk {
                start: body.start + skip,
                len: len.saturating_sub(skip),
            });
        }
        if body.end <= data.len() {
            walk.body_end = body.end;
        } else if run == 1 && data.len() >= body.start + if kind == b"fdAT" { 4 } else { 0 } {
            // Pillow reads the image data with plain reads: the decoder may have every row
            // before the cut (`png_idat` decides). An fdAT's sequence number must be whole.
            sequence.chunk(kind, &data[body.start..])?;
            walk.data_cut = true;
            break;
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
            // Pillow's handler refuses a gray one under 2 bytes and an RGB one under 6
            // ("Truncated tRNS chunk"), wherever it reads it; it does not look at the others.
            let need = match (walk.depth, walk.color) {
                (0, _) => 0,
                (_, 0) => 2,
                (_, 2) => 6,
                _ => 0,
            };
            if len < need {
                return Err(DecodeError::Corrupt(
                    "PNG",
                    format!(
                        "the tRNS chunk has {len} bytes, fewer than a {} colour's {need} (Pillow: \
                         \"Truncated tRNS chunk\")",
                        if walk.color == 0 { "gray" } else { "RGB" }
                    ),
                ));
            }
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
    walk.rewrite_end = if walk.data_cut {
        data.len()
    } else {
        walk.body_end
    };
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

pub fn decode(data: &[u8], max_pixels: Option<u64>) -> Result<PngOut, DecodeError> {
    let walk = walk_chunks(data)?;
    // Read first: Pillow refuses some files for their text chunks alone. Only the chunks Pillow
    // reads for the first frame count (an animated file's later frames may carry EXIF too).
    let orientation = super::orientation::png(&data[..walk.body_end])?;
    // The size is checked from IHDR (always the first chunk) before the decoder reads further.
    let over_default_max_pixels =
        walk.width > 0 && walk.height > 0 && check_pixels(walk.width, walk.height, max_pixels)?;
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
        if walk.data_cut {
            // The frame's rewrite makes the cut chunk whole, so Pillow's verdict on the cut
            // file comes first (a chunk cut after the one that completes the frame refuses it).
            let layout = walk.layout(u64::from(frame[2]), u64::from(frame[3]));
            png_idat::pillow_rows(data, &walk.data, true, &layout)?;
        }
        let size = (walk.width, walk.height);
        let format = (walk.depth, walk.color, walk.interlaced);
        let end = walk.rewrite_end;
        let raw = png_rewrite::partial_frame(data, end, frame, size, format, palette, max_pixels)?;
        // The frame's own decodes see rewritten headers: the file's IHDR has the last word.
        let raw = Raw {
            over_default_max_pixels,
            ..raw
        };
        return Ok(PngOut { raw, orientation });
    }
    // A header claiming more rows than the data can inflate to, or a data chunk cut short, goes
    // straight to Pillow's reading (which allocates only what the data inflates to): the crate
    // would allocate the whole image first.
    let short = walk
        .raw_bytes
        .is_some_and(|raw| raw > walk.idat_bytes.saturating_mul(MAX_INFLATE_RATIO) + 1024);
    let first = (!short && !walk.data_cut)
        .then(|| decode_with_crate(data, &walk, palette, None, max_pixels));
    let raw = match first {
        Some(Ok(raw)) => {
            if stream_end_in_a_later_chunk(&walk) {
                // Pillow's zlib reads on past the last row to the end of its piece, where the
                // crate's inflater stops with the image complete: its reading has the verdict.
                let layout = walk.layout(walk.width as u64, walk.height as u64);
                png_idat::pillow_rows(data, &walk.data, false, &layout)?;
            }
            raw
        }
        Some(Err(Failure::Refused(e))) => return Err(e),
        None | Some(Err(Failure::ImageData(_))) => {
            // Where the crate refuses the image data, Pillow may still decode it: its reading
            // decides, and its rows are decoded as a stream the crate reads whole.
            let layout = walk.layout(walk.width as u64, walk.height as u64);
            let rows = png_idat::pillow_rows(data, &walk.data, walk.data_cut, &layout)?;
            let total = layout
                .total()
                .and_then(|t| usize::try_from(t).ok())
                .unwrap_or(0);
            let zlib = png_idat::zlib_with_zeros(&rows, total)
                .map_err(|e| no_memory(walk.width, walk.height, e))?;
            drop(rows);
            match decode_with_crate(data, &walk, palette, Some(&zlib), max_pixels) {
                Ok(raw) => raw,
                Err(Failure::Refused(e) | Failure::ImageData(e)) => return Err(e),
            }
        }
    };
    Ok(PngOut { raw, orientation })
}

/// The most bytes of a zlib stream that follow its last row's data in a data chunk of their own
/// for `stream_end_in_a_later_chunk`: zlib's own tail is at most a sync flush's empty stored
/// block (5 bytes), the final block's header and end (3) and the Adler-32 (4).
const STREAM_TAIL: usize = 64;

/// Whether the image data may end (its last rows) in a data chunk before the one that holds the
/// stream's end: more than one chunk, the last no longer than a stream's tail. There the crate's
/// inflater (fdeflate) stops at the end of the chunk that completes the image, and does not read
/// the rest of the stream, which Pillow's zlib reads up to its piece's end (a broken block header
/// or end there refuses the file). `png_idat` then decides, for these few files: decoding every
/// multi-chunk PNG a second time would double most PNGs' inflate cost (libpng writes 8 KiB
/// chunks), where zlib-made streams put at most `STREAM_TAIL` bytes after the last row.
fn stream_end_in_a_later_chunk(walk: &Walk) -> bool {
    walk.data.len() >= 2 && walk.data.last().is_some_and(|c| c.len <= STREAM_TAIL)
}

/// Why the crate did not decode a PNG: for a reason Pillow refuses it too, or in its image
/// data (where Pillow's own reading decides, `png_idat`).
enum Failure {
    Refused(DecodeError),
    ImageData(DecodeError),
}

/// The crate's decoding of the PNG `data` as the walk found it, with `image_data` (a zlib
/// stream of the filtered rows, checksum unchecked) in place of its own where given.
fn decode_with_crate(
    data: &[u8],
    walk: &Walk,
    palette: Rewrite<'_>,
    image_data: Option<&[u8]>,
    max_pixels: Option<u64>,
) -> Result<Raw, Failure> {
    let refused = Failure::Refused;
    // CRCs are checked by the walk where Pillow checks them (the image data's are not), and the
    // zlib stream's Adler-32 is checked here: where Pillow's zlib does not get to it, the
    // refusal sends the file to Pillow's reading.
    let mut options = png::DecodeOptions::default();
    options.set_ignore_crc(true);
    options.set_ignore_adler32(image_data.is_some());
    // Pillow stops reading where the walk stopped (a file without IEND, or whose last CRC is
    // cut, decodes; the png crate wants IEND, so it gets one), a palette is Pillow's, and an
    // APNG is its first frame.
    let rewritten;
    let palette_moved = walk.color == 3 && (walk.plte_count != 1 || walk.trns_elsewhere);
    let plain = walk.iend && !palette_moved && !walk.apng && !walk.odd_ihdr;
    let data = if plain && image_data.is_none() {
        data
    } else {
        let how = Rewrite {
            idat: image_data,
            ..palette
        };
        rewritten = png_rewrite::rewrite(data, walk.rewrite_end, how)
            .map_err(|e| refused(no_memory(walk.width, walk.height, e)))?;
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
    let mut reader = decoder.read_info().map_err(|e| refused(map_err(e)))?;
    let info = reader.info();
    let (width, height) = (info.width as usize, info.height as usize);
    let over_default_max_pixels = check_pixels(width, height, max_pixels).map_err(refused)?;
    let gray16 = info.color_type == ColorType::Grayscale && info.bit_depth == BitDepth::Sixteen;
    let (color, depth) = reader.output_color_type();
    let no_memory = |e| refused(no_memory(width, height, e));
    let size = reader.output_buffer_size().ok_or_else(|| {
        refused(DecodeError::Resources(format!(
            "a {width}x{height} PNG does not fit in memory"
        )))
    })?;
    let mut buf = alloc::zeroed(size).map_err(no_memory)?;
    reader
        .next_frame(&mut buf)
        .map_err(|e| Failure::ImageData(map_err(e)))?;
    let kind = match color {
        ColorType::Grayscale => RawKind::L,
        ColorType::GrayscaleAlpha => RawKind::La,
        ColorType::Rgb => RawKind::Rgb,
        ColorType::Rgba => RawKind::Rgba,
        ColorType::Indexed => {
            return Err(refused(DecodeError::Corrupt(
                "PNG",
                "palette image left unexpanded (missing PLTE chunk)".into(),
            )))
        }
    };
    let (mut pixels, mut kind) = if depth == BitDepth::Sixteen {
        sixteen_to_eight(buf, kind, gray16, width * height).map_err(no_memory)?
    } else {
        buf.truncate(width * height * kind.channels());
        (buf, kind)
    };
    if let (Some(t), 0 | 2) = (&walk.trns, walk.color) {
        // The decoder may have dropped a tRNS it found malformed or repeated; Pillow reads
        // the last one's first value, so the alpha channel is added where missing.
        if matches!(kind, RawKind::L | RawKind::Rgb) && t.len() >= 2 * kind.channels() {
            let c = kind.channels();
            let mut with_alpha =
                alloc::with_capacity(width * height * (c + 1)).map_err(no_memory)?;
            for p in pixels.chunks_exact(c) {
                with_alpha.extend_from_slice(p);
                with_alpha.push(255);
            }
            pixels = with_alpha;
            kind = if c == 1 { RawKind::La } else { RawKind::Rgba };
        }
        pillow_trns_alpha(&mut pixels, kind, walk.color, walk.depth, t);
    }
    Ok(Raw {
        width,
        height,
        kind,
        pixels,
        over_default_max_pixels,
    })
}

/// 16-bit samples as Pillow's 8-bit ones (`pixels` of `kind` in the crate's expansion).
fn sixteen_to_eight(
    mut buf: Vec<u8>,
    kind: RawKind,
    gray16: bool,
    pixels: usize,
) -> Result<(Vec<u8>, RawKind), AllocError> {
    let samples = buf.chunks_exact(2);
    if gray16 {
        // Pillow: "I;16" -> "L" clamps (values above 255 become 255). The tRNS alpha, if the
        // expansion added one, is a 16-bit sample: its high byte like Pillow's "LA;16B".
        let per = kind.channels();
        let mut out = alloc::with_capacity(pixels * per)?;
        out.extend(samples.enumerate().map(|(i, s)| {
            let v = u16::from_be_bytes([s[0], s[1]]);
            if per == 2 && i % 2 == 1 {
                s[0]
            } else {
                v.min(255) as u8
            }
        }));
        Ok((out, kind))
    } else if kind == RawKind::La {
        // Pillow opens 16-bit gray+alpha as RGBA ("LA;16B" unpacks to L, L, L, A).
        let mut rgba = alloc::with_capacity(pixels * 4)?;
        for p in buf.chunks_exact(4) {
            rgba.extend_from_slice(&[p[0], p[0], p[0], p[2]]);
        }
        Ok((rgba, RawKind::Rgba))
    } else {
        // The high bytes, in place: the buffer is twice what they need.
        let n = buf.len() / 2;
        for i in 0..n {
            buf[i] = buf[2 * i];
        }
        buf.truncate(n);
        Ok((buf, kind))
    }
}
