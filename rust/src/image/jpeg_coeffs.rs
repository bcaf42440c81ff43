//! The quantized DCT coefficients of a JPEG, for decoding its DCT stages elsewhere (the CUDA
//! kernels of `cuda/jpeg_idct.cu`): entropy decoding stays on the CPU, in libjpeg-turbo itself,
//! read through TurboJPEG's lossless-transform API (`tj3Transform` with `TJXOPT_NOOUTPUT` and a
//! `customFilter` that receives each component's coefficient rows), so progressive, arithmetic,
//! restart markers and corrupt-data handling are exactly libjpeg-turbo's.
//!
//! TurboJPEG exposes neither the quantization tables nor the per-component sampling factors, so
//! the frame header (SOFn) and the tables (DQT) are read here. libjpeg latches a component's
//! table when its first scan starts (`latch_quant_tables` in jdinput.c), so a table redefined
//! between scans applies only to components that had not started yet; this walk does the same.
use super::decode::DecodeError;
use super::jpeg;
use std::ffi::{c_int, c_short, c_void};
use turbojpeg_sys as tj;

/// Where each coefficient of the zigzag order lands in the natural (row-major 8x8) order:
/// `jpeg_natural_order` of jutils.c.
const NATURAL_ORDER: [usize; 64] = [
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20,
    13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59,
    52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
];

/// How the samples are coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorSpace {
    /// One component.
    Gray,
    /// Three components libjpeg converts from YCbCr to RGB.
    YCbCr,
    /// RGB, CMYK or YCCK: decoded on the CPU.
    Other,
}

/// One component of the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    pub id: u8,
    /// Sampling factors (1-4).
    pub h: usize,
    pub v: usize,
    /// Blocks per row and block rows, as libjpeg counts them: `ceil(width * h / (max_h * 8))`
    /// (no MCU padding).
    pub width_in_blocks: usize,
    pub height_in_blocks: usize,
    /// The quantization table the component's first scan latched, in natural order.
    pub quant: [u16; 64],
}

