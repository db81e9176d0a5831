//! Runs the allocator probe hook's own tests (`tests/python`, Python standard library only).

use std::process::Command;

#[test]
fn python_probe_hook_tests_pass() {
    let out = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", "tests/python", "-v"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("PYTHONPATH")
        .env_remove("GPUMON_PROBE_DIR")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| {
            panic!("python3 could not be started ({e}); it is needed to test python/gpumon/probe")
        });
    assert!(
        out.status.success(),
        "python3 -m unittest discover -s tests/python failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
