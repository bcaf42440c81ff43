//! Training transforms, fused: encoded bytes -> `RandomResizedCrop` -> `RandomHorizontalFlip`
//! -> `ToDtype(float32, scale=True)` -> `Normalize`, into a slot of the caller's batch buffer.
//!
//! Pixels are those of torchvision's v2 transforms on a Pillow image given the same parameters:
//! `resized_crop` on a PIL image is `img.crop(box)` then `img.resize(size)`, so the resize
//! filter sees only the crop (it never reads pixels outside the box, unlike Pillow's
//! `resize(box=...)`); here the crop is cut from the decoded pixels and resized as a whole image
//! with the Pillow-exact resize. A JPEG is decoded only over the rows and columns that cover the
//! crop (libjpeg-turbo's partial decode, with the margin its chroma upsampling reads), whose
//! pixels inside the crop are those of a full decode.
//!
//! Sampling follows torchvision's `RandomResizedCrop.make_params` step for step (up to 10 tries
//! of an area fraction and a log-uniform aspect ratio, rounded half to even, then the central
//! fallback), in the same float32/float64 mix, with our own generator (see `SplitMix64`): the
//! parameters are returned, so a caller can replay them through torchvision.
use super::decode::{self, DecodeError, DecodeOptions, Format, Image, Mode};
use super::jpeg::{self, Rect};
use super::pipeline::{
    map_rect, recycle_pixels, spare_pixels, write_output, DType, Layout, Processed, StageTimes,
    Tables,
};
use super::resize::{resize_region_into, Filter, Window};
use std::time::Instant;

/// What a training pipeline does to every image.
#[derive(Debug, Clone)]
pub struct TrainSpec {
    /// (width, height) of every output image.
    pub size: (usize, usize),
    /// Range of the crop's area as a fraction of the image's (torchvision's `scale`).
    pub scale: (f64, f64),
    /// Range of the crop's width / height (torchvision's `ratio`).
    pub ratio: (f64, f64),
    /// Probability of a horizontal flip.
    pub flip_p: f64,
    pub filter: Filter,
    pub mean: [f32; 3],
    pub std: [f32; 3],
    pub layout: Layout,
    pub dtype: DType,
    pub max_pixels: Option<u64>,
    pub apply_exif_orientation: bool,
}

impl TrainSpec {
    /// Bytes of one output image.
    pub fn image_bytes(&self) -> usize {
        self.size.0 * self.size.1 * 3 * self.dtype.size()
    }

    /// The problem with the settings, if any (checked once per call, before any image).
    pub fn check(&self) -> Result<(), String> {
        let (s0, s1) = self.scale;
        let (r0, r1) = self.ratio;
        if self.size.0 == 0 || self.size.1 == 0 {
            return Err(format!("size must be positive, got {:?}", self.size));
        }
        if !(s0 > 0.0 && s0 <= s1 && s1.is_finite()) {
            return Err(format!(
                "scale must be (min, max) with 0 < min <= max, got {:?}",
                self.scale
            ));
        }
        if !(r0 > 0.0 && r0 <= r1 && r1.is_finite()) {
            return Err(format!(
                "ratio must be (min, max) with 0 < min <= max, got {:?}",
                self.ratio
            ));
        }
        if !(0.0..=1.0).contains(&self.flip_p) {
            return Err(format!("flip_p must be in [0, 1], got {}", self.flip_p));
        }
        Ok(())
    }
}

/// One image's sampled transform, in the oriented image's pixels (torchvision's `top`, `left`,
/// `height`, `width` of `resized_crop`, and whether `horizontal_flip` followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    pub top: usize,
    pub left: usize,
    pub height: usize,
    pub width: usize,
    pub flip: bool,
}

/// SplitMix64 (Steele, Lea and Flood 2014; Vigna's public-domain reference `splitmix64.c`):
/// a 64-bit counter through a mixing function. Chosen over a crate because each image needs its
/// own stream derived from (seed, step, index) in a few instructions, so that the parameters do
/// not depend on the thread count or the order in which threads pick images, and because the
/// crate that carries it (`rand_xoshiro`) would be fastprep's only `rand` dependency.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The stream of image `index` of call `step` of a pipeline seeded with `seed`. `mix` is a
    /// bijection, so different indices of one (seed, step) never share a stream.
    pub fn stream(seed: u64, step: u64, index: u64) -> Self {
        Self::new(mix(mix(mix(seed).wrapping_add(step)).wrapping_add(index)))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix(self.state)
    }

    /// A float32 in [0, 1) with 24 random bits, as torch's `uniform_` draws for float32.
    pub fn unit_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u32 << 24) as f32)
    }

    /// torch's `uniform_(lo, hi)` on a float32 tensor: `u * (hi - lo) + lo` in float32.
    pub fn uniform_f32(&mut self, lo: f32, hi: f32) -> f32 {
        self.unit_f32() * (hi - lo) + lo
    }

    /// A uniform integer in [0, n), n > 0, without bias (Lemire's multiply and reject).
    pub fn below(&mut self, n: u64) -> u64 {
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }
}

