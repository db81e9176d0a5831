//! The tmux harness of the end-to-end tests: gpumon in a detached tmux session, driven with keys,
//! its screen read back, and after it ends its exit status and the terminal's modes.
#![allow(dead_code, reason = "each test file uses the part it needs")]

use std::path::PathBuf;
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

pub struct Session {
    pub name: String,
    pub dir: tempfile::TempDir,
}

impl Session {
    /// Starts `gpumon ARGS` in a detached tmux session of the given size. When gpumon ends,
    /// the shell records its status and the terminal modes, then waits to be killed.
    pub fn start(tag: &str, args: &str, size: (u16, u16)) -> Session {
        Session::run(
            tag,
            &format!("{} {args}", env!("CARGO_BIN_EXE_gpumon")),
            size,
        )
    }

    /// Like `start`, for any command line.
    pub fn run(tag: &str, command: &str, size: (u16, u16)) -> Session {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("gpumon-e2e-{tag}-{}", std::process::id());
        let d = dir.path().display();
        let script = format!(
            "cd {d}; stty sane; GPUMON_NVML_LIB=/nonexistent/libnvidia-ml.so.1 {command} 2>{d}/stderr; \
             echo $? > {d}/status; stty -a > {d}/stty; \
             tmux display -p '#{{alternate_on}} #{{cursor_flag}} #{{mouse_any_flag}}' > {d}/screen; sleep 60"
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

    /// An interactive bash (job control on, prompt `gpumon-test$ `) in a detached tmux session,
    /// for tests that need the shell itself: Ctrl-Z, `fg`.
    pub fn shell(tag: &str, size: (u16, u16)) -> Session {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("gpumon-e2e-{tag}-{}", std::process::id());
        let (x, y) = (size.0.to_string(), size.1.to_string());
        let cwd = dir.path().display().to_string();
        let ok = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                &x,
                "-y",
                &y,
                "-c",
                &cwd,
            ])
            .args(["-e", "LANG=C.UTF-8", "-e", "TERM=xterm-256color"])
            .args([
                "-e",
                "PS1=gpumon-test$ ",
                "-e",
                "GPUMON_NVML_LIB=/nonexistent/libnvidia-ml.so.1",
            ])
            .args(["bash", "--norc", "--noprofile", "-i"])
            .status()
            .expect("tmux must be installed (.ci/run installs it)");
        assert!(ok.success());
        Session { name, dir }
    }

    /// Whether the pane shows the alternate screen (a full-screen program is up).
    pub fn alternate_on(&self) -> bool {
        let out = Command::new("tmux")
            .args(["display", "-p", "-t", &self.name, "#{alternate_on}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    pub fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        Command::new("tmux")
            .args(["send-keys", "-t", &self.name])
            .args(keys)
            .status()
            .unwrap();
    }

    /// A left click at screen cell (`x`, `y`), 0-based, sent as the SGR mouse report a
    /// terminal writes (press, then release) while the program captures the mouse.
    pub fn click(&self, x: u16, y: u16) {
        for end in ['M', 'm'] {
            self.keys(&["-l", &format!("\x1b[<0;{};{}{end}", x + 1, y + 1)]);
        }
    }

    /// Whether the program in the pane has asked the terminal for mouse reports.
    pub fn mouse_captured(&self) -> bool {
        let out = Command::new("tmux")
            .args(["display", "-p", "-t", &self.name, "#{mouse_any_flag}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    pub fn resize(&self, width: u16, height: u16) {
        Command::new("tmux")
            .args(["resize-window", "-t", &self.name])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .status()
            .unwrap();
    }

    #[track_caller]
    pub fn wait_for(&self, what: impl Fn(&str) -> bool, label: &str) -> String {
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

    /// The screen once it stopped changing: two captures 150 ms apart alike (a capture taken
    /// while gpumon writes a frame can hold half of each).
    #[track_caller]
    pub fn settled(&self) -> String {
        let start = Instant::now();
        let mut last = self.screen();
        loop {
            sleep(Duration::from_millis(150));
            let now = self.screen();
            if now == last {
                return now;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the screen never settled; screen:\n{now}"
            );
            last = now;
        }
    }

    #[track_caller]
    pub fn wait_file(&self, file: &str) -> String {
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
    pub fn gpumon_pid(&self) -> String {
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

    /// Exit status, and that the terminal is back in cooked mode on the main screen with a cursor
    /// and no mouse reporting.
    #[track_caller]
    pub fn assert_restored(&self, status: i32) -> String {
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
            "0 1 0",
            "main screen, cursor shown, mouse released"
        );
        stderr
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}
