//! The image data as Pillow reads it, for the files the `png` crate refuses for their image data
//! alone: a last data chunk cut short, a zlib stream that ends early, a checksum Pillow does not
//! get to, more rows claimed than the data holds.
//!
//! Pillow (`ImageFile.load` with `PngImageFile.load_read`) feeds its zip decoder (libImaging's
//! `ZipDecode.c`) the data chunks of the first run in pieces of at most 65,536 bytes
//! (`ImageFile.MAXBLOCK`, counted from each chunk's start; empty chunks skipped), and stops as
//! soon as the decoder reports the image done: after its last row, or after a whole row in the
//! same zlib call that reached the stream's end (the rows after it stay zero). Data running out
//! before that (a chunk cut by the end of the file, or a chunk that is not image data) refuses
//! the file ("image file is truncated"), and so does a zlib error (a bad Adler-32 included), an
//! unknown filter type in a row it completes, or a cut data chunk after the one it stopped in
//! (read with the chunks after the image: "Truncated File Read").
//!
//! zlib decodes past a full row until the next symbol that needs output (block ends, block
//! headers, the checksum) when that input is in the piece it was given: so Pillow checks the
//! Adler-32 only where the stream's end is in the same piece as the image's last byte. The
//! inflater here is zlib's own state machine (zlib-rs), given exactly the image's room, so it
//! stops where zlib stops and reports what zlib reports on the way (a match whose distance
//! reaches before the stream's start, say, only once it has room to copy it).
use super::alloc::AllocError;
use super::decode::DecodeError;
use flate2::{Decompress, FlushDecompress, Status};

/// `ImageFile.MAXBLOCK`: the most Pillow reads of a chunk for one call of its decoder.
const PIECE: usize = 65_536;

/// One chunk of the first run of image data: where its data begins (after an fdAT's sequence
/// number) and the length its header declares (which the file may cut short).
#[derive(Clone, Copy, Debug)]
pub(super) struct DataChunk {
    pub start: usize,
    pub len: usize,
}

/// The filtered rows' layout, as `ZipDecode.c` walks it (Adam7 passes with no pixels skipped).
#[derive(Clone, Copy)]
pub(super) struct Layout {
    pub width: u64,
    pub height: u64,
    pub bits_per_pixel: u64,
    pub interlaced: bool,
}

const PASSES: [(u64, u64, u64, u64); 7] = [
    // (first column, column step, first row, row step)
    (0, 8, 0, 8),
    (4, 8, 0, 8),
    (0, 4, 4, 8),
    (2, 4, 0, 4),
    (0, 2, 2, 4),
    (1, 2, 0, 2),
    (0, 1, 1, 2),
];

impl Layout {
    /// Each pass's (rows, bytes per row with its filter byte); one pass if not interlaced.
    fn passes(&self) -> Vec<(u64, u64)> {
        let row = |w: u64| w.saturating_mul(self.bits_per_pixel).div_ceil(8) + 1;
        if !self.interlaced {
            return vec![(self.height, row(self.width))];
        }
        PASSES
            .iter()
            .filter_map(|&(x0, dx, y0, dy)| {
                let w = self.width.saturating_sub(x0).div_ceil(dx);
                let h = self.height.saturating_sub(y0).div_ceil(dy);
                (w > 0 && h > 0).then(|| (h, row(w)))
            })
            .collect()
    }

    /// The bytes of all filtered rows.
    pub(super) fn total(&self) -> Option<u64> {
        self.passes()
            .iter()
            .try_fold(0u64, |acc, &(h, r)| acc.checked_add(h.checked_mul(r)?))
    }
}

fn truncated(why: &str, pillow: &str) -> DecodeError {
    DecodeError::Truncated("PNG", format!("{why} (Pillow: \"{pillow}\")"))
}

/// Pillow's refusal where the data runs out before the image is complete: an unknown filter
/// type in a row it completed first, else a truncated file.
fn ran_out(out: &[u8], pos: usize, layout: &Layout, why: &str) -> DecodeError {
    match rows_done(out, pos, layout) {
        Err(e) => e,
        Ok(_) => truncated(why, "image file is truncated"),
    }
}

