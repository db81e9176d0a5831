//! `gpumon run` end to end in tmux, without NVML (`GPUMON_NVML_LIB` points nowhere): the command
//! still runs, its log is followed and its failure shown, and gpumon exits with its status; the
//! quit question stops it (`k`) or leaves it running (`l`). Needs tmux (`.ci/run` installs it).

use std::path::PathBuf;
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(20);

struct Session {
    name: String,
    dir: tempfile::TempDir,
}

impl Session {
    /// Starts `gpumon run ARGS` in the session's directory; when it ends, the shell records its
    /// status and the terminal modes, then waits to be killed.
    fn start(tag: &str, args: &str) -> Session {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("gpumon-e2e-run-{tag}-{}", std::process::id());
        let bin = env!("CARGO_BIN_EXE_gpumon");
        let d = dir.path().display();
        let script = format!(
            "cd {d}; stty sane; GPUMON_NVML_LIB=/nonexistent/libnvidia-ml.so.1 {bin} run {args} 2>{d}/stderr; \
             echo $? > {d}/status; stty -a > {d}/stty; \
             tmux display -p '#{{alternate_on}} #{{cursor_flag}}' > {d}/screen; sleep 60"
        );
        let ok = Command::new("tmux")
            .args(["new-session", "-d", "-s", &name, "-x", "80", "-y", "24"])
            .args(["-e", "LANG=C.UTF-8", "-e", "TERM=xterm-256color"])
            .args(["sh", "-c", &script])
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
                start.elapsed() < WAIT,
                "timed out waiting for {label}; screen:\n{s}"
            );
            sleep(Duration::from_millis(100));
        }
    }

    #[track_caller]
    fn wait_file(&self, file: &str) -> String {
        let start = Instant::now();
        loop {
            if let Ok(s) = std::fs::read_to_string(self.path(file))
                && !s.is_empty()
            {
                return s;
            }
            assert!(
                start.elapsed() < WAIT,
                "no {file}; screen:\n{}",
                self.screen()
            );
            sleep(Duration::from_millis(100));
        }
    }

    /// Exit status, and that the terminal is back in cooked mode on the main screen with a cursor.
    #[track_caller]
    fn assert_restored(&self, status: i32) -> String {
        let got: i32 = self.wait_file("status").trim().parse().unwrap();
        let stderr = std::fs::read_to_string(self.path("stderr")).unwrap_or_default();
        assert_eq!(got, status, "stderr: {stderr}");
        let stty = self.wait_file("stty");
        let modes: Vec<&str> = stty.split_whitespace().collect();
        for mode in ["icanon", "echo", "isig"] {
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
        stderr
    }

    /// The run's log (the one file gpumon created in the directory).
    fn log(&self) -> PathBuf {
        let logs: Vec<PathBuf> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        assert_eq!(logs.len(), 1, "{logs:?}");
        logs[0].clone()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}

#[test]
fn without_nvml_the_log_is_followed_and_the_status_passed_on() {
    let oom = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/logs/demo-train-frag.log"
    );
    let s = Session::start("status", &format!("-- sh -c 'cat {oom}; sleep 1; exit 3'"));
    let screen = s.wait_for(
        |t| t.contains("PyTorch OOM: fragmentation"),
        "the OOM alert",
    );
    assert!(
        screen.contains("no GPU readings: NVML library not found"),
        "{screen}"
    );
    assert!(screen.contains("log gpumon-run-sh-"), "{screen}");
    s.wait_for(|t| t.contains("exited with status 3"), "the command's end");
    s.keys(&["q"]);
    let stderr = s.assert_restored(3);
    assert!(stderr.contains("writes to gpumon-run-sh-"), "{stderr}");
    assert!(
        stderr.contains("sh -c cat exited with status 3"),
        "{stderr}"
    );
    let log = std::fs::read_to_string(s.log()).unwrap();
    assert!(log.contains("Tried to allocate 512.00 MiB"), "{log}");
}

#[test]
fn the_quit_question_cancels_then_k_stops_the_command() {
    let s = Session::start("stop", "-- sleep 60");
    s.wait_for(|t| t.contains("log gpumon-run-sleep-"), "the run's header");
    s.keys(&["q"]);
    s.wait_for(
        |t| t.contains("sleep is still running: k stop it"),
        "the question",
    );
    s.keys(&["Escape"]);
    s.wait_for(|t| !t.contains("still running"), "the question closed");
    s.keys(&["q"]);
    s.wait_for(|t| t.contains("still running"), "the question again");
    s.keys(&["k"]);
    let stderr = s.assert_restored(143);
    assert!(stderr.contains("sleep killed by SIGTERM"), "{stderr}");
}

#[test]
fn l_leaves_the_command_running_with_its_output_in_the_log() {
    let s = Session::start("leave", "-- sh -c 'sleep 1; echo later; exec sleep 60'");
    s.wait_for(|t| t.contains("log gpumon-run-sh-"), "the run's header");
    s.keys(&["q"]);
    s.wait_for(|t| t.contains("still running"), "the question");
    s.keys(&["l"]);
    let stderr = s.assert_restored(0);
    assert!(
        stderr.contains("is still running; its output goes to"),
        "{stderr}"
    );
    let pid: i32 = stderr
        .split("(pid ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {stderr}"));
    let log = s.log();
    let start = Instant::now();
    while !std::fs::read_to_string(&log).unwrap().contains("later") {
        assert!(
            start.elapsed() < WAIT,
            "the command's output never reached the log"
        );
        sleep(Duration::from_millis(100));
    }
    assert!(
        PathBuf::from(format!("/proc/{pid}")).exists(),
        "it still runs"
    );
    // Stop the command this test started: its process group.
    Command::new("kill")
        .args(["-TERM", "--", &format!("-{pid}")])
        .status()
        .unwrap();
}
