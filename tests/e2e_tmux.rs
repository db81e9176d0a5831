//! End to end in a real terminal: the gpumon binary in tmux, driven with keys and signals,
//! checking the screen, the snapshot the `s` key writes, and that the terminal is restored.
//! Needs tmux (`.ci/run` installs it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

struct Session {
    name: String,
    dir: tempfile::TempDir,
}

impl Session {
    /// Starts `gpumon ARGS` in a detached tmux session of the given size. When gpumon ends,
    /// the shell records its status and the terminal modes, then waits to be killed.
    fn start(tag: &str, args: &str, size: (u16, u16)) -> Session {
        Session::run(
            tag,
            &format!("{} {args}", env!("CARGO_BIN_EXE_gpumon")),
            size,
        )
    }

    /// Like `start`, for any command line.
    fn run(tag: &str, command: &str, size: (u16, u16)) -> Session {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("gpumon-e2e-{tag}-{}", std::process::id());
        let d = dir.path().display();
        let script = format!(
            "cd {d}; stty sane; GPUMON_NVML_LIB=/nonexistent/libnvidia-ml.so.1 {command} 2>{d}/stderr; \
             echo $? > {d}/status; stty -a > {d}/stty; \
             tmux display -p '#{{alternate_on}} #{{cursor_flag}}' > {d}/screen; sleep 60"
        );
        let ok = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                &size.0.to_string(),
                "-y",
                &size.1.to_string(),
            ])
            .args([
                "-e",
                "LANG=C.UTF-8",
                "-e",
                "TERM=xterm-256color",
                "sh",
                "-c",
                &script,
            ])
            .status()
            .expect("tmux must be installed (.ci/run installs it)");
        assert!(ok.success());
        Session { name, dir }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        Command::new("tmux")
            .args(["send-keys", "-t", &self.name])
            .args(keys)
            .status()
            .unwrap();
    }

    #[track_caller]
    fn wait_for(&self, what: impl Fn(&str) -> bool, label: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if what(&s) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "timed out waiting for {label}; screen:\n{s}"
            );
            sleep(Duration::from_millis(100));
        }
    }

    #[track_caller]
    fn wait_file(&self, file: &str) -> String {
        let start = Instant::now();
        let p = self.path(file);
        loop {
            if let Ok(s) = std::fs::read_to_string(&p)
                && !s.is_empty()
            {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no {file}; screen:\n{}",
                self.screen()
            );
            sleep(Duration::from_millis(100));
        }
    }

    /// This session's gpumon: the child of the pane's shell (other tests run their own at once).
    fn gpumon_pid(&self) -> String {
        let pane = Command::new("tmux")
            .args(["display", "-p", "-t", &self.name, "#{pane_pid}"])
            .output()
            .unwrap();
        let shell = String::from_utf8_lossy(&pane.stdout).trim().to_string();
        let out = Command::new("pgrep").args(["-P", &shell]).output().unwrap();
        let pids = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert_eq!(
            pids.lines().count(),
            1,
            "one child of the pane's shell: {pids:?}"
        );
        pids
    }

    /// Exit status, and that the terminal is back in cooked mode on the main screen with a cursor.
    #[track_caller]
    fn assert_restored(&self, status: i32) {
        let got: i32 = self.wait_file("status").trim().parse().unwrap();
        let stderr = std::fs::read_to_string(self.path("stderr")).unwrap_or_default();
        assert_eq!(got, status, "stderr: {stderr}");
        let stty = self.wait_file("stty");
        let modes: Vec<&str> = stty.split_whitespace().collect();
        for mode in ["icanon", "echo", "icrnl", "isig"] {
            assert!(
                modes.contains(&mode),
                "terminal left without {mode}:\n{stty}"
            );
        }
        assert_eq!(
            self.wait_file("screen").trim(),
            "0 1",
            "main screen, cursor shown"
        );
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}

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
    assert_eq!(doc["schema"], "gpumon.snapshot/1");
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
    for (sig, status) in [("TERM", 143), ("HUP", 129), ("INT", 130)] {
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut guard = gpumon::terminal::enter().unwrap();
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

/// The PIDs in the process table of a captured screen (rows start with the GPU index, then the PID).
fn table_pids(screen: &str) -> Vec<u32> {
    screen
        .lines()
        .filter_map(|l| {
            let row = l.trim_start_matches(['│', '|', ' ', '>']);
            let mut cols = row.split_whitespace();
            cols.next()?.parse::<u32>().ok()?;
            cols.next()?.parse::<u32>().ok()
        })
        .collect()
}