/// Whether `out[..end]` ends on a row boundary, after checking the filter type of every row it
/// completes (Pillow refuses a row whose type is over 4 when it completes it).
fn rows_done(out: &[u8], end: usize, layout: &Layout) -> Result<bool, DecodeError> {
    let mut at = 0usize;
    for (rows, len) in layout.passes() {
        let Ok(len) = usize::try_from(len) else {
            return Ok(false);
        };
        for _ in 0..rows {
            if at == end {
                return Ok(true);
            }
            if at + len > end {
                return Ok(false);
            }
            if out[at] > 4 {
                return Err(DecodeError::Corrupt(
                    "PNG",
                    format!(
                        "unknown filter type {} in the image data (Pillow: \"unrecognized data \
                         stream contents\")",
                        out[at]
                    ),
                ));
            }
            at += len;
        }
    }
    Ok(at == end)
}

/// A zlib stream inflated as its data comes.
struct Inflater {
    z: Decompress,
    done: bool,
}

/// Inflates `input` after what `out[..*pos]` holds, growing `out` up to `cap` bytes.
fn inflate(
    z: &mut Inflater,
    mut input: &[u8],
    out: &mut Vec<u8>,
    pos: &mut usize,
    cap: usize,
) -> Result<(), DecodeError> {
    loop {
        if *pos == out.len() && out.len() < cap {
            let len = out.len().max(PIECE).saturating_mul(2).min(cap);
            out.try_reserve_exact(len - out.len()).map_err(|_| {
                DecodeError::NoMemory(format!(
                    "the PNG's image data ({len} bytes inflated): {}",
                    AllocError { bytes: Some(len) }
                ))
            })?;
            out.resize(len, 0);
        }
        let (in0, out0) = (z.z.total_in(), z.z.total_out());
        let status =
            z.z.decompress(input, &mut out[*pos..], FlushDecompress::None);
        // Both counts are at most the slices' lengths.
        let used = usize::try_from(z.z.total_in() - in0).unwrap_or(input.len());
        let written = usize::try_from(z.z.total_out() - out0).unwrap_or(0);
        input = &input[used..];
        *pos += written;
        match status {
            Ok(Status::StreamEnd) => {
                z.done = true;
                return Ok(());
            }
            // Out of room below the cap: grow and go on; else zlib wants more input, or room
            // past the image (where Pillow stops).
            Ok(Status::Ok | Status::BufError) => {
                if !(*pos == out.len() && out.len() < cap && (used > 0 || written > 0)) {
                    return Ok(());
                }
            }
            Err(e) => {
                return Err(DecodeError::Corrupt(
                    "PNG",
                    format!(
                        "broken zlib stream in the image data: {e} (Pillow: \"broken data \
                         stream\")"
                    ),
                ))
            }
        }
    }
}

/// The filtered rows Pillow decodes from the data `chunks` of `data` (`cut`: the last one is cut
/// short by the end of the file), `total` bytes of them at most: fewer where the stream ends
/// early on a row boundary (the rest of the image is zero).
pub(super) fn pillow_rows(
    data: &[u8],
    chunks: &[DataChunk],
    cut: bool,
    layout: &Layout,
) -> Result<Vec<u8>, DecodeError> {
    let total = layout
        .total()
        .and_then(|t| usize::try_from(t).ok())
        .ok_or_else(|| DecodeError::Resources("the PNG's rows do not fit in memory".into()))?;
    let mut z = Inflater {
        z: Decompress::new(true),
        done: false,
    };
    let mut out = Vec::new();
    let mut pos = 0usize;
    for (index, chunk) in chunks.iter().enumerate() {
        let end = chunk.start.saturating_add(chunk.len);
        let mut at = chunk.start;
        while at < end {
            let piece_end = (at + PIECE).min(end);
            let Some(piece) = data
                .get(at..piece_end.min(data.len()))
                .filter(|p| !p.is_empty())
            else {
                return Err(ran_out(
                    &out,
                    pos,
                    layout,
                    "the image data ends before its last row",
                ));
            };
            let before = pos;
            if let Err(e) = inflate(&mut z, piece, &mut out, &mut pos, total) {
                // Rows completed before the zlib error are checked first.
                rows_done(&out, pos.min(total), layout)?;
                return Err(e);
            }
            let done = pos >= total;
            // The stream's end counts in the zlib call that completed a row, so in this piece.
            let ends_early = !done && z.done && before < pos;
            if done || ends_early {
                if !rows_done(&out, pos.min(total), layout)? {
                    return Err(ran_out(
                        &out,
                        pos,
                        layout,
                        "the zlib stream ends inside a row",
                    ));
                }
                if cut && index + 1 < chunks.len() {
                    return Err(truncated(
                        "a data chunk after the one that completes the image is cut short",
                        "Truncated File Read",
                    ));
                }
                out.truncate(pos.min(total));
                return Ok(out);
            }
            if z.done || piece_end > data.len() {
                let why = "the image data ends before its last row";
                return Err(ran_out(&out, pos, layout, why));
            }
            at = piece_end;
        }
    }
    Err(ran_out(
        &out,
        pos,
        layout,
        "the image data ends before its last row",
    ))
}

