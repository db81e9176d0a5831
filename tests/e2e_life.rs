//! End to end in tmux, for the conventions of a terminal program and the signal key: Ctrl-Z
//! suspends gpumon to a usable shell and `fg` brings the screen back redrawn; on the demo, K and
//! F9 say that signals are off instead of opening the dialog. (Signalling a real process needs
//! the live screen to list it, which needs NVML: the re-check and the signal are tested on real
//! child processes in `kill` and `cmd::sources`, the dialog in `tests/screen_life.rs`.)

#[path = "common/tmux.rs"]
mod tmux;

use tmux::Session;

const PROMPT: &str = "gpumon-test$";

fn gpumon() -> &'static str {
    env!("CARGO_BIN_EXE_gpumon")
}

#[test]
fn ctrl_z_suspends_to_a_usable_shell_and_fg_redraws() {
    let s = Session::shell("suspend", (100, 30));
    s.wait_for(|t| t.contains(PROMPT), "the shell's prompt");
    s.keys(&[&format!("{} --demo", gpumon()), "Enter"]);
    s.wait_for(|t| t.contains("processes"), "the demo");
    assert!(s.alternate_on());

    s.keys(&["C-z"]);
    s.wait_for(
        |t| t.contains("Stopped"),
        "the shell reports the stopped job",
    );
    assert!(!s.alternate_on(), "the main screen is back");
    s.keys(&["echo hi-from-the-shell", "Enter"]);
    s.wait_for(
        |t| t.lines().any(|l| l.trim() == "hi-from-the-shell"),
        "the shell runs a command",
    );

    s.keys(&["fg", "Enter"]);
    s.wait_for(
        |t| t.contains("processes") && !t.contains("hi-from-the-shell"),
        "the screen redrawn after fg",
    );
    assert!(s.alternate_on());
    s.keys(&["q"]);
    s.wait_for(
        |t| t.contains("Stopped") && !t.contains("processes"),
        "gpumon quit",
    );
    s.keys(&["echo status=$?", "Enter"]);
    s.wait_for(|t| t.contains("status=0"), "gpumon's exit status");
}

#[test]
fn on_the_demo_the_signal_keys_say_why_they_are_off() {
    let s = Session::start("sigoff", "--demo", (120, 40));
    s.wait_for(|t| t.contains("processes"), "the demo");
    for key in ["K", "F9"] {
        s.keys(&["Escape"]);
        s.keys(&[key]);
        s.wait_for(
            |t| t.contains("signals are off: the demo replays a recording"),
            "the status line",
        );
    }
    let screen = s.screen();
    assert!(!screen.contains("SIGTERM"), "no dialog: {screen}");
    s.keys(&["q"]);
    s.assert_restored(0);
}