/// torchvision's `RandomResizedCrop.make_params` then `RandomHorizontalFlip`'s coin, for an image
/// of `width` x `height`: `target_area = area * uniform(scale)` (float32 draw, float64 product),
/// `aspect = exp(uniform(log(ratio)))` (float32), `w, h = round(sqrt(target_area * aspect)),
/// round(sqrt(target_area / aspect))` (float64, half to even); kept when `0 < w <= width` and
/// `0 < h <= height`, placed uniformly; after 10 misses, the central crop of the image clamped to
/// the ratio range. Flip when a uniform [0, 1) draw is below `flip_p` (torch: not `rand >= p`).
pub fn sample(width: usize, height: usize, spec: &TrainSpec, rng: &mut SplitMix64) -> Params {
    let area = (width as f64) * (height as f64);
    let (s0, s1) = (spec.scale.0 as f32, spec.scale.1 as f32);
    let (l0, l1) = ((spec.ratio.0 as f32).ln(), (spec.ratio.1 as f32).ln());
    let mut chosen = None;
    for _ in 0..10 {
        let target_area = area * f64::from(rng.uniform_f32(s0, s1));
        let aspect = f64::from(rng.uniform_f32(l0, l1).exp());
        let w = (target_area * aspect).sqrt().round_ties_even();
        let h = (target_area / aspect).sqrt().round_ties_even();
        if w > 0.0 && w <= width as f64 && h > 0.0 && h <= height as f64 {
            let (w, h) = (w as usize, h as usize);
            let top = rng.below((height - h + 1) as u64) as usize;
            let left = rng.below((width - w + 1) as u64) as usize;
            chosen = Some((top, left, h, w));
            break;
        }
    }
    let (top, left, h, w) = chosen.unwrap_or_else(|| {
        let in_ratio = width as f64 / height as f64;
        let (rmin, rmax) = (spec.ratio.0, spec.ratio.1);
        let (w, h) = if in_ratio < rmin {
            let h = (width as f64 / rmin).round_ties_even() as usize;
            (width, h)
        } else if in_ratio > rmax {
            let w = (height as f64 * rmax).round_ties_even() as usize;
            (w, height)
        } else {
            (width, height)
        };
        ((height - h) / 2, (width - w) / 2, h, w)
    });
    let flip = f64::from(rng.unit_f32()) < spec.flip_p;
    Params {
        top,
        left,
        height: h,
        width: w,
        flip,
    }
}

/// How an image's parameters are chosen: drawn from its stream, or given (a replay).
#[derive(Debug, Clone)]
pub enum Choice {
    Draw(SplitMix64),
    Given(Params),
}

fn choose(
    choice: Choice,
    width: usize,
    height: usize,
    spec: &TrainSpec,
) -> Result<Params, DecodeError> {
    match choice {
        Choice::Draw(mut rng) => Ok(sample(width, height, spec, &mut rng)),
        Choice::Given(p) => {
            // An empty box is allowed: Pillow crops it to a 0-pixel image and resizes that to
            // black, and torchvision's fallback can produce one (see `process_one`).
            let fits = |start: usize, len: usize, size: usize| {
                start.checked_add(len).is_some_and(|end| end <= size)
            };
            let inside = fits(p.left, p.width, width) && fits(p.top, p.height, height);
            if inside {
                Ok(p)
            } else {
                Err(DecodeError::Unsupported(
                    "crop",
                    format!(
                        "top={} left={} height={} width={} does not fit in the {width}x{height} \
                         image; give a box inside the (EXIF-oriented) image",
                        p.top, p.left, p.height, p.width
                    ),
                ))
            }
        }
    }
}

