//! The two convolution passes of a resize, streamed: each output row is finished before the
//! next starts, and the rows of the first pass's result that it reads are kept in a small ring
//! (as many rows as the second pass has taps), so the intermediate image never exists whole.
//! This saves its allocation (page faults on every call for a large image) and keeps the rows
//! the second pass reads in L1/L2. The order of the passes, and the rounding to 8 bits between
//! them, are Pillow's (`resize::vertical_first`), so the bytes are too.
use super::alloc::{self, AllocError};
use super::resize::{coeffs, vertical_first, Coeffs, Filter, Window};
use super::resize_kernels::{self as kernels, Horizontal, Taps};

/// Where a partial source sits in the whole image: its top-left corner and its width (its
/// row length in pixels).
#[derive(Debug, Clone, Copy)]
pub(super) struct Origin {
    pub x: usize,
    pub y: usize,
    pub width: usize,
}

/// One resize: `src` holds the rows of the `width` x `height` source from `origin` on; the
/// result is `window` of the `out_width` x `out_height` output.
pub(super) struct Job<'a> {
    pub src: &'a [u8],
    pub origin: Origin,
    pub width: usize,
    pub height: usize,
    pub channels: usize,
    pub out_width: usize,
    pub out_height: usize,
    pub filter: Filter,
    pub window: Window,
    /// RGBA: premultiply source rows by alpha as the passes read them (Pillow's RGBa).
    pub premultiply: bool,
    /// The source region resized, `(x0, y0, x1, y1)` in pixels (Pillow's `box`, as C floats).
    pub bx: [f32; 4],
}

impl Job<'_> {
    /// Pillow's `need_horizontal`: a box that is not the whole width needs the pass even at
    /// the same size (a shift or a stretch).
    #[allow(clippy::float_cmp)] // Pillow compares the box exactly
    fn need_h(&self) -> bool {
        self.out_width != self.width || self.bx[0] != 0.0 || self.bx[2] != self.width as f32
    }

    #[allow(clippy::float_cmp)]
    fn need_v(&self) -> bool {
        self.out_height != self.height || self.bx[1] != 0.0 || self.bx[3] != self.height as f32
    }

    fn stride(&self) -> usize {
        self.origin.width * self.channels
    }

    /// Source row `r` (of the whole image), the region's columns.
    fn src_row(&self, r: usize) -> &[u8] {
        let s = self.stride();
        &self.src[(r - self.origin.y) * s..(r - self.origin.y + 1) * s]
    }

    /// Source row `r` as the passes read it: premultiplied into `scratch` where asked.
    fn read_row<'s>(&'s self, r: usize, scratch: &'s mut [u8]) -> &'s [u8] {
        if self.premultiply {
            kernels::premultiply(self.src_row(r), scratch);
            scratch
        } else {
            self.src_row(r)
        }
    }

    /// The horizontal weights of the window's columns, relative to the region's first column.
    fn horizontal_coeffs(&self) -> Result<(Coeffs, Vec<(usize, usize)>), AllocError> {
        let c = coeffs(
            self.width,
            self.bx[0],
            self.bx[2],
            self.out_width,
            self.filter,
        )?;
        let w = self.window;
        let mut bounds = alloc::with_capacity(w.width)?;
        bounds.extend(
            c.bounds[w.x..w.x + w.width]
                .iter()
                .map(|&(first, n)| (first - self.origin.x, n)),
        );
        Ok((c, bounds))
    }

    /// The vertical pass's coefficients, over the whole height (rows are full-image indices).
    fn vertical_coeffs(&self) -> Result<Coeffs, AllocError> {
        coeffs(
            self.height,
            self.bx[1],
            self.bx[3],
            self.out_height,
            self.filter,
        )
    }
}

/// Runs `job` into `out` (`window.width * window.height * channels` bytes).
pub(super) fn convolve(job: &Job<'_>, out: &mut [u8]) -> Result<(), AllocError> {
    // Pillow 13 decides the order from the whole image's size, not the box's (checked
    // against 13.0.0 on thousands of boxes where the order changes the bytes).
    if job.need_h() && vertical_first(job.width, job.height, job.out_width, job.out_height) {
        vertical_then_horizontal(job, out)
    } else {
        horizontal_then_vertical(job, out)
    }
}

