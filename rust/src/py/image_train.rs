//! `_core.train_preprocess_into`: the binding of the fused training transform (facade in
//! `fastprep/train.py`).
use super::encoded::Encoded;
use super::image::OverLimit;
use super::threads;
use crate::error::DecodeError as CoreDecodeError;
use crate::image::decode;
use crate::image::pipeline::{DType, Layout, Processed, Tables};
use crate::image::train::{process_one, Choice, Params, SplitMix64, TrainSpec};
use crate::image::Filter;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// What `fastprep.TrainPipeline` passes for its settings: a dict with these keys.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct TrainArgs {
    size: (usize, usize),
    scale: (f64, f64),
    ratio: (f64, f64),
    flip_p: f64,
    filter: String,
    mean: [f32; 3],
    std: [f32; 3],
    layout: String,
    dtype: String,
    max_pixels: Option<u64>,
    apply_exif_orientation: bool,
}

fn train_spec(a: &TrainArgs) -> PyResult<TrainSpec> {
    let bad = |what: &str, v: &str| PyValueError::new_err(format!("{what} {v:?} is not supported"));
    let spec = TrainSpec {
        size: a.size,
        scale: a.scale,
        ratio: a.ratio,
        flip_p: a.flip_p,
        filter: Filter::parse(&a.filter).ok_or_else(|| bad("filter", &a.filter))?,
        mean: a.mean,
        std: a.std,
        layout: match a.layout.as_str() {
            "NCHW" => Layout::Nchw,
            "NHWC" => Layout::Nhwc,
            v => return Err(bad("layout", v)),
        },
        dtype: match a.dtype.as_str() {
            "float32" => DType::F32,
            "float16" => DType::F16,
            "uint8" => DType::U8,
            v => return Err(bad("dtype", v)),
        },
        max_pixels: a.max_pixels,
        apply_exif_orientation: a.apply_exif_orientation,
    };
    spec.check().map_err(PyValueError::new_err)?;
    Ok(spec)
}

type Failure = Option<(&'static str, String)>;
type StageTuple = (u64, u64, u64);
/// (top, left, height, width, flipped); -1s for an image that failed before its crop was known.
type ParamTuple = (i64, i64, i64, i64, i64);

/// Crops, resizes, flips and normalizes each encoded image into its slot of `out` (a writable
/// buffer), in parallel with the GIL released. Image `i` draws its parameters from the stream
/// (`seed`, `step`, `i`), or takes `params[i]` = (top, left, height, width, flipped) when given.
/// Returns, per image, None or the `(reason, message)` of its failure (its slot is zeroed), the
/// nanoseconds of each stage, and the parameters used; and the images over `DEFAULT_MAX_PIXELS`
/// (`OverLimit`), in index order.
#[pyfunction]
#[pyo3(signature = (items, out, settings, seed, step, params = None, num_threads = None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn train_preprocess_into(
    py: Python<'_>,
    items: Vec<Bound<'_, PyAny>>,
    out: &Bound<'_, PyAny>,
    settings: TrainArgs,
    seed: u64,
    step: u64,
    params: Option<Vec<(usize, usize, usize, usize, usize)>>,
    num_threads: Option<usize>,
) -> PyResult<(
    Vec<Failure>,
    Vec<StageTuple>,
    Vec<ParamTuple>,
    Vec<OverLimit>,
)> {
    let spec = train_spec(&settings)?;
    if let Some(p) = &params {
        if p.len() != items.len() {
            return Err(PyValueError::new_err(format!(
                "params has {} rows for {} images; give one (top, left, height, width, flipped) per image",
                p.len(),
                items.len()
            )));
        }
    }
    let per = spec.image_bytes();
    let buf = PyBuffer::<u8>::get(out)?;
    if buf.readonly() || !buf.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "out must be a writable C-contiguous buffer",
        ));
    }
    let need = per * items.len();
    if buf.item_count() < need {
        return Err(PyValueError::new_err(format!(
            "out holds {} bytes; {} images need {need}",
            buf.item_count(),
            items.len()
        )));
    }
    let items = Encoded::all(&items)?;
    let jobs: Vec<(usize, &[u8])> = items.iter().map(Encoded::as_slice).enumerate().collect();
    let choice = |i: usize| match &params {
        Some(p) => {
            let (top, left, height, width, flip) = p[i];
            Choice::Given(Params {
                top,
                left,
                height,
                width,
                flip: flip != 0,
            })
        }
        None => Choice::Draw(SplitMix64::stream(seed, step, i as u64)),
    };
    let ptr = buf.buf_ptr() as usize;
    let threads = threads::resolve(num_threads).min(jobs.len().max(1));
    let tables = Tables::v2(spec.mean, spec.std);
    let results: Vec<Result<(Params, Processed), CoreDecodeError>> = py.detach(|| {
        // SAFETY: `buf` keeps the exported, writable, C-contiguous memory of at least `need`
        // bytes alive and in place until it drops after this closure; each image gets a
        // disjoint `per`-byte slot.
        let all = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, need) };
        let cost = |job: &(usize, &[u8])| decode::cost_estimate(job.1);
        threads::map_slots(threads, &jobs, all, per, cost, |&(i, data), slot| {
            let r = process_one(data, &spec, &tables, choice(i), slot);
            if r.is_err() {
                slot.fill(0);
            }
            r
        })
    });
    drop(buf);
    let n = results.len();
    let (mut errors, mut times, mut used) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let mut over = Vec::new();
    let as_i64 = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok((p, done)) => {
                let t = done.times;
                if let Some((w, h)) = done.over_default_max_pixels {
                    over.push((i, w, h));
                }
                errors.push(None);
                times.push((t.decode, t.resize, t.normalize));
                used.push((
                    as_i64(p.top),
                    as_i64(p.left),
                    as_i64(p.height),
                    as_i64(p.width),
                    i64::from(p.flip),
                ));
            }
            Err(e) => {
                errors.push(Some((e.reason(), e.to_string())));
                times.push((0, 0, 0));
                used.push((-1, -1, -1, -1, -1));
            }
        }
    }
    Ok((errors, times, used, over))
}
