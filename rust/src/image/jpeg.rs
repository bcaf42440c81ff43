//! JPEG decoding through libjpeg-turbo's TurboJPEG 3 API, set up as Pillow sets up libjpeg: ISLOW
//! integer IDCT and fancy (smooth) chroma upsampling, both TurboJPEG's defaults. That is what makes
//! the pixels identical to Pillow's, OpenCV's and torchvision's.
use super::alloc;
use super::decode::{DecodeError, Raw, RawKind};
use std::ffi::CStr;
use turbojpeg_sys as tj;

/// Progressive scans allowed per image: libjpeg-turbo's own fuzzers use 500. A crafted file with
/// thousands of tiny scans otherwise takes seconds to decode; this makes it fail fast instead.
const SCAN_LIMIT: i32 = 500;

/// A TurboJPEG handle, destroyed on drop.
struct Handle(tj::tjhandle);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: created by tj3Init, destroyed once.
        unsafe { tj::tj3Destroy(self.0) }
    }
}

/// Runs `f` on a new TurboJPEG handle of `kind`, destroyed afterwards. Never a reused one:
/// libjpeg keeps the Huffman and quantization tables of one image in its decompressor for the
/// next (that is how abbreviated streams work), so a JPEG without DHT (a Motion-JPEG frame,
/// which relies on the standard tables that libjpeg-turbo installs only into empty slots) would
/// decode with the previous image's tables, and one without DQT would "decode" instead of
/// failing. Pillow and OpenCV create a decompressor per image too. A handle costs one
/// allocation of its state and tables, about 1% of decoding even a 64x64 JPEG (measured with
/// `decode` in a loop), so nothing is cached.
fn with_fresh<R, E: From<DecodeError>>(
    kind: tj::TJINIT,
    f: impl FnOnce(tj::tjhandle) -> Result<R, E>,
) -> Result<R, E> {
    // SAFETY: plain constructor; a null return is checked.
    let h = unsafe { tj::tj3Init(kind as i32) };
    if h.is_null() {
        return Err(DecodeError::Resources(
            "could not create a libjpeg-turbo decompressor (out of memory?)".into(),
        )
        .into());
    }
    let handle = Handle(h);
    // SAFETY: a live handle; the parameter exists in TurboJPEG 3.
    unsafe { tj::tj3Set(h, tj::TJPARAM_TJPARAM_SCANLIMIT as i32, SCAN_LIMIT) };
    let result = f(handle.0);
    drop(handle);
    result
}

fn with_handle<R, E: From<DecodeError>>(
    f: impl FnOnce(tj::tjhandle) -> Result<R, E>,
) -> Result<R, E> {
    with_fresh(tj::TJINIT_TJINIT_DECOMPRESS, f)
}

/// A TurboJPEG handle for lossless transformation (which is how the quantized DCT coefficients
/// are read: `jpeg_coeffs`), new for each image like the decompressor's.
pub(super) fn with_transform_handle<R>(
    f: impl FnOnce(tj::tjhandle) -> Result<R, DecodeError>,
) -> Result<R, DecodeError> {
    with_fresh(tj::TJINIT_TJINIT_TRANSFORM, f)
}