/// The last `cap` rows produced, row `r` in slot `r % cap`. Both passes' weights are monotone
/// (each output's first input never decreases), so an output row's taps, at most `cap`
/// consecutive rows, are all resident once the rows up to its last are produced.
struct Ring {
    buf: Vec<u8>,
    row: usize,
    cap: usize,
    next: usize,
}

impl Ring {
    fn new(row: usize, cap: usize) -> Result<Self, AllocError> {
        let cap = cap.max(1);
        Ok(Self {
            buf: alloc::zeroed(alloc::product(&[row, cap])?)?,
            row,
            cap,
            next: 0,
        })
    }

    fn slot(&self, r: usize) -> usize {
        (r % self.cap) * self.row
    }

    /// Makes rows `from..upto` resident: `produce(r, dst, None)` makes row `r`, and with
    /// `pairs`, `produce(r, dst, Some(dst2))` rows `r` and `r + 1` together.
    fn fill(
        &mut self,
        from: usize,
        upto: usize,
        pairs: bool,
        produce: &mut impl FnMut(usize, &mut [u8], Option<&mut [u8]>),
    ) {
        assert!(
            upto - from <= self.cap && from + self.cap >= self.next,
            "resize taps are not monotone"
        );
        self.next = self.next.max(from);
        let row = self.row;
        while self.next < upto {
            let r = self.next;
            let i = self.slot(r);
            if pairs && r + 1 < upto {
                let j = self.slot(r + 1);
                let (lo, hi) = self.buf.split_at_mut(i.max(j));
                let (a, b) = if i < j {
                    (&mut lo[i..i + row], &mut hi[..row])
                } else {
                    (&mut hi[..row], &mut lo[j..j + row])
                };
                produce(r, a, Some(b));
                self.next += 2;
            } else {
                produce(r, &mut self.buf[i..i + row], None);
                self.next += 1;
            }
        }
    }

    /// The byte offsets of rows `from..upto` in `buf`.
    fn offsets(&self, from: usize, upto: usize, offs: &mut Vec<usize>) {
        offs.clear();
        offs.extend((from..upto).map(|r| self.slot(r)));
    }
}

fn max_taps(bounds: &[(usize, usize)]) -> usize {
    bounds.iter().map(|b| b.1).max().unwrap_or(1)
}

/// Horizontal pass (where the width changes) over only the source rows the vertical pass (or
/// the window) reads, then vertical (where the height does).
fn horizontal_then_vertical(job: &Job<'_>, out: &mut [u8]) -> Result<(), AllocError> {
    let (c, win) = (job.channels, job.window);
    let stride = job.stride();
    let row_bytes = win.width * c;
    let hc = if job.need_h() {
        Some(job.horizontal_coeffs()?)
    } else {
        None
    };
    let horiz = hc.as_ref().map(|(hc, bounds)| {
        let taps = Taps {
            ksize: hc.ksize,
            bounds,
            kk: &hc.kk[win.x * hc.ksize..],
        };
        Horizontal::new(taps, c, stride)
    });
    let pairs = horiz.as_ref().is_some_and(Horizontal::wants_row_pairs);
    // Without a horizontal pass, the window's columns of the source row.
    let col0 = (win.x - job.origin.x) * c;
    let mut scratch = alloc::zeroed(if job.premultiply { 2 * stride } else { 0 })?;
    // The first pass's result for source row `r` (and `r + 1` into `dst2`).
    let mut produce = |r: usize, dst: &mut [u8], dst2: Option<&mut [u8]>| {
        let half = scratch.len() / 2;
        let (s0, s1) = scratch.split_at_mut(half);
        let a = job.read_row(r, s0);
        match (&horiz, dst2) {
            (Some(h), Some(dst2)) => h.row_pair([a, job.read_row(r + 1, s1)], [dst, dst2]),
            (Some(h), None) => h.row(a, dst),
            (None, dst2) => {
                dst.copy_from_slice(&a[col0..col0 + row_bytes]);
                if let Some(d) = dst2 {
                    d.copy_from_slice(&job.read_row(r + 1, s1)[col0..col0 + row_bytes]);
                }
            }
        }
    };
    let rows = win.y..win.y + win.height;
    if !job.need_v() {
        let mut lines = out.chunks_exact_mut(row_bytes);
        let mut r = rows.start;
        while let Some(line) = lines.next() {
            let second = if pairs && r + 1 < rows.end {
                lines.next()
            } else {
                None
            };
            let n = 1 + usize::from(second.is_some());
            produce(r, line, second);
            r += n;
        }
        return Ok(());
    }
    let vc = job.vertical_coeffs()?;
    let vtaps = Taps {
        ksize: vc.ksize,
        bounds: &vc.bounds,
        kk: &vc.kk,
    };
    let mut offs = Vec::with_capacity(vc.ksize);
    if horiz.is_none() && !job.premultiply {
        // Only the height changes: the vertical pass reads the source rows in place.
        for (yy, line) in rows.zip(out.chunks_exact_mut(row_bytes)) {
            let (f, k) = vtaps.get(yy);
            offs.clear();
            offs.extend((f..f + k.len()).map(|r| (r - job.origin.y) * stride + col0));
            kernels::vertical(job.src, &offs, k, line);
        }
        return Ok(());
    }
    let mut ring = Ring::new(row_bytes, max_taps(&vc.bounds[rows.clone()]))?;
    for (yy, line) in rows.zip(out.chunks_exact_mut(row_bytes)) {
        let (f, k) = vtaps.get(yy);
        ring.fill(f, f + k.len(), pairs, &mut produce);
        ring.offsets(f, f + k.len(), &mut offs);
        kernels::vertical(&ring.buf, &offs, k, line);
    }
    Ok(())
}