/// The crop's pixels (RGB, `width * height * 3` bytes), the parameters used, and the oriented
/// image's (width, height) if it is over `DEFAULT_MAX_PIXELS` (`Processed`).
fn decode_crop(
    data: &[u8],
    spec: &TrainSpec,
    choice: Choice,
) -> Result<(Vec<u8>, Params, Option<(usize, usize)>), DecodeError> {
    if decode::sniff(data)? != Format::Jpeg {
        let opts = DecodeOptions {
            mode: Mode::Rgb,
            apply_exif_orientation: spec.apply_exif_orientation,
            max_pixels: spec.max_pixels,
            scale_denom: 1,
        };
        let img = decode::decode(data, &opts)?;
        let p = choose(choice, img.width, img.height, spec)?;
        let all = Window {
            x: 0,
            y: 0,
            width: img.width,
            height: img.height,
        };
        let crop = cut(&img, all, p)?;
        let over = img
            .over_default_max_pixels
            .then_some((img.width, img.height));
        return Ok((crop, p, over));
    }
    let (sw, sh, _) = decode::stored_size(data)?;
    let o = if spec.apply_exif_orientation {
        decode::orientation(data, Format::Jpeg)
    } else {
        1
    };
    let swapped = decode::orientation_axes(o).0;
    let (w, h) = if swapped { (sh, sw) } else { (sw, sh) };
    // A header without a size (a file cut short) gets no region: the full decode reports it.
    let (p, want) = if w > 0 && h > 0 {
        let p = choose(choice, w, h, spec)?;
        let r = Window {
            x: p.left,
            y: p.top,
            width: p.width,
            height: p.height,
        };
        let s = map_rect(r, o, sw, sh, true);
        let want = Rect {
            x0: s.x,
            y0: s.y,
            x1: s.x + s.width,
            y1: s.y + s.height,
        };
        // An empty crop still decodes the whole file, which judges it as Pillow's load would.
        let empty = p.width == 0 || p.height == 0;
        (Some(p), (!empty).then_some(want))
    } else {
        (None, None)
    };
    let (raw, got) = jpeg::decode_region(data, spec.max_pixels, 1, want, spare_pixels())?;
    let mut img = decode::convert(raw, Mode::Rgb)?;
    if o != 1 {
        let turned = decode::orient(&img, o)?;
        recycle_pixels(std::mem::replace(&mut img, turned).pixels);
    }
    let got = Window {
        x: got.x0,
        y: got.y0,
        width: got.x1 - got.x0,
        height: got.y1 - got.y0,
    };
    let region = map_rect(got, o, sw, sh, false);
    let Some(p) = p else {
        return Err(DecodeError::Corrupt(
            "JPEG",
            "the header gives no size".into(),
        ));
    };
    let crop = cut(&img, region, p);
    let over = img.over_default_max_pixels.then_some((w, h));
    recycle_pixels(img.pixels);
    Ok((crop?, p, over))
}

/// Copies the crop `p` out of `img`, which holds the rectangle `region` of the image.
fn cut(img: &Image, region: Window, p: Params) -> Result<Vec<u8>, DecodeError> {
    let covered = p.left >= region.x
        && p.top >= region.y
        && p.left + p.width <= region.x + region.width
        && p.top + p.height <= region.y + region.height
        && img.width == region.width
        && img.height == region.height
        && img.channels == 3;
    if !covered {
        return Err(DecodeError::Unsupported(
            "crop",
            format!("the decoded region {region:?} does not cover the crop {p:?} (a bug: please report it)"),
        ));
    }
    let row = region.width * 3;
    let (x, len) = ((p.left - region.x) * 3, p.width * 3);
    let mut out = Vec::new();
    out.try_reserve_exact(len * p.height).map_err(|_| {
        DecodeError::Resources(format!("out of memory for a {}x{} crop", p.width, p.height))
    })?;
    for y in p.top - region.y..p.top - region.y + p.height {
        out.extend_from_slice(&img.pixels[y * row + x..y * row + x + len]);
    }
    Ok(out)
}

/// Mirrors each row of an RGB image in place.
fn flip_rows(pixels: &mut [u8], width: usize) {
    for row in pixels.chunks_exact_mut(width * 3) {
        let (mut i, mut j) = (0, width.saturating_sub(1));
        while i < j {
            for c in 0..3 {
                row.swap(i * 3 + c, j * 3 + c);
            }
            i += 1;
            j -= 1;
        }
    }
}

