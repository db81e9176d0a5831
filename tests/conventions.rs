//! What users expect of a command-line program: shell completions that load, a man page, and a
//! text snapshot that fits 80 columns on every recording gpumon ships or tests with.

use std::path::Path;
use std::process::Command;

#[test]
fn bash_completion_loads() {
    let bin = Path::new(env!("CARGO_BIN_EXE_gpumon"));
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c"])
        .arg(format!(
            "source <('{}' completions bash) && complete -p gpumon",
            bin.display()
        ))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.starts_with("complete ") && text.trim_end().ends_with(" gpumon"),
        "{text}"
    );
}

#[test]
fn completions_for_each_shell_and_the_man_page() {
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(env!("CARGO_BIN_EXE_gpumon"))
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success() && !out.stdout.is_empty(), "{shell}");
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let man = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .arg("man")
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&man.stdout);
    assert!(
        man.status.success() && page.contains(".TH gpumon"),
        "{page}"
    );
}

#[test]
fn text_snapshots_fit_80_columns() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut recordings = vec![root.join("assets/demo.ndjson")];
    let fixtures = root.join("tests/fixtures/recordings");
    recordings.extend(
        std::fs::read_dir(fixtures)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "ndjson")),
    );
    assert!(recordings.len() >= 3, "{recordings:?}");
    for rec in recordings {
        let out = Command::new(env!("CARGO_BIN_EXE_gpumon"))
            .args(["snapshot", "--format", "text", "--replay"])
            .arg(&rec)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {out:?}", rec.display());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.lines().count() > 10, "{text}");
        for line in text.lines() {
            let n = line.chars().count();
            assert!(n <= 80, "{}: {n} columns: {line}", rec.display());
        }
    }
}
