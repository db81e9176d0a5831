//! `GPUMON_TICK_TIMES=FILE`: the real binary writes where its ticks go (here `serve --demo`,
//! replayed fast, scraped once) to FILE, mode 0600; without the variable nothing is written.

#[path = "common/serve.rs"]
mod serve;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use serve::{POLLS, Server};

#[test]
fn the_tick_report_names_each_timed_part() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ticks.txt");
    let server = Server::start_with_env(
        &["--demo", "--speed", "50"],
        &[("GPUMON_TICK_TIMES", file.to_str().unwrap())],
    );
    server.wait_until("ok");
    assert_eq!(server.get("/metrics", &[]).status, 200);
    let mut text = String::new();
    for _ in 0..POLLS {
        text = std::fs::read_to_string(&file).unwrap_or_default();
        if text.contains("serve.metrics") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(text.starts_with("gpumon tick times: "), "{text}");
    for part in [
        "source.sample (whole tick)",
        "serve.apply",
        "serve.snapshot",
        "serve.metrics",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    drop(server);
    // Without the variable: no file appears beside it.
    let _quiet = Server::start(&["--demo", "--speed", "50"]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
