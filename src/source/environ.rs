//! Memory-related settings and launcher variables from a process's initial environment
//! (`/proc/PID/environ`).
//!
//! Only the variables in [`MEMORY_SETTINGS`], `launcher::LAUNCH_VARIABLES` and `ras::VARIABLES` are ever kept: the
//! rest of an environment may hold secrets. The file is the environment given to `execve`; later changes made by the process
//! itself (e.g. `os.environ[...] = ...` before `import torch`) are not visible there.

use std::collections::BTreeMap;
use std::io::ErrorKind;

use super::Reading;

/// The environment variables that decide how ML frameworks and CUDA take device memory.
pub const MEMORY_SETTINGS: &[&str] = &[
    "TF_FORCE_GPU_ALLOW_GROWTH",
    "TF_GPU_ALLOCATOR",
    "TF_CUDA_MALLOC_ASYNC_SUPPORTED_PREALLOC",
    "TF_ENABLE_GPU_GARBAGE_COLLECTION",
    "TF_BFC_MEMORY_DUMP",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_ALLOCATOR",
    "PYTORCH_ALLOC_CONF",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_HIP_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "CUPY_GPU_MEMORY_LIMIT",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_MODULE_LOADING",
];

/// Why the settings are unknown when the kernel refuses to show another user's environment.
pub const NOT_READABLE: &str = "unknown: initial environment not readable (permission denied)";

/// Keeps the [`MEMORY_SETTINGS`] found in NUL-separated `NAME=value` entries.
pub fn memory_settings(environ: &[u8]) -> BTreeMap<String, String> {
    keep(environ, MEMORY_SETTINGS)
}

/// Keeps the variables named in `names` found in NUL-separated `NAME=value` entries; other bytes
/// are never copied. Values that are not UTF-8 are kept with replacement characters.
pub fn keep(environ: &[u8], names: &[&str]) -> BTreeMap<String, String> {
    environ
        .split(|&b| b == 0)
        .filter_map(|entry| {
            let eq = entry.iter().position(|&b| b == b'=')?;
            let (name, value) = (&entry[..eq], &entry[eq + 1..]);
            let known = names.iter().find(|k| k.as_bytes() == name)?;
            Some((
                (*known).to_string(),
                String::from_utf8_lossy(value).into_owned(),
            ))
        })
        .collect()
}

/// What gpumon keeps of one initial environment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Environ {
    /// The [`MEMORY_SETTINGS`] set in it.
    pub settings: BTreeMap<String, String>,
    /// The launcher variables set in it (`launcher::LAUNCH_VARIABLES`).
    pub launch: BTreeMap<String, String>,
    /// NCCL's RAS variables set in it (`ras::VARIABLES`).
    pub ras: BTreeMap<String, String>,
}

/// Reads the initial environment of process `pid` once; permission denied is "unknown", not
/// "unset".
pub fn read(pid: u32) -> Reading<Environ> {
    match std::fs::read(format!("/proc/{pid}/environ")) {
        Ok(bytes) => Reading::Value(Environ {
            settings: memory_settings(&bytes),
            launch: keep(&bytes, super::launcher::LAUNCH_VARIABLES),
            ras: keep(&bytes, super::ras::VARIABLES),
        }),
        Err(e) if e.kind() == ErrorKind::PermissionDenied => Reading::na(NOT_READABLE),
        Err(e) => Reading::na(format!("initial environment not readable: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_listed_variables() {
        let env = b"HOME=/root\0AWS_SECRET_ACCESS_KEY=hunter2\0PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\0CUDA_VISIBLE_DEVICES=0,1\0";
        let s = memory_settings(env);
        assert_eq!(s.len(), 2);
        assert_eq!(s["PYTORCH_CUDA_ALLOC_CONF"], "expandable_segments:True");
        assert_eq!(s["CUDA_VISIBLE_DEVICES"], "0,1");
        assert!(!s.values().any(|v| v.contains("hunter2")));
    }

    #[test]
    fn empty_input_gives_no_settings() {
        assert!(memory_settings(b"").is_empty());
        assert!(memory_settings(b"\0\0").is_empty());
    }

    #[test]
    fn non_utf8_bytes_are_tolerated() {
        let env = b"JUNK=\xff\xfe\0XLA_PYTHON_CLIENT_MEM_FRACTION=.8\xff\0\xc3\x28=x\0";
        let s = memory_settings(env);
        assert_eq!(s.len(), 1);
        assert_eq!(s["XLA_PYTHON_CLIENT_MEM_FRACTION"], ".8\u{fffd}");
    }

    #[test]
    fn empty_value_and_prefix_names_are_exact() {
        let env = b"CUDA_VISIBLE_DEVICES=\0TF_GPU_ALLOCATOR_X=1\0XTF_GPU_ALLOCATOR=1\0NOEQUALS\0";
        let s = memory_settings(env);
        assert_eq!(s.len(), 1);
        assert_eq!(s["CUDA_VISIBLE_DEVICES"], "");
    }

    #[test]
    fn own_environment_is_readable() {
        assert!(read(std::process::id()).value().is_some());
    }
}