fn nanos(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Runs the training transform on one encoded image, writing `spec.image_bytes()` bytes into
/// `out`; returns the parameters used, the time of each stage and the size flag.
pub fn process_one(
    data: &[u8],
    spec: &TrainSpec,
    tables: &Tables,
    choice: Choice,
    out: &mut [u8],
) -> Result<(Params, Processed), DecodeError> {
    let t0 = Instant::now();
    let (crop, p, over_default_max_pixels) = decode_crop(data, spec, choice)?;
    let decode_ns = nanos(t0);

    let t1 = Instant::now();
    let (ow, oh) = spec.size;
    let mut pixels = Vec::new();
    pixels
        .try_reserve_exact(ow * oh * 3)
        .map_err(|_| DecodeError::Resources(format!("out of memory for a {ow}x{oh} output")))?;
    pixels.resize(ow * oh * 3, 0);
    let whole = |width, height| Window {
        x: 0,
        y: 0,
        width,
        height,
    };
    // Pillow resizes an empty crop to black: the zeros `pixels` starts with.
    let empty = p.width == 0 || p.height == 0;
    if !empty {
        resize_region_into(
            &crop,
            whole(p.width, p.height),
            p.width,
            p.height,
            3,
            ow,
            oh,
            spec.filter,
            whole(ow, oh),
            &mut pixels,
        )
        .map_err(|e| DecodeError::Unsupported("resize", e.to_string()))?;
    }
    if p.flip {
        flip_rows(&mut pixels, ow);
    }
    let resize_ns = nanos(t1);

    let t2 = Instant::now();
    write_output(&pixels, ow, oh, (spec.layout, spec.dtype), tables, out);
    let times = StageTimes {
        decode: decode_ns,
        resize: resize_ns,
        normalize: nanos(t2),
    };
    Ok((
        p,
        Processed {
            times,
            over_default_max_pixels,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> TrainSpec {
        TrainSpec {
            size: (224, 224),
            scale: (0.08, 1.0),
            ratio: (3.0 / 4.0, 4.0 / 3.0),
            flip_p: 0.5,
            filter: Filter::Bilinear,
            mean: [0.485, 0.456, 0.406],
            std: [0.229, 0.224, 0.225],
            layout: Layout::Nchw,
            dtype: DType::F32,
            max_pixels: None,
            apply_exif_orientation: true,
        }
    }

    #[test]
    fn splitmix64_reference_values() {
        // The first outputs of Vigna's splitmix64.c seeded with 1234567.
        let mut r = SplitMix64::new(1_234_567);
        let got: Vec<u64> = (0..5).map(|_| r.next_u64()).collect();
        assert_eq!(
            got,
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423,
                4_593_380_528_125_082_431,
                16_408_922_859_458_223_821
            ]
        );
    }

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut r = SplitMix64::new(7);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let v = r.below(5) as usize;
            seen[v] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(r.below(1), 0);
    }

    #[test]
    fn samples_fit_and_fallback_is_central() {
        let s = spec();
        for i in 0..2000 {
            let mut r = SplitMix64::stream(1, 0, i);
            let (w, h) = (1 + (i as usize * 37) % 700, 1 + (i as usize * 91) % 500);
            let p = sample(w, h, &s, &mut r);
            assert!(p.width > 0 && p.height > 0);
            assert!(
                p.left + p.width <= w && p.top + p.height <= h,
                "{p:?} in {w}x{h}"
            );
        }
        // A 1000x10 strip: no crop of ratio <= 4/3 and area >= 8% fits; the fallback keeps the
        // full height and width = round(10 * 4/3) = 13, centred.
        let p = sample(1000, 10, &s, &mut SplitMix64::new(3));
        assert_eq!((p.top, p.left, p.height, p.width), (0, 493, 10, 13));
    }

    #[test]
    fn streams_differ_by_index_and_step() {
        let a = SplitMix64::stream(5, 0, 0).next_u64();
        assert_ne!(a, SplitMix64::stream(5, 0, 1).next_u64());
        assert_ne!(a, SplitMix64::stream(5, 1, 0).next_u64());
        assert_ne!(a, SplitMix64::stream(6, 0, 0).next_u64());
    }

    #[test]
    fn flip_rows_mirrors() {
        let mut px: Vec<u8> = (0..18).collect();
        flip_rows(&mut px, 3);
        assert_eq!(
            px,
            [6, 7, 8, 3, 4, 5, 0, 1, 2, 15, 16, 17, 12, 13, 14, 9, 10, 11]
        );
    }
}
