//! End to end in a real terminal: the gpumon binary in tmux, driven with keys and signals,
//! checking the screen, the snapshot the `s` key writes, and that the terminal is restored.
//! Needs tmux (`.ci/run` installs it).

#[path = "common/tmux.rs"]
mod tmux;

use std::path::{Path, PathBuf};
use std::process::Command;

use tmux::Session;

fn snapshot_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect()
}

#[test]
fn filter_snapshot_resize_and_quit() {
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson");
    let s = Session::start(
        "keys",
        &format!("--replay {demo} --speed 4 --snapshot-dir ."),
        (120, 40),
    );
    let screen = s.wait_for(|t| table_pids(t).len() >= 3, "three processes in the table");
    let pids = table_pids(&screen);
    let target = pids[0];

    s.keys(&["/"]);
    s.keys(&[&target.to_string()]);
    s.keys(&["Enter"]);
    let filtered = s.wait_for(
        |t| t.contains(&format!("filter: pid {target}")),
        "filter applied",
    );
    for other in &pids[1..] {
        let rows = filtered
            .lines()
            .filter(|l| l.contains(&format!(" {other} ")))
            .count();
        assert_eq!(rows, 0, "pid {other} hidden by the filter:\n{filtered}");
    }

    s.keys(&["s"]);
    s.wait_for(
        |t| t.contains("snapshot written"),
        "the snapshot status line",
    );
    let files = snapshot_files(s.dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(doc["schema"], "gpumon.snapshot/4");
    let in_doc: Vec<u64> = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pid"].as_u64().unwrap())
        .collect();
    for p in &pids {
        assert!(
            in_doc.contains(&u64::from(*p)),
            "filtered-out pid {p} is in the snapshot: {in_doc:?}"
        );
    }

    s.keys(&["Escape"]);
    s.wait_for(
        |t| !t.contains(&format!("filter: pid {target}")),
        "filter cleared",
    );

    Command::new("tmux")
        .args(["resize-window", "-t", &s.name, "-x", "30", "-y", "8"])
        .status()
        .unwrap();
    s.wait_for(|t| t.contains("too small"), "the too-small notice");
    Command::new("tmux")
        .args(["resize-window", "-t", &s.name, "-x", "80", "-y", "24"])
        .status()
        .unwrap();
    s.wait_for(|t| t.contains("processes"), "the screen back at 80x24");

    s.keys(&["q"]);
    s.assert_restored(0);
}

#[test]
fn unwritable_snapshot_dir_is_reported_and_the_screen_keeps_running() {
    let s = Session::start(
        "rodir",
        "--demo --snapshot-dir /nonexistent/snapshots",
        (100, 30),
    );
    s.wait_for(|t| t.contains("processes"), "the demo");
    s.keys(&["s"]);
    let screen = s.wait_for(
        |t| t.contains("snapshot failed"),
        "the error on the status line",
    );
    assert!(screen.contains("/nonexistent/snapshots"), "{screen}");
    s.keys(&["p"]);
    s.wait_for(|t| t.contains("PAUSED"), "still answering keys");
    s.keys(&["q"]);
    s.assert_restored(0);
}

#[test]
fn signals_restore_the_terminal() {
    for (sig, status) in [
        ("TERM", 143),
        ("HUP", 129),
        ("INT", 130),
        ("QUIT", 131),
        ("USR1", 138),
    ] {
        let s = Session::start(&format!("sig{sig}"), "--demo", (100, 30));
        s.wait_for(|t| t.contains("processes"), "the demo");
        let pid = s.gpumon_pid();
        assert!(!pid.is_empty());
        Command::new("kill")
            .args([&format!("-{sig}"), &pid])
            .status()
            .unwrap();
        s.assert_restored(status);
    }
}

/// A paste is text: `x\nq` pasted into the filter prompt (tmux's `paste-buffer -p` brackets it,
/// as the terminal does once gpumon asked for bracketed paste) is typed into the prompt, and a
/// paste outside a prompt presses nothing.
#[test]
fn a_paste_never_presses_a_key() {
    let s = Session::start("paste", "--demo", (100, 30));
    s.wait_for(|t| t.contains("processes"), "the demo");
    let paste = |text: &str| {
        let buffer = format!("{}-buffer", s.name);
        Command::new("tmux")
            .args(["set-buffer", "-b", &buffer, text])
            .status()
            .unwrap();
        Command::new("tmux")
            .args(["paste-buffer", "-p", "-d", "-b", &buffer, "-t", &s.name])
            .status()
            .unwrap();
    };
    paste("q");
    s.keys(&["/"]);
    paste("x\nq");
    s.wait_for(
        |t| t.contains("filter: xq"),
        "the paste in the prompt as text",
    );
    s.keys(&["Escape"]);
    // The prompt closed before the next key: an Escape and a `p` read together are Alt+p.
    s.wait_for(|t| !t.contains("filter: xq"), "the prompt closed");
    s.keys(&["p"]);
    s.wait_for(|t| t.contains("PAUSED"), "still answering keys");
    s.keys(&["q"]);
    s.assert_restored(0);
}

fn resize(s: &Session, (x, y): (u16, u16)) {
    Command::new("tmux")
        .args([
            "resize-window",
            "-t",
            &s.name,
            "-x",
            &x.to_string(),
            "-y",
            &y.to_string(),
        ])
        .status()
        .unwrap();
}

#[test]
fn a_1x1_terminal_and_back_then_ctrl_c() {
    let s = Session::start("tiny", "--demo", (100, 30));
    s.wait_for(|t| t.contains("processes"), "the demo");
    resize(&s, (1, 1));
    s.wait_for(|t| !t.contains("processes"), "the 1x1 screen");
    resize(&s, (100, 30));
    s.wait_for(|t| t.contains("processes"), "the screen back at 100x30");
    s.keys(&["C-c"]);
    s.assert_restored(0);
}

#[test]
fn a_signal_while_1x1_restores_the_terminal() {
    let s = Session::start("tinyint", "--demo", (100, 30));
    s.wait_for(|t| t.contains("processes"), "the demo");
    resize(&s, (1, 1));
    s.wait_for(|t| !t.contains("processes"), "the 1x1 screen");
    Command::new("kill")
        .args(["-INT", &s.gpumon_pid()])
        .status()
        .unwrap();
    s.assert_restored(130);
}

/// A panic in an async task or on the blocking pool (where NVML is called): the panic hook
/// restores the terminal and the status is 101. The panicking program is this test binary's
/// `panic_helper`, which takes the terminal exactly as gpumon does; gpumon itself ships no way
/// to make it panic.
#[test]
fn a_panic_in_a_task_restores_the_terminal_and_exits_101() {
    let exe = std::env::current_exe().unwrap();
    for kind in ["task", "blocking"] {
        let command = format!(
            "GPUMON_E2E_PANIC={kind} {} --exact panic_helper --ignored --nocapture",
            exe.display()
        );
        let s = Session::run(&format!("panic{kind}"), &command, (100, 30));
        s.assert_restored(101);
        let err = std::fs::read_to_string(s.path("stderr")).unwrap();
        assert!(
            err.contains(&format!("injected panic in a {kind}")),
            "{err}"
        );
    }
}

/// Run only by the test above, in tmux: enters the terminal as gpumon does, then panics in a
/// task of the kind `GPUMON_E2E_PANIC` names. Reaching the end means the hook did not exit.
#[test]
#[ignore = "a helper for a_panic_in_a_task_restores_the_terminal_and_exits_101"]
fn panic_helper() {
    let Ok(kind) = std::env::var("GPUMON_E2E_PANIC") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut guard = gpumon::terminal::enter(true).unwrap();
        guard
            .terminal
            .draw(|f| f.render_widget(ratatui::widgets::Paragraph::new("helper"), f.area()))
            .unwrap();
        let _ = match kind.as_str() {
            "blocking" => {
                tokio::task::spawn_blocking(|| panic!("injected panic in a blocking")).await
            }
            _ => tokio::spawn(async { panic!("injected panic in a task") }).await,
        };
    });
    std::process::exit(3);
}

#[test]
fn no_gpu_exits_2_and_restores_the_terminal() {
    let s = Session::start("nogpu", "", (100, 30));
    s.assert_restored(2);
    let err = std::fs::read_to_string(s.path("stderr")).unwrap();
    assert!(err.contains("gpumon --demo"), "{err}");
}

/// The PIDs in the process table of a captured screen (rows start with the GPU index, then the
/// PID), each once in table order: a process on two GPUs has a row on each.
fn table_pids(screen: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for pid in screen.lines().filter_map(|l| {
        let row = l.trim_start_matches(['│', '|', ' ', '>']);
        let mut cols = row.split_whitespace();
        cols.next()?.parse::<u32>().ok()?;
        cols.next()?.parse::<u32>().ok()
    }) {
        if !pids.contains(&pid) {
            pids.push(pid);
        }
    }
    pids
}
