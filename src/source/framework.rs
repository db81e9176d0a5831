//! Which ML framework a process runs, from the shared libraries in `/proc/PID/maps`.

use std::io::ErrorKind;

use super::{Framework, Reading};

/// Library path fragments that identify each framework, in precedence order.
///
/// When several match, the first wins: PyTorch (`libtorch_cuda` is mapped only by torch's CUDA
/// build, so it is the most specific sign of GPU use), then JAX (`jaxlib` is also mapped by
/// CPU-only installs), then TensorFlow, then CuPy (most often a helper library beside another
/// framework).
const SIGNATURES: &[(Framework, &[&str])] = &[
    (Framework::Pytorch, &["libtorch_cuda"]),
    (Framework::Jax, &["jaxlib", "xla_extension", "libjax"]),
    (
        Framework::Tensorflow,
        &["libtensorflow_framework", "_pywrap_tensorflow"],
    ),
    (Framework::Cupy, &["cupy_backends", "cupy/_core", "libcupy"]),
];

/// Why the framework is unknown when the kernel refuses to show another user's mappings.
pub const NOT_READABLE: &str = "maps not readable (permission denied)";

/// The framework whose libraries appear in the text of a maps file; `Other` when none does.
pub fn from_maps(maps: &str) -> Framework {
    let mut found = [false; SIGNATURES.len()];
    for line in maps.lines() {
        for (i, (_, fragments)) in SIGNATURES.iter().enumerate() {
            if !found[i] && fragments.iter().any(|f| line.contains(f)) {
                found[i] = true;
            }
        }
        if found[0] {
            break;
        }
    }
    SIGNATURES
        .iter()
        .zip(found)
        .find_map(|((fw, _), hit)| hit.then_some(*fw))
        .unwrap_or(Framework::Other)
}

/// Reads the framework of process `pid`.
pub fn read(pid: u32) -> Reading<Framework> {
    match std::fs::read(format!("/proc/{pid}/maps")) {
        Ok(bytes) => Reading::Value(from_maps(&String::from_utf8_lossy(&bytes))),
        Err(e) if e.kind() == ErrorKind::PermissionDenied => Reading::na(NOT_READABLE),
        Err(e) => Reading::na(format!("maps not readable: {e}")),
    }
}

/// A process's framework when it is due again, `last` what was read of it before: PyTorch is
/// kept (a process never unmaps `libtorch_cuda`, and nothing ranks above it), so a PyTorch
/// rank's maps, 2.7 ms of the kernel's time each on a 4-GPU H200 host, are read once; any
/// other answer is read again (`read`), as a late import can change it.
pub fn again(
    last: Option<&Reading<Framework>>,
    read: impl FnOnce() -> Reading<Framework>,
) -> Reading<Framework> {
    match last {
        Some(known @ Reading::Value(Framework::Pytorch)) => known.clone(),
        _ => read(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytorch_is_kept_and_anything_else_read_again() {
        let torch = Reading::Value(Framework::Pytorch);
        let unread = || -> Reading<Framework> { panic!("maps read again") };
        assert_eq!(again(Some(&torch), unread), torch);
        for before in [
            None,
            Some(Reading::Value(Framework::Jax)),
            Some(Reading::Value(Framework::Other)),
            Some(Reading::na(NOT_READABLE)),
        ] {
            assert_eq!(
                again(before.as_ref(), || torch.clone()),
                torch,
                "{before:?}"
            );
        }
    }

    fn line(path: &str) -> String {
        format!("7f2a1c000000-7f2a1c200000 r-xp 00000000 103:02 1311 {path}\n")
    }

    #[test]
    fn each_framework_is_recognised() {
        let cases = [
            (
                "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so",
                Framework::Pytorch,
            ),
            (
                "/venv/site-packages/tensorflow/libtensorflow_framework.so.2",
                Framework::Tensorflow,
            ),
            (
                "/venv/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so",
                Framework::Tensorflow,
            ),
            (
                "/venv/site-packages/jaxlib/xla_extension.so",
                Framework::Jax,
            ),
            ("/opt/jax/libjax_common.so", Framework::Jax),
            (
                "/venv/site-packages/cupy_backends/cuda/api/runtime.cpython-311-x86_64-linux-gnu.so",
                Framework::Cupy,
            ),
            (
                "/venv/site-packages/cupy/_core/core.cpython-311-x86_64-linux-gnu.so",
                Framework::Cupy,
            ),
            ("/usr/lib/libcupy_thrust.so", Framework::Cupy),
        ];
        for (path, fw) in cases {
            let maps = line("/usr/lib/x86_64-linux-gnu/libc.so.6") + &line(path);
            assert_eq!(from_maps(&maps), fw, "{path}");
        }
    }

    #[test]
    fn plain_process_is_other() {
        let maps = line("/usr/bin/python3.11") + &line("/usr/lib/libcuda.so.1") + &line("[heap]");
        assert_eq!(from_maps(&maps), Framework::Other);
        assert_eq!(from_maps(""), Framework::Other);
    }

    #[test]
    fn torch_wins_over_jax_and_jax_over_cupy() {
        let both = line("/v/jaxlib/xla_extension.so") + &line("/v/torch/lib/libtorch_cuda.so");
        assert_eq!(from_maps(&both), Framework::Pytorch);
        let jc = line("/v/cupy/_core/core.so") + &line("/v/jaxlib/xla_extension.so");
        assert_eq!(from_maps(&jc), Framework::Jax);
    }

    #[test]
    fn own_maps_are_readable() {
        assert_eq!(read(std::process::id()), Reading::Value(Framework::Other));
    }
}