pub(super) fn error_string(h: tj::tjhandle) -> String {
    // SAFETY: TurboJPEG returns a pointer to a NUL-terminated string owned by the handle.
    unsafe {
        let p = tj::tj3GetErrorStr(h);
        if p.is_null() {
            "unknown libjpeg-turbo error".to_string()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}

fn classify(msg: String) -> DecodeError {
    // libjpeg says "Premature end of JPEG file" (a warning) or "... empty ..." when data runs out;
    // Pillow refuses such files ("image file is truncated"), so fastprep does too.
    let lower = msg.to_ascii_lowercase();
    if lower.contains("insufficient memory") {
        DecodeError::NoMemory(format!("libjpeg-turbo: {msg}"))
    } else if lower.contains("premature end")
        || lower.contains("empty")
        || lower.contains("truncated")
    {
        DecodeError::Truncated("JPEG", msg)
    } else if lower.contains("unsupported")
        || lower.contains("precision")
        || lower.contains("lossless")
    {
        DecodeError::Unsupported("JPEG", msg)
    } else {
        DecodeError::Corrupt("JPEG", msg)
    }
}

/// What the header says, read without decoding.
#[derive(Debug, Clone, Copy)]
pub struct JpegInfo {
    pub width: usize,
    pub height: usize,
    pub colorspace: i32,
    pub subsampling: i32,
}

/// A rectangle `[x0, x1) x [y0, y1)` of the (scaled) stored image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    pub x0: usize,
    pub y0: usize,
    pub x1: usize,
    pub y1: usize,
}

/// Whether a frame header (SOFn) and then the first scan header (SOS) come before the data ends.
/// TurboJPEG reports success for a "tables-only" stream, which is also what a file cut before its
/// first scan looks like, and leaves the previous image's size in the handle (and, cut after the
/// SOF, a handle that reads the next file as 0x0): so this walk of the markers decides first.
fn has_frame_header(data: &[u8]) -> bool {
    let mut i = 2;
    let mut sof = false;
    while i + 4 <= data.len() {
        if data[i] != 0xFF {
            // Stray bytes between markers: libjpeg skips them to the next 0xFF with a warning
            // ("Corrupt JPEG data: N extraneous bytes"), and Pillow decodes such files, so the
            // walk skips them too.
            match data[i..].iter().position(|&b| b == 0xFF) {
                Some(k) => {
                    i += k;
                    continue;
                }
                None => return false,
            }
        }
        let marker = data[i + 1];
        match marker {
            0xFF => {
                i += 1;
                continue;
            }
            0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF => sof = true,
            0xD9 => return false,
            _ => {}
        }
        i += 2 + usize::from(u16::from_be_bytes([data[i + 2], data[i + 3]]));
        if marker == 0xDA {
            // The whole scan header, not a file cut inside it.
            return sof && i <= data.len();
        }
    }
    false
}

/// A non-zero TurboJPEG return: fatal, or a warning that still left a complete result, judged
/// as Pillow judges the same file. Pillow ignores libjpeg's warnings ("N extraneous bytes before
/// marker", "premature end of data segment" where a marker cuts a scan short) but feeds libjpeg
/// through a suspending source, so a file whose data runs out is refused ("image file is
/// truncated"). TurboJPEG's memory source instead warns "Premature end of JPEG file" and
/// invents an EOI, and keeps only the last warning: so running out is told by that warning, or
/// by a cut-short scan in data that has no marker after its last scan (what cut it short was
/// the end of the data).
pub(super) fn check(h: tj::tjhandle, rc: i32, data: &[u8]) -> Result<(), DecodeError> {
    if rc == 0 {
        return Ok(());
    }
    // SAFETY: a live handle.
    let code = unsafe { tj::tj3GetErrorCode(h) };
    let msg = error_string(h);
    let lower = msg.to_ascii_lowercase();
    let ran_out = lower.contains("premature end of jpeg file")
        || (lower.contains("premature end of data segment") && !marker_after_last_scan(data));
    let fatal = ran_out
        || lower.contains("invalid jpeg file structure")
        || lower.contains("contains no image");
    if code != tj::TJERR_TJERR_WARNING as i32 || fatal {
        Err(classify(msg))
    } else {
        Ok(())
    }
}

/// Whether a marker (other than a restart marker) follows the entropy-coded data of the last
/// scan header in `data`.
fn marker_after_last_scan(data: &[u8]) -> bool {
    let Some(sos) = memchr::memmem::rfind(data, &[0xFF, 0xDA]) else {
        return false;
    };
    let Some(len) = data.get(sos + 2..sos + 4) else {
        return false;
    };
    let mut i = sos + 2 + usize::from(u16::from_be_bytes([len[0], len[1]]));
    while i + 1 < data.len() {
        if data[i] == 0xFF && !matches!(data[i + 1], 0x00 | 0xFF | 0xD0..=0xD7) {
            return true;
        }
        i += 1;
    }
    false
}

pub(super) fn header(h: tj::tjhandle, data: &[u8]) -> Result<JpegInfo, DecodeError> {
    if !has_frame_header(data) {
        return Err(DecodeError::Truncated(
            "JPEG",
            "the data ends before the frame header (SOF) and the first scan (SOS)".into(),
        ));
    }
    // SAFETY: `data` is a valid slice for the duration of the call.
    check(
        h,
        unsafe { tj::tj3DecompressHeader(h, data.as_ptr(), data.len() as tj::size_t) },
        data,
    )?;
    // SAFETY: a live handle on which a header was just read.
    let get = |p: u32| unsafe { tj::tj3Get(h, p as i32) };
    if get(tj::TJPARAM_TJPARAM_PRECISION) != 8 {
        return Err(DecodeError::Unsupported(
            "JPEG",
            format!(
                "{}-bit samples (Pillow decodes only 8-bit JPEGs); convert the file to 8-bit",
                get(tj::TJPARAM_TJPARAM_PRECISION)
            ),
        ));
    }
    if get(tj::TJPARAM_TJPARAM_LOSSLESS) != 0 {
        return Err(DecodeError::Unsupported(
            "JPEG",
            "lossless JPEG (SOF3), which Pillow does not decode either".into(),
        ));
    }
    Ok(JpegInfo {
        width: get(tj::TJPARAM_TJPARAM_JPEGWIDTH).max(0) as usize,
        height: get(tj::TJPARAM_TJPARAM_JPEGHEIGHT).max(0) as usize,
        colorspace: get(tj::TJPARAM_TJPARAM_COLORSPACE),
        subsampling: get(tj::TJPARAM_TJPARAM_SUBSAMP),
    })
}

/// Reads the header only (size, colorspace) for `max_pixels` checks and for choosing a draft scale.
pub fn read_info(data: &[u8]) -> Result<JpegInfo, DecodeError> {
    with_handle(|h| header(h, data))
}

/// Decodes to the image's own channels: gray (1), RGB (3, from YCbCr or RGB) or CMYK (4, inverted back as Pillow
/// does). `scale_denom` (1, 2, 4 or 8) is libjpeg's DCT-domain downscale,
/// as Pillow's `Image.draft` uses it; sizes round up (`ceil(w / denom)`).
pub fn decode(data: &[u8], max_pixels: Option<u64>, scale_denom: u32) -> Result<Raw, DecodeError> {
    decode_region(data, max_pixels, scale_denom, None, Vec::new()).map(|(raw, _)| raw)
}

/// The region of the scaled image to decode so that `want` comes out exactly as in a full decode:
/// one iMCU more on every side (libjpeg's partial decoding treats the region's edges like the
/// image's when upsampling chroma, which changes the edge pixels), the left edge moved down to
/// an iMCU boundary as TurboJPEG requires, and always down to the last row: libjpeg skips the
/// rows after a region without reading their data, so a file cut or corrupt below the region
/// would pass where a full decode (and Pillow) refuses it. None where it would save little (or
/// the subsampling is unknown).
fn region_to_decode(info: &JpegInfo, scale_denom: u32, want: Rect) -> Option<Rect> {
    let sub = usize::try_from(info.subsampling).ok().filter(|&s| s < 7)?;
    let d = scale_denom as usize;
    let scaled = |v: usize| v.div_ceil(d);
    // TurboJPEG's tjMCUWidth / tjMCUHeight (static arrays in its header, not exported symbols),
    // indexed by TJSAMP_444, 422, 420, GRAY, 440, 411, 441.
    const MCU_W: [usize; 7] = [8, 16, 16, 8, 8, 32, 8];
    const MCU_H: [usize; 7] = [8, 8, 16, 8, 16, 8, 32];
    let (mcu_w, mcu_h) = (MCU_W[sub], MCU_H[sub]);
    let (align, margin_y) = (scaled(mcu_w).max(1), scaled(mcu_h).max(1));
    let (w, h) = (scaled(info.width), scaled(info.height));
    let x0 = want.x0.saturating_sub(align) / align * align;
    let x1 = (want.x1 + align).min(w);
    let y0 = want.y0.saturating_sub(margin_y);
    let y1 = h;
    debug_assert!(want.y1 <= h);
    // Worth it only when it skips a fair share of the IDCT and colour conversion work.
    ((x1 - x0) * (y1 - y0) * 10 < w * h * 9).then_some(Rect { x0, y0, x1, y1 })
}

/// `decode`, of only what covers `want` (in scaled stored coordinates) when that saves work:
/// returns the pixels and the rectangle they cover. Inside `want` they equal a full decode's;
/// in the margin around it they may not (chroma upsampling at the region's edges).
///
/// The pixels go into `buf` (resized to fit): a caller decoding many images passes the previous
/// image's buffer back, which saves zeroing and faulting in a new one each time (only growth is
/// zeroed; TurboJPEG writes every byte of the region when it succeeds or only warns).
pub fn decode_region(
    data: &[u8],
    max_pixels: Option<u64>,
    scale_denom: u32,
    want: Option<Rect>,
    buf: Vec<u8>,
) -> Result<(Raw, Rect), DecodeError> {
    match decode_rect(data, max_pixels, scale_denom, want, buf) {
        // libjpeg warns about damaged data as it meets it, and TurboJPEG keeps only the last
        // warning, which `check` judges: a partial decode meets the damage in another order and
        // could judge the file otherwise. So a damaged file is judged by a full decode, as alone.
        Err(Warned) if want.is_some() => {
            decode_rect(data, max_pixels, scale_denom, None, Vec::new())
        }
        r => r,
    }
    .map_err(|e| match e {
        Warned => unreachable!("a full decode judges its warnings"),
        Failed(e) => e,
    })
}

enum RegionError {
    /// The partial decode warned about damaged data (no verdict yet).
    Warned,
    Failed(DecodeError),
}
use RegionError::{Failed, Warned};

impl From<DecodeError> for RegionError {
    fn from(e: DecodeError) -> Self {
        Failed(e)
    }
}

fn decode_rect(
    data: &[u8],
    max_pixels: Option<u64>,
    scale_denom: u32,
    want: Option<Rect>,
    buf: Vec<u8>,
) -> Result<(Raw, Rect), RegionError> {
    with_handle(|h| -> Result<(Raw, Rect), RegionError> {
        let info = header(h, data)?;
        let over_default_max_pixels =
            super::decode::check_pixels(info.width, info.height, max_pixels)?;
        let (pf, channels, kind) = match info.colorspace as u32 {
            tj::TJCS_TJCS_GRAY => (tj::TJPF_TJPF_GRAY, 1, RawKind::L),
            tj::TJCS_TJCS_CMYK | tj::TJCS_TJCS_YCCK => (tj::TJPF_TJPF_CMYK, 4, RawKind::Cmyk),
            _ => (tj::TJPF_TJPF_RGB, 3, RawKind::Rgb),
        };
        let factor = tj::tjscalingfactor {
            num: 1,
            denom: scale_denom as i32,
        };
        // SAFETY: a live handle; 1/1, 1/2, 1/4 and 1/8 are always among TurboJPEG's factors.
        if unsafe { tj::tj3SetScalingFactor(h, factor) } != 0 {
            return Err(Failed(DecodeError::Unsupported(
                "JPEG",
                format!("scale 1/{scale_denom}: {}", error_string(h)),
            )));
        }
        let d = scale_denom as usize;
        let (full_w, full_h) = (info.width.div_ceil(d), info.height.div_ceil(d));
        // SAFETY: a live handle whose header was just read (which sets TJPARAM_PROGRESSIVE and
        // TJPARAM_ARITHMETIC).
        let (progressive, arithmetic) = unsafe {
            (
                tj::tj3Get(h, tj::TJPARAM_TJPARAM_PROGRESSIVE as i32) == 1,
                tj::tj3Get(h, tj::TJPARAM_TJPARAM_ARITHMETIC as i32) == 1,
            )
        };
        // A sequential Huffman scan spends at least 2 bits on every block (a DC code and an
        // AC end-of-block code) of its first component: a header claiming more blocks than
        // that is a cut file, refused here before gigabytes are allocated and decoded from
        // libjpeg's zero fill (Pillow refuses it too, as truncated, after doing that work).
        let luma_blocks = (info.width as u64).div_ceil(8) * (info.height as u64).div_ceil(8);
        if !progressive && !arithmetic && (data.len() as u64) * 4 < luma_blocks {
            return Err(Failed(DecodeError::Truncated(
                "JPEG",
                format!(
                    "the header claims {}x{} pixels, which its {} bytes cannot code",
                    info.width,
                    info.height,
                    data.len()
                ),
            )));
        }
        let region = want
            .filter(|_| !(progressive && super::jpeg_coeffs::block_smoothing(data)))
            .and_then(|w| region_to_decode(&info, scale_denom, w));
        let rect = region.unwrap_or(Rect {
            x0: 0,
            y0: 0,
            x1: full_w,
            y1: full_h,
        });
        let (width, height) = (rect.x1 - rect.x0, rect.y1 - rect.y0);
        let crop = tj::tjregion {
            x: rect.x0 as i32,
            y: rect.y0 as i32,
            w: if region.is_some() { width as i32 } else { 0 },
            h: if region.is_some() { height as i32 } else { 0 },
        };
        // SAFETY: a live handle whose header was just read; the region lies inside the scaled
        // image with its left edge on an iMCU boundary (`region_to_decode`). A zero region is
        // TJUNCROPPED, which also clears the previous call's.
        if unsafe { tj::tj3SetCroppingRegion(h, crop) } != 0 {
            return Err(Failed(DecodeError::Unsupported(
                "JPEG",
                format!("partial decoding: {}", error_string(h)),
            )));
        }
        let mut pixels = buf;
        // Fallible: a 65535 x 65535 CMYK header asks for 17 GB.
        alloc::product(&[width, height, channels])
            .and_then(|n| alloc::resize_zeroed(&mut pixels, n))
            .map_err(|e| super::decode::no_memory(width, height, e))?;
        // SAFETY: `pixels` holds exactly width*height*channels bytes, the size TurboJPEG writes
        // for this pixel format and scaling factor with pitch 0 (= width * channels).
        let rc = unsafe {
            tj::tj3Decompress8(
                h,
                data.as_ptr(),
                data.len() as tj::size_t,
                pixels.as_mut_ptr(),
                0,
                pf,
            )
        };
        if rc != 0 && region.is_some() {
            return Err(Warned);
        }
        check(h, rc, data)?;
        // Pillow always assumes Adobe's inverted CMYK (rawmode "CMYK;I", read and write alike).
        if kind == RawKind::Cmyk {
            for v in &mut pixels {
                *v = 255 - *v;
            }
        }
        Ok((
            Raw {
                width,
                height,
                kind,
                pixels,
                over_default_max_pixels,
            },
            rect,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // The sample photos bundled with the package (the README's demo runs on them).
    const PHOTOS: [&[u8]; 2] = [
        include_bytes!("../../../python/fastprep/data/images/china.jpg"),
        include_bytes!("../../../python/fastprep/data/images/grace_hopper.jpg"),
    ];

    #[test]
    fn a_region_decodes_to_the_same_pixels_as_the_whole_image() {
        let mut partial = 0;
        for data in PHOTOS {
            for denom in [1u32, 2, 4, 8] {
                let full = decode(data, None, denom).unwrap();
                let (w, h) = (full.width, full.height);
                let c = full.pixels.len() / (w * h);
                let wants = [
                    Rect {
                        x0: w / 4,
                        y0: h / 3,
                        x1: w / 2,
                        y1: h / 2,
                    },
                    Rect {
                        x0: 0,
                        y0: 0,
                        x1: w / 3 + 1,
                        y1: h / 5 + 1,
                    },
                    Rect {
                        x0: w - w / 3,
                        y0: h - h / 4,
                        x1: w,
                        y1: h,
                    },
                    Rect {
                        x0: 0,
                        y0: h / 2,
                        x1: w,
                        y1: h / 2 + 1,
                    },
                ];
                for want in wants {
                    let reused = vec![7u8; 100];
                    let (raw, got) = decode_region(data, None, denom, Some(want), reused).unwrap();
                    assert!(
                        got.x0 <= want.x0
                            && got.y0 <= want.y0
                            && got.x1 >= want.x1
                            && got.y1 >= want.y1
                    );
                    assert_eq!((raw.width, raw.height), (got.x1 - got.x0, got.y1 - got.y0));
                    partial += usize::from(raw.width * raw.height < w * h);
                    let row = |x0: usize, x1: usize, y: usize, width: usize, px: &[u8]| {
                        px[(y * width + x0) * c..(y * width + x1) * c].to_vec()
                    };
                    for y in want.y0..want.y1 {
                        assert_eq!(
                            row(
                                want.x0 - got.x0,
                                want.x1 - got.x0,
                                y - got.y0,
                                raw.width,
                                &raw.pixels
                            ),
                            row(want.x0, want.x1, y, w, &full.pixels),
                            "denom {denom}, {want:?} -> {got:?}, row {y}"
                        );
                    }
                }
            }
        }
        assert!(partial >= 16, "the partial path ran only {partial} times");
    }
}
