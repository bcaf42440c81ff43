// Times the resize passes on a synthetic 1920x1080 RGB image (profiling aid).
use fastprep::image::{resize_u8, Filter};
use std::time::Instant;

fn main() {
    let (w, h) = (1920usize, 1080usize);
    let src: Vec<u8> = (0..w * h * 3).map(|i| (i * 31 % 251) as u8).collect();
    for (ow, oh) in [(455usize, 1080usize), (1920, 256), (455, 256)] {
        let t = Instant::now();
        let n = std::env::var("N").map_or(20, |v| v.parse().unwrap());
        for _ in 0..n {
            std::hint::black_box(resize_u8(&src, w, h, 3, ow, oh, Filter::Bilinear).unwrap());
        }
        println!(
            "{ow}x{oh}: {:.2} ms",
            t.elapsed().as_secs_f64() * 1000.0 / f64::from(n)
        );
    }
}
