//! Lays the functions gpumon runs while it watches (listed in `assets/hot-text.ld`, written by
//! `scripts/hot_text.py`) side by side at the start of its code, in release builds for Linux.
//!
//! The kernel maps a program's code 64 KiB at a time around each page it runs (fault-around), so
//! with those functions spread over the whole `.text`, nearly all of it stays resident. Packed
//! together, only they and their neighbours are. The script only orders sections: every
//! function is still linked, and one it does not name goes where it would have gone.
//!
//! rust-lld, GNU ld and zig's linker take the script; gold cannot (it has no `INSERT`), so a
//! build that asks for gold (`-fuse-ld=gold` in its flags) links without it, as one does with
//! `GPUMON_HOT_TEXT=off` (what `scripts/hot_text.py` profiles). `GPUMON_LINK_MAP=FILE` writes the
//! linker's map.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=assets/hot-text.ld");
    println!("cargo:rerun-if-env-changed=GPUMON_HOT_TEXT");
    println!("cargo:rerun-if-env-changed=GPUMON_LINK_MAP");
    // Two arguments each, so a comma in a path is not split by the compiler driver.
    let link_arg = |arg: &str| {
        println!("cargo:rustc-link-arg-bins=-Xlinker");
        println!("cargo:rustc-link-arg-bins={arg}");
    };
    if let Ok(map) = env::var("GPUMON_LINK_MAP") {
        link_arg(&format!("-Map={map}"));
    }
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let off = env::var("GPUMON_HOT_TEXT").is_ok_and(|v| v == "off")
        || env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|f| f.contains("fuse-ld=gold"));
    let Ok(dir) = env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    let script = Path::new(&dir).join("assets/hot-text.ld");
    if release && linux && !off && script.is_file() {
        link_arg(&format!("--script={}", script.display()));
    }
}
