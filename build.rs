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
//!
//! A native glibc build also packs its relative relocations (`-z pack-relative-relocs`, DT_RELR):
//! as a position-independent program gpumon has about 6,000 of them, 145 KB of `.rela.dyn` that
//! the loader reads whole at every start (so resident for good); packed they take about 2 KB.
//! glibc reads packed ones from 2.36 on and the linker marks the program as needing that
//! (`GLIBC_ABI_DT_RELR`), so only a build for the glibc it runs on, 2.36 or newer, with the
//! toolchain's own linker packs them; the wheel's build for glibc 2.17 names zig's linker and
//! does not, nor does gold.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=assets/hot-text.ld");
    println!("cargo:rerun-if-env-changed=GPUMON_HOT_TEXT");
    println!("cargo:rerun-if-env-changed=GPUMON_LINK_MAP");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
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
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    // gold takes neither the script nor packed relocations.
    let gold = flags.contains("fuse-ld=gold");
    let off = env::var("GPUMON_HOT_TEXT").is_ok_and(|v| v == "off") || gold;
    let Ok(dir) = env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    let script = Path::new(&dir).join("assets/hot-text.ld");
    if release && linux && !off && script.is_file() {
        link_arg(&format!("--script={}", script.display()));
    }
    if release && linux && !gold && native_glibc_with_packed_relocations(&flags) {
        link_arg("-z");
        link_arg("pack-relative-relocs");
    }
}

/// A build for this machine's glibc, 2.36 or newer, linked by the toolchain's own linker.
fn native_glibc_with_packed_relocations(flags: &str) -> bool {
    let target = env::var("TARGET").unwrap_or_default();
    let linker_var = format!(
        "CARGO_TARGET_{}_LINKER",
        target.to_uppercase().replace('-', "_")
    );
    println!("cargo:rerun-if-env-changed={linker_var}");
    let own_linker = env::var_os(&linker_var).is_none()
        && env::var_os("RUSTC_LINKER").is_none()
        && !flags.contains("linker=");
    let native = env::var("HOST").is_ok_and(|host| host == target);
    let gnu = env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|e| e == "gnu");
    own_linker && native && gnu && glibc_version().is_some_and(|v| v >= (2, 36))
}

/// This machine's glibc version, from `getconf GNU_LIBC_VERSION` ("glibc 2.36").
fn glibc_version() -> Option<(u32, u32)> {
    let out = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let (major, minor) = text.split_whitespace().nth(1)?.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}
