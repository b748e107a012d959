// Finds an installed weir through pkg-config (as libz-sys finds zlib), and
// compiles and runs layout.c against the same header, so tests/layout.rs can
// hold the hand-written bindings to what a C compiler sees.
use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=layout.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=CC");
    let lib = match pkg_config::Config::new().atleast_version("0.2.0").probe("weir") {
        Ok(lib) => lib,
        Err(e) => panic!("weir-sys: weir not found through pkg-config (install weir, or set PKG_CONFIG_PATH):\n{e}"),
    };
    for dir in &lib.include_paths {
        println!("cargo:include={}", dir.display());
        println!("cargo:rerun-if-changed={}", dir.join("weir.h").display());
    }
    // tests/coverage.rs reads the header the bindings were built against.
    if let Some(h) = lib.include_paths.iter().map(|d| d.join("weir.h")).find(|h| h.exists()) {
        println!("cargo:rustc-env=WEIR_SYS_HEADER={}", h.display());
    }

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let exe = out.join("weir-layout");
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let mut cmd = Command::new(&cc);
    cmd.arg("-std=c11").arg("-o").arg(&exe).arg("layout.c");
    for dir in &lib.include_paths {
        cmd.arg("-I").arg(dir);
    }
    let status = cmd.status().unwrap_or_else(|e| panic!("weir-sys: cannot run {cc}: {e}"));
    assert!(status.success(), "weir-sys: {cc} failed on layout.c");
    let output = Command::new(&exe).output().expect("weir-sys: run weir-layout");
    assert!(output.status.success(), "weir-sys: weir-layout failed");
    fs::write(out.join("layout.rs"), &output.stdout).expect("weir-sys: write layout.rs");
}
