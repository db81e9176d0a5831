//! The allocator probe's Python files (`python/gpumon/probe`), embedded: the start-up hook
//! `sitecustomize.py`, a small loader, and the parts of the private package it loads from beside
//! itself (`_gpumon_probe/`). The same files the wheel ships; `run::hook_files` writes them.

/// The hook's file name inside the hook directory: what Python's `site` imports.
pub const LOADER: &str = "sitecustomize.py";
/// The probe's private package, beside the loader (the only name a probed job sees).
pub const PACKAGE: &str = "_gpumon_probe";

/// One part of the package: its path inside the hook directory and its text.
macro_rules! part {
    ($name:literal) => {
        (
            concat!("_gpumon_probe/", $name),
            include_str!(concat!(
                "../../../python/gpumon/probe/_gpumon_probe/",
                $name
            )),
        )
    };
}

/// Every file of the hook: (path inside the hook directory, text), the loader first.
pub const HOOK_FILES: &[(&str, &str)] = &[
    (
        LOADER,
        include_str!("../../../python/gpumon/probe/sitecustomize.py"),
    ),
    part!("__init__.py"),
    part!("channel.py"),
    part!("common.py"),
    part!("distributed.py"),
    part!("driver.py"),
    part!("ending.py"),
    part!("files.py"),
    part!("lifecycle.py"),
    part!("main_thread.py"),
    part!("maps.py"),
    part!("pprof.py"),
    part!("probe.py"),
    part!("read_cupy.py"),
    part!("read_jax.py"),
    part!("read_tensorflow.py"),
    part!("read_torch.py"),
    part!("sites.py"),
    part!("torch_history.py"),
    part!("torch_map.py"),
];

/// A hash of every file's path and text (FNV-1a, 64 bits): the version of this set of files,
/// which names the directory its parts are written into, so a job keeps loading its own parts
/// after another gpumon writes different ones (`run::hook_files`).
pub const HOOK_HASH: u64 = {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut f = 0;
    while f < HOOK_FILES.len() {
        let (path, text) = HOOK_FILES[f];
        let mut s = 0;
        while s < 2 {
            let bytes = if s == 0 {
                path.as_bytes()
            } else {
                text.as_bytes()
            };
            let mut i = 0;
            while i < bytes.len() {
                hash ^= bytes[i] as u64;
                hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
                i += 1;
            }
            hash ^= 0xff;
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            s += 1;
        }
        f += 1;
    }
    hash
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::path::Path;

    #[test]
    fn every_file_of_the_probe_is_embedded_and_nothing_else() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/gpumon/probe");
        let mut on_disk = BTreeSet::new();
        for entry in std::fs::read_dir(root.join(PACKAGE)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".py") {
                on_disk.insert(format!("{PACKAGE}/{name}"));
            }
        }
        on_disk.insert(LOADER.to_string());
        let embedded: BTreeSet<String> = HOOK_FILES.iter().map(|(p, _)| p.to_string()).collect();
        assert_eq!(
            embedded, on_disk,
            "src/source/probe/hook.rs lists every part"
        );
        assert_eq!(HOOK_FILES[0].0, LOADER);
        for (path, text) in HOOK_FILES {
            assert_eq!(
                std::fs::read_to_string(root.join(path)).unwrap(),
                *text,
                "{path}"
            );
        }
    }
}
