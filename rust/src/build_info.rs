//! Facts about this build, for `fastprep.build_info()` and for benchmarks that refuse debug builds.

/// "release" or "debug" (cargo's profile family; `profiling` inherits release).
pub const PROFILE: &str = if cfg!(debug_assertions) {
    "debug"
} else {
    "release"
};
pub const RUSTC_VERSION: &str = env!("FASTPREP_RUSTC_VERSION");
pub const PYO3_VERSION: &str = env!("FASTPREP_PYO3_VERSION");
pub const TARGET: &str = env!("FASTPREP_TARGET");
/// Whether libjpeg-turbo was built with its SIMD code (nasm was found): without it JPEG decoding
/// gives the same pixels at about half the speed.
pub const JPEG_SIMD: bool = matches!(env!("FASTPREP_JPEG_SIMD").as_bytes(), b"1");

/// SIMD features the compiler was allowed to assume for the whole binary (`-C target-feature`).
#[must_use]
pub fn simd_compiled() -> Vec<&'static str> {
    let mut v = Vec::new();
    macro_rules! push_if {
        ($($f:literal),*) => { $( if cfg!(target_feature = $f) { v.push($f); } )* };
    }
    push_if!("sse2", "sse4.1", "sse4.2", "avx", "avx2", "fma", "avx512f", "avx512bw", "neon");
    v
}

/// SIMD features this CPU offers at run time; kernels with runtime dispatch pick from these.
#[must_use]
pub fn simd_detected() -> Vec<&'static str> {
    #[allow(unused_mut)]
    let mut v = Vec::new();
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        macro_rules! detect {
            ($($f:tt),*) => { $( if std::is_x86_feature_detected!($f) { v.push($f); } )* };
        }
        detect!("sse2", "sse4.1", "sse4.2", "avx", "avx2", "fma", "avx512f", "avx512bw");
    }
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("neon") {
            v.push("neon");
        }
    }
    v
}