/// Vertical pass first (Pillow's choice for images that shrink much more in height), over the
/// region's columns, each output row then resized horizontally at once.
fn vertical_then_horizontal(job: &Job<'_>, out: &mut [u8]) -> Result<(), AllocError> {
    let (c, win) = (job.channels, job.window);
    let stride = job.stride();
    let row_bytes = win.width * c;
    let (hc, bounds) = job.horizontal_coeffs()?;
    let taps = Taps {
        ksize: hc.ksize,
        bounds: &bounds,
        kk: &hc.kk[win.x * hc.ksize..],
    };
    let horiz = Horizontal::new(taps, c, stride);
    let pairs = horiz.wants_row_pairs();
    let vc = job.vertical_coeffs()?;
    let vtaps = Taps {
        ksize: vc.ksize,
        bounds: &vc.bounds,
        kk: &vc.kk,
    };
    let rows = win.y..win.y + win.height;
    // RGBA: the premultiplied source rows the current output rows read.
    let mut ring = if job.premultiply {
        Some(Ring::new(stride, max_taps(&vc.bounds[rows.clone()]) + 1)?)
    } else {
        None
    };
    let mut tall = alloc::zeroed(2 * stride)?;
    let mut offs = Vec::with_capacity(vc.ksize);
    let mut vertical_row = |yy: usize, dst: &mut [u8], offs: &mut Vec<usize>| {
        let (f, k) = vtaps.get(yy);
        if let Some(ring) = &mut ring {
            let mut premultiplied = |r: usize, d: &mut [u8], _: Option<&mut [u8]>| {
                kernels::premultiply(job.src_row(r), d);
            };
            ring.fill(f, f + k.len(), false, &mut premultiplied);
            ring.offsets(f, f + k.len(), offs);
            kernels::vertical(&ring.buf, offs, k, dst);
        } else {
            offs.clear();
            offs.extend((f..f + k.len()).map(|r| (r - job.origin.y) * stride));
            kernels::vertical(job.src, offs, k, dst);
        }
    };
    let mut lines = out.chunks_exact_mut(row_bytes);
    let mut yy = rows.start;
    while let Some(line) = lines.next() {
        let (t0, t1) = tall.split_at_mut(stride);
        vertical_row(yy, t0, &mut offs);
        if let Some(line2) = (pairs && yy + 1 < rows.end).then(|| lines.next()).flatten() {
            vertical_row(yy + 1, t1, &mut offs);
            horiz.row_pair([t0, t1], [line, line2]);
            yy += 2;
        } else {
            horiz.row(t0, line);
            yy += 1;
        }
    }
    Ok(())
}
