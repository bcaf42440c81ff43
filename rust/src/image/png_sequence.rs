//! The chunk checks by which Pillow refuses a PNG while reading its first frame: the APNG
//! frame controls (acTL, fcTL, fdAT) and chunks too short for their fields.
//!
//! Pillow's `PngStream` calls a handler for every chunk up to the image data when it opens a
//! file and, when it loads the first frame, for every chunk after it up to IEND, or up to the
//! next frame's fcTL in an animated file (`PngImageFile.load_end`). A handler that raises
//! refuses the file, also after the pixels are decoded: an fdAT with no fcTL before it is a
//! "frame sequence error" even where the default image is whole.
use super::decode::DecodeError;

/// Pillow's handlers raise "Truncated ... chunk" (`ValueError`) for these when they are shorter.
const MIN_LEN: [(&[u8; 4], usize); 8] = [
    (b"IHDR", 13),
    (b"gAMA", 4),
    (b"cHRM", 32),
    (b"sRGB", 1),
    (b"pHYs", 9),
    (b"acTL", 8),
    (b"fcTL", 26),
    (b"fdAT", 4),
];

/// What Pillow's `PngStream` keeps of the chunks read so far.
#[derive(Default)]
pub(super) struct Sequence {
    width: u64,
    height: u64,
    /// acTL's frame count, where Pillow takes it (not 0, at most 2^31, a single acTL).
    frames: Option<u64>,
    /// The last fcTL or fdAT sequence number.
    seq: Option<u32>,
    /// The last fcTL's frame `[x, y, width, height]` before the image data, which then is the
    /// first frame, not a default image.
    frame: Option<[u32; 4]>,
    /// The image data is fdAT chunks (an fcTL, then fdAT with no IDAT).
    fdat_data: bool,
    /// Set at the first image data chunk: whether Pillow counts more than one frame.
    animated: Option<bool>,
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn corrupt(msg: String) -> DecodeError {
    DecodeError::Corrupt("PNG", msg)
}

impl Sequence {
    /// Whether the image data (IDAT, or an fdAT that Pillow takes as the image) has begun.
    pub(super) fn in_data(&self) -> bool {
        self.animated.is_some()
    }

    /// The first frame `[x, y, width, height]` where Pillow decodes it into a part of the
    /// `width` x `height` image (its fcTL smaller than IHDR) or from fdAT chunks, neither of
    /// which the APNG spec allows.
    pub(super) fn partial_first_frame(&self, width: usize, height: usize) -> Option<[u32; 4]> {
        let whole = |f: &[u32; 4]| f[2] as usize == width && f[3] as usize == height;
        self.frame
            .filter(|f| self.fdat_data || f[0] != 0 || f[1] != 0 || !whole(f))
    }

    /// Whether Pillow stops reading at a chunk of this type, before its body: the next frame
    /// of an animated file begins.
    pub(super) fn stops_at(&self, kind: &[u8]) -> bool {
        self.animated == Some(true) && kind == b"fcTL"
    }

    /// Runs Pillow's handler of one chunk (its whole body), in file order.
    pub(super) fn chunk(&mut self, kind: &[u8], body: &[u8]) -> Result<(), DecodeError> {
        if let Some((_, min)) = MIN_LEN.iter().find(|(k, _)| k.as_slice() == kind) {
            if body.len() < *min {
                return Err(corrupt(format!(
                    "the {} chunk has {} bytes, fewer than its {min} bytes of fields (Pillow: \
                     \"Truncated {0} chunk\")",
                    String::from_utf8_lossy(kind),
                    body.len()
                )));
            }
        }
        match kind {
            b"IHDR" => (self.width, self.height) = (be32(body, 0).into(), be32(body, 4).into()),
            b"acTL" => {
                // A second acTL, or a count of 0 or over 2^31: Pillow warns and shows the
                // default image as a still PNG.
                let n = u64::from(be32(body, 0));
                self.frames = if self.frames.is_some() || n == 0 || n > 1 << 31 {
                    None
                } else {
                    Some(n)
                };
            }
            b"fcTL" => {
                self.follow(be32(body, 0), true)?;
                let [w, h, x, y] = [4, 8, 12, 16].map(|at| be32(body, at));
                let outside = |at: u32, len: u32, size: u64| u64::from(at) + u64::from(len) > size;
                if outside(x, w, self.width) || outside(y, h, self.height) {
                    return Err(corrupt(format!(
                        "APNG contains invalid frames: a {w}x{h} frame at ({x}, {y}) outside the \
                         {}x{} image",
                        self.width, self.height
                    )));
                }
                if self.animated.is_none() {
                    self.frame = Some([x, y, w, h]);
                }
            }
            b"fdAT" => {
                self.follow(be32(body, 0), false)?;
                self.fdat_data |= self.animated.is_none();
                self.data_begins();
            }
            b"IDAT" => self.data_begins(),
            _ => {}
        }
        Ok(())
    }

    /// Pillow's sequence check: fcTL may start the sequence at 0, and each fcTL or fdAT must
    /// be the one after the last (an fdAT never starts it).
    fn follow(&mut self, seq: u32, may_start: bool) -> Result<(), DecodeError> {
        let next = match self.seq {
            None => may_start && seq == 0,
            Some(last) => u64::from(last) + 1 == u64::from(seq),
        };
        if !next {
            return Err(corrupt(format!(
                "APNG contains frame sequence errors: sequence number {seq} after {}",
                self.seq
                    .map_or_else(|| "none (no fcTL before it)".into(), |s| s.to_string())
            )));
        }
        self.seq = Some(seq);
        Ok(())
    }

    fn data_begins(&mut self) {
        if self.animated.is_none() {
            let default_image = self.frames.is_some() && self.frame.is_none();
            self.animated = Some(self.frames.unwrap_or(1) + u64::from(default_image) > 1);
        }
    }
}