/// A zlib stream of `rows` followed by zeros up to `total` bytes: stored blocks, then one
/// fixed-Huffman block of the zeros (a literal, then copies of 258 at distance 1), so that a
/// header claiming far more rows than the file holds costs no buffer of zeros here. The
/// checksum is left zero: the stream is read with Adler-32 checks off.
pub(super) fn zlib_with_zeros(rows: &[u8], total: usize) -> Result<Vec<u8>, AllocError> {
    let zeros = total - rows.len();
    let len = 2 + rows.len() + 5 * rows.len().div_ceil(65_535) + zeros / 258 * 2 + 300 + 4;
    let mut z = super::alloc::with_capacity(len)?;
    z.extend_from_slice(&[0x78, 0x01]);
    for block in rows.chunks(65_535) {
        let n = block.len() as u16;
        z.push(0); // not final, stored, padded to the byte
        z.extend_from_slice(&n.to_le_bytes());
        z.extend_from_slice(&(!n).to_le_bytes());
        z.extend_from_slice(block);
    }
    let (mut acc, mut nbits) = (0u64, 0u32);
    let mut put = |z: &mut Vec<u8>, bits: u64, n: u32| {
        acc |= bits << nbits;
        nbits += n;
        while nbits >= 8 {
            z.push(acc as u8);
            acc >>= 8;
            nbits -= 8;
        }
    };
    // Huffman codes go most significant bit first.
    let code = |c: u64, n: u32| c.reverse_bits() >> (64 - n);
    put(&mut z, 0b011, 3); // final, fixed Huffman
    if zeros > 0 {
        put(&mut z, code(0x30, 8), 8); // literal 0
        for _ in 0..(zeros - 1) / 258 {
            put(&mut z, code(0xC5, 8) | (code(0, 5) << 8), 13); // length 258, distance 1
        }
        for _ in 0..(zeros - 1) % 258 {
            put(&mut z, code(0x30, 8), 8);
        }
    }
    put(&mut z, 0, 7); // end of block
    put(&mut z, 0, 7); // to the byte
    z.extend_from_slice(&[0; 4]);
    Ok(z)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_stream_inflates_to_rows_then_zeros() {
        for (rows, total) in [
            (vec![], 0),
            (vec![7u8; 3], 3),
            (vec![1, 2], 1000),
            (vec![9; 70_000], 200_000),
        ] {
            let z = zlib_with_zeros(&rows, total).unwrap();
            let mut d = fdeflate::Decompressor::new();
            d.ignore_adler32();
            let mut out = vec![0xAA; total + 10];
            let (_, n) = d.read(&z, &mut out, 0, true).unwrap();
            assert_eq!(n, total);
            assert!(d.is_done());
            assert_eq!(&out[..rows.len()], &rows[..]);
            assert!(out[rows.len()..total].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn interlaced_layout_skips_empty_passes() {
        let l = Layout {
            width: 1,
            height: 1,
            bits_per_pixel: 8,
            interlaced: true,
        };
        assert_eq!(l.total(), Some(2));
        let l = Layout {
            width: 3,
            height: 2,
            bits_per_pixel: 24,
            interlaced: false,
        };
        assert_eq!(l.total(), Some(2 * 10));
    }
}