impl Component {
    /// Coefficients (i16) of the component: 64 per block.
    pub fn coefficient_count(&self) -> usize {
        self.width_in_blocks * self.height_in_blocks * 64
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub width: usize,
    pub height: usize,
    pub color_space: ColorSpace,
    pub max_h: usize,
    pub max_v: usize,
    pub components: Vec<Component>,
    /// libjpeg-turbo smooths the blocks of a progressive file whose low-frequency coefficients
    /// never got full precision (`decompress_smooth_data`): such a file is decoded on the CPU.
    pub block_smoothing: bool,
    /// The size is over `DEFAULT_MAX_PIXELS` (see `Image::over_default_max_pixels`).
    pub over_default_max_pixels: bool,
}

impl Layout {
    /// Coefficients (i16) of every component, stored one component after the other.
    pub fn coefficient_count(&self) -> usize {
        self.components
            .iter()
            .map(Component::coefficient_count)
            .sum()
    }
}

fn corrupt(msg: &str) -> DecodeError {
    DecodeError::Corrupt("JPEG", msg.to_string())
}

fn be16(data: &[u8], i: usize) -> Result<usize, DecodeError> {
    data.get(i..i + 2)
        .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
        .ok_or_else(|| DecodeError::Truncated("JPEG", "a marker segment runs past the end".into()))
}

/// (width, height, [(id, h, v, table)]) of the frame and, per component, its latched table.
type Frame = (usize, usize, Vec<(u8, usize, usize, usize)>);

/// The tables of one DQT segment (`data[start..end]`), each stored in natural order.
fn read_dqt(
    data: &[u8],
    start: usize,
    end: usize,
    tables: &mut [Option<[u16; 64]>; 4],
) -> Result<(), DecodeError> {
    let mut j = start;
    while j < end {
        let b = *data.get(j).ok_or_else(|| corrupt("short DQT"))?;
        let (pq, tq) = (b >> 4, usize::from(b & 15));
        if tq > 3 {
            return Err(corrupt("bogus DQT table index"));
        }
        j += 1;
        let mut t = [0u16; 64];
        for (k, &pos) in NATURAL_ORDER.iter().enumerate() {
            t[pos] = if pq == 0 {
                u16::from(*data.get(j + k).ok_or_else(|| corrupt("short DQT"))?)
            } else {
                be16(data, j + 2 * k)? as u16
            };
        }
        j += if pq == 0 { 64 } else { 128 };
        tables[tq] = Some(t);
    }
    Ok(())
}

/// What the marker walk finds: the frame, each component's latched table, and whether
/// libjpeg-turbo will apply its progressive block smoothing.
struct Markers {
    frame: Frame,
    tables: Vec<[u16; 64]>,
    smoothing: bool,
}

/// Whether libjpeg-turbo block-smooths this file (a progressive file whose low frequencies never
/// got full precision). Smoothing reads the blocks two away, which a partial decode treats as
/// the image's edge, so such files are decoded whole; a walk that fails counts as yes.
pub(super) fn block_smoothing(data: &[u8]) -> bool {
    parse_markers(data).map_or(true, |m| m.smoothing)
}

/// Coefficients whose progression decides block smoothing (jdcoefct.c `SAVED_COEFS`, zigzag 0-9).
const SAVED_COEFS: usize = 10;

/// libjpeg-turbo's `smoothing_ok` (jdcoefct.c) at the output pass of a fully read progressive
/// file: `coef_bits[k]` is the Al of the last scan that coded zigzag coefficient k (-1: none);
/// smoothing runs when every component has its DC, the tables have no zero among the first ten
/// multipliers, and some component lacks full precision in one of coefficients 1-9.
fn smoothing_ok(coef_bits: &[[i32; SAVED_COEFS]], tables: &[[u16; 64]]) -> bool {
    if tables
        .iter()
        .any(|t| NATURAL_ORDER[..SAVED_COEFS].iter().any(|&p| t[p] == 0))
    {
        return false;
    }
    if coef_bits.iter().any(|b| b[0] < 0) {
        return false;
    }
    coef_bits.iter().any(|b| b[1..].iter().any(|&v| v != 0))
}

/// The position of the marker that ends the entropy-coded data starting at `i`: the first 0xFF
/// that is not a stuffed 0xFF00 or a restart marker.
fn skip_entropy_data(data: &[u8], mut i: usize) -> usize {
    // memchr to each 0xFF: a 1080p scan is ~400 kB with a 0xFF every ~200 bytes, and this walk runs
    // for every file the GPU path plans.
    while i + 1 < data.len() {
        match memchr::memchr(0xFF, &data[i..data.len() - 1]) {
            None => return data.len() - 1,
            Some(k) => i += k,
        }
        if data[i + 1] != 0 && !(0xD0..=0xD7).contains(&data[i + 1]) {
            break;
        }
        i += 1;
    }
    i
}

fn parse_markers(data: &[u8]) -> Result<Markers, DecodeError> {
    let mut tables: [Option<[u16; 64]>; 4] = [None; 4];
    let mut frame: Option<Frame> = None;
    let mut latched: Vec<Option<[u16; 64]>> = Vec::new();
    let mut progressive = false;
    let mut coef_bits: Vec<[i32; SAVED_COEFS]> = Vec::new();
    let mut i = 2;
    loop {
        // The next marker: 0xFF, any fill bytes, a code.
        while i < data.len() && data[i] != 0xFF {
            i += 1;
        }
        while i < data.len() && data[i] == 0xFF {
            i += 1;
        }
        let Some(&m) = data.get(i) else { break };
        i += 1;
        match m {
            0xD9 => break,
            0x01 | 0xD0..=0xD8 => {}
            0xDB => {
                let len = be16(data, i)?;
                read_dqt(data, i + 2, i + len, &mut tables)?;
                i += len;
            }
            0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF => {
                let len = be16(data, i)?;
                let seg = data
                    .get(i + 2..i + len)
                    .ok_or_else(|| DecodeError::Truncated("JPEG", "short SOF".into()))?;
                if seg.len() < 6 {
                    return Err(corrupt("short SOF"));
                }
                let (h, w, n) = (
                    usize::from(u16::from_be_bytes([seg[1], seg[2]])),
                    usize::from(u16::from_be_bytes([seg[3], seg[4]])),
                    usize::from(seg[5]),
                );
                if seg.len() < 6 + 3 * n || n == 0 {
                    return Err(corrupt("short SOF"));
                }
                let comps = (0..n)
                    .map(|c| {
                        let b = &seg[6 + 3 * c..9 + 3 * c];
                        (
                            b[0],
                            usize::from(b[1] >> 4),
                            usize::from(b[1] & 15),
                            usize::from(b[2]),
                        )
                    })
                    .collect();
                frame = Some((w, h, comps));
                latched = vec![None; n];
                coef_bits = vec![[-1; SAVED_COEFS]; n];
                progressive = matches!(m, 0xC2 | 0xC6 | 0xCA | 0xCE);
                i += len;
            }
            0xDA => {
                let len = be16(data, i)?;
                let Some((_, _, comps)) = &frame else {
                    return Err(corrupt("scan before the frame header"));
                };
                let ns = usize::from(data.get(i + 2).copied().unwrap_or(0));
                // Spectral selection and successive approximation after the component list.
                let at = |k: usize| usize::from(data.get(i + 3 + 2 * ns + k).copied().unwrap_or(0));
                let (ss, se, al) = (at(0), at(1), at(2) & 15);
                for s in 0..ns {
                    let cs = data.get(i + 3 + 2 * s).copied();
                    if let Some(c) = comps.iter().position(|c| Some(c.0) == cs) {
                        let last = se.min(SAVED_COEFS - 1);
                        for b in coef_bits[c].iter_mut().take(last + 1).skip(ss) {
                            *b = al as i32;
                        }
                        if latched[c].is_none() {
                            latched[c] = Some(tables[comps[c].3.min(3)].ok_or_else(|| {
                                corrupt("a scan uses a quantization table that is not defined")
                            })?);
                        }
                    }
                }
                i = skip_entropy_data(data, i + len);
            }
            _ => i += be16(data, i)?,
        }
    }
    let frame = frame.ok_or_else(|| corrupt("no frame header"))?;
    let tables = latched
        .into_iter()
        .map(|t| t.ok_or_else(|| corrupt("a component is in no scan")))
        .collect::<Result<Vec<_>, _>>()?;
    let smoothing = progressive && smoothing_ok(&coef_bits, &tables);
    Ok(Markers {
        frame,
        tables,
        smoothing,
    })
}

/// The frame's components, block grids and quantization tables: libjpeg-turbo reads the header
/// (refusing what `decode` refuses), the marker walk here adds what TurboJPEG does not expose.
pub fn read_layout(data: &[u8], max_pixels: Option<u64>) -> Result<Layout, DecodeError> {
    // Every failure replaces the thread's handle, also those found after libjpeg-turbo's header
    // read succeeded: a truncated header can leave a handle that reports the next file as 0x0.
    let (
        info,
        Markers {
            frame: (w, h, comps),
            tables,
            smoothing,
        },
        over_default_max_pixels,
    ) = jpeg::with_transform_handle(|h| {
        let info = jpeg::header(h, data)?;
        let over = super::decode::check_pixels(info.width, info.height, max_pixels)?;
        Ok((info, parse_markers(data)?, over))
    })?;
    if (w, h) != (info.width, info.height) {
        return Err(corrupt(
            "the frame header does not match libjpeg-turbo's reading",
        ));
    }
    let color_space = match (info.colorspace as u32, comps.len()) {
        (tj::TJCS_TJCS_GRAY, 1) => ColorSpace::Gray,
        (tj::TJCS_TJCS_YCbCr, 3) => ColorSpace::YCbCr,
        _ => ColorSpace::Other,
    };
    let max_h = comps.iter().map(|c| c.1).max().unwrap_or(1);
    let max_v = comps.iter().map(|c| c.2).max().unwrap_or(1);
    if comps
        .iter()
        .any(|c| !(1..=4).contains(&c.1) || !(1..=4).contains(&c.2))
    {
        return Err(corrupt("bogus sampling factors"));
    }
    let components = comps
        .iter()
        .zip(tables)
        .map(|(&(id, ch, cv, _), quant)| Component {
            id,
            h: ch,
            v: cv,
            width_in_blocks: (w * ch).div_ceil(max_h * 8),
            height_in_blocks: (h * cv).div_ceil(max_v * 8),
            quant,
        })
        .collect();
    Ok(Layout {
        width: w,
        height: h,
        color_space,
        max_h,
        max_v,
        components,
        block_smoothing: smoothing,
        over_default_max_pixels,
    })
}

/// What the filter callback writes into: per component, its first coefficient in `out`, blocks
/// per row and block rows.
struct Sink {
    out: *mut i16,
    len: usize,
    comps: Vec<(usize, usize, usize)>,
    bad: bool,
}

/// TurboJPEG's `customFilter`: called with one row of blocks (`arrayRegion`, 8 sample rows high)
/// of component `ci`. Rows past the component's `height_in_blocks` (MCU padding) are not stored.
unsafe extern "C" fn filter(
    coeffs: *mut c_short,
    array_region: tj::tjregion,
    _plane_region: tj::tjregion,
    ci: c_int,
    _transform_id: c_int,
    transform: *mut tj::tjtransform,
) -> c_int {
    // SAFETY: `data` is the `Sink` that `read_coefficients` set and keeps alive for the call.
    let sink = unsafe { &mut *(*transform).data.cast::<Sink>() };
    let Some(&(start, wb, hb)) = usize::try_from(ci).ok().and_then(|c| sink.comps.get(c)) else {
        sink.bad = true;
        return -1;
    };
    let row = (array_region.y / 8) as usize;
    if array_region.w as usize != wb * 8 || array_region.x != 0 {
        sink.bad = true;
        return -1;
    }
    if row >= hb {
        return 0;
    }
    let n = wb * 64;
    let at = start + row * n;
    if at + n > sink.len {
        sink.bad = true;
        return -1;
    }
    // SAFETY: `coeffs` holds `wb` blocks of 64 coefficients (arrayRegion.w / 8 blocks, checked
    // above); `out` holds `len` elements and `at + n <= len`.
    unsafe { std::ptr::copy_nonoverlapping(coeffs.cast_const(), sink.out.add(at), n) };
    0
}

/// Entropy-decodes `data` and writes every component's coefficients into `out`
/// (`layout.coefficient_count()` elements): component after component, block row after block
/// row, each block 64 coefficients in natural order.
pub fn read_coefficients(data: &[u8], layout: &Layout, out: &mut [i16]) -> Result<(), DecodeError> {
    let need = layout.coefficient_count();
    if out.len() < need {
        return Err(DecodeError::Resources(format!(
            "the coefficient buffer holds {} values, the image needs {need}",
            out.len()
        )));
    }
    let mut comps = Vec::with_capacity(layout.components.len());
    let mut start = 0;
    for c in &layout.components {
        comps.push((start, c.width_in_blocks, c.height_in_blocks));
        start += c.coefficient_count();
    }
    let mut sink = Sink {
        out: out.as_mut_ptr(),
        len: need,
        comps,
        bad: false,
    };
    jpeg::with_transform_handle(|h| {
        jpeg::header(h, data)?;
        let xform = tj::tjtransform {
            r: tj::tjregion {
                x: 0,
                y: 0,
                w: 0,
                h: 0,
            },
            op: tj::TJXOP_TJXOP_NONE as c_int,
            options: (tj::TJXOPT_NOOUTPUT | tj::TJXOPT_COPYNONE) as c_int,
            data: std::ptr::addr_of_mut!(sink).cast::<c_void>(),
            customFilter: Some(filter),
        };
        let mut dst: *mut u8 = std::ptr::null_mut();
        let mut dst_size: tj::size_t = 0;
        // SAFETY: `data` is valid for the call; with TJXOPT_NOOUTPUT nothing is written to
        // `dst`; the filter's `Sink` outlives the call.
        let rc = unsafe {
            tj::tj3Transform(
                h,
                data.as_ptr(),
                data.len() as tj::size_t,
                1,
                &raw mut dst,
                &raw mut dst_size,
                &raw const xform,
            )
        };
        jpeg::check(h, rc, data)
    })?;
    if sink.bad {
        return Err(corrupt(
            "libjpeg-turbo's coefficient arrays do not match the frame header",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_is_a_permutation() {
        let mut seen = [false; 64];
        for &p in &NATURAL_ORDER {
            assert!(!seen[p]);
            seen[p] = true;
        }
    }

    /// The DC coefficients say each block's mean: `DC * q / 8 + 128` must be the mean luma of
    /// the decoded block (up to rounding and chroma error), which checks the grid, the order
    /// and the latched table together.
    #[test]
    fn dc_terms_are_the_block_means_of_the_decoded_photo() {
        let data = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/python/fastprep/data/images/china.jpg"
        ))
        .unwrap();
        let layout = read_layout(&data, None).unwrap();
        assert_eq!(layout.color_space, ColorSpace::YCbCr);
        assert_eq!(layout.components.len(), 3);
        let y = &layout.components[0];
        assert_eq!(
            y.width_in_blocks,
            layout.width.div_ceil(8 * layout.max_h / y.h)
        );
        let mut coefs = vec![0i16; layout.coefficient_count()];
        read_coefficients(&data, &layout, &mut coefs).unwrap();
        let img = crate::image::decode(&data, &crate::image::DecodeOptions::default()).unwrap();
        let (mut worst, mut checked) = (0.0f64, 0);
        for by in 0..layout.height / 8 {
            for bx in 0..layout.width / 8 {
                let dc =
                    f64::from(coefs[(by * y.width_in_blocks + bx) * 64]) * f64::from(y.quant[0]);
                let mut sum = 0.0;
                for py in 0..8 {
                    for px in 0..8 {
                        let p = &img.pixels[((by * 8 + py) * img.width + bx * 8 + px) * 3..][..3];
                        sum += 0.299 * f64::from(p[0])
                            + 0.587 * f64::from(p[1])
                            + 0.114 * f64::from(p[2]);
                    }
                }
                worst = worst.max((dc / 8.0 + 128.0 - sum / 64.0).abs());
                checked += 1;
            }
        }
        assert!(
            checked > 1000 && worst < 6.0,
            "{checked} blocks, worst {worst}"
        );
    }

    #[test]
    fn skipping_entropy_data_stops_at_the_first_real_marker() {
        fn naive(data: &[u8], mut i: usize) -> usize {
            while i + 1 < data.len() {
                if data[i] == 0xFF && data[i + 1] != 0 && !(0xD0..=0xD7).contains(&data[i + 1]) {
                    break;
                }
                i += 1;
            }
            i
        }
        let mut state = 12345u32;
        for len in 0..300 {
            let data: Vec<u8> = (0..len)
                .map(|_| {
                    state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    // mostly plain bytes, 0xFF often, then 0x00, RSTn or another code after it
                    match (state >> 16) % 8 {
                        0 | 1 => 0xFF,
                        2 => 0x00,
                        3 => 0xD0 + ((state >> 8) % 8) as u8,
                        4 => 0xD9,
                        _ => (state >> 20) as u8,
                    }
                })
                .collect();
            for start in 0..=len.min(5) {
                assert_eq!(
                    skip_entropy_data(&data, start),
                    naive(&data, start),
                    "{data:?} {start}"
                );
            }
        }
    }

    #[test]
    fn junk_is_refused() {
        assert!(read_layout(b"\xff\xd8\xff\xd9", None).is_err());
        assert!(parse_markers(b"\xff\xd8\xff\xd9").is_err());
        let t = [1u16; 64];
        assert!(!smoothing_ok(&[[0; SAVED_COEFS]], &[t])); // complete: no smoothing
        assert!(smoothing_ok(&[[0, 1, 0, 0, 0, 0, 0, 0, 0, 0]], &[t])); // one bit short
        assert!(smoothing_ok(
            &[[0, -1, -1, -1, -1, -1, -1, -1, -1, -1]],
            &[t]
        )); // DC only
        assert!(!smoothing_ok(&[[-1; SAVED_COEFS]], &[t])); // no DC
        assert!(!smoothing_ok(&[[0, 1, 0, 0, 0, 0, 0, 0, 0, 0]], &[[0; 64]])); // zero table
    }
}
