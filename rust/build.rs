//! Build script: records the toolchain and PyO3 versions for `build_info()`, and embeds every
//! `cuda/*.cu` / `cuda/*.cuh` file into the extension so that the kernels travel inside the wheel
//! (a top-level `cuda/` folder in the wheel would clash with NVIDIA's `cuda` namespace package).
use std::fmt::Write as _;
use std::{env, fs, path::Path, process::Command};

fn main() {
    let root = env::var("CARGO_MANIFEST_DIR").unwrap();
    let out = env::var("OUT_DIR").unwrap();

    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(|| "unknown".into(), |s| s.trim().to_string());
    println!("cargo:rustc-env=FASTPREP_RUSTC_VERSION={rustc_version}");
    println!(
        "cargo:rustc-env=FASTPREP_PROFILE={}",
        env::var("PROFILE").unwrap_or_default()
    );
    println!(
        "cargo:rustc-env=FASTPREP_TARGET={}",
        env::var("TARGET").unwrap_or_default()
    );
    println!(
        "cargo:rustc-env=FASTPREP_PYO3_VERSION={}",
        locked_version(&root, "pyo3")
    );
    println!("cargo:rerun-if-changed=Cargo.lock");
    // libjpeg-turbo's cmake build uses its SIMD code only when it finds nasm; record whether it
    // could, so that build_info() tells a slow (plain C) JPEG decoder apart.
    let nasm = env::var("ASM_NASM").unwrap_or_else(|_| "nasm".into());
    let simd = Command::new(nasm)
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    println!("cargo:rustc-env=FASTPREP_JPEG_SIMD={}", u8::from(simd));
    println!("cargo:rerun-if-env-changed=ASM_NASM");

    // Kernel table: (name, file name, text) for each file in cuda/, sorted for a stable order.
    let cuda = Path::new(&root).join("cuda");
    println!("cargo:rerun-if-changed={}", cuda.display());
    let mut files: Vec<_> = fs::read_dir(&cuda)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("cu" | "cuh")))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut table = String::from("pub static KERNEL_SOURCES: &[(&str, &str)] = &[\n");
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let file = path.file_name().unwrap().to_str().unwrap();
        writeln!(
            table,
            "    ({file:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    table.push_str("];\n");
    fs::write(Path::new(&out).join("kernel_sources.rs"), table).unwrap();
}

/// The version of `package` pinned in Cargo.lock ("unknown" when there is no lock file).
fn locked_version(root: &str, package: &str) -> String {
    let Ok(lock) = fs::read_to_string(Path::new(root).join("Cargo.lock")) else {
        return "unknown".into();
    };
    let needle = format!("name = \"{package}\"\nversion = \"");
    lock.find(&needle)
        .and_then(|i| lock[i + needle.len()..].split('"').next())
        .map_or_else(|| "unknown".into(), str::to_string)
}
