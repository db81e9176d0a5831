//! The screen's promises end to end in tmux (issue 35): paused, the screen stays exactly as it
//! was while the demo's replay goes on; a replay says when it ended and the demo which loop it is
//! on, each loop starting clean with counts that agree; an alert read whole (Enter) at 72x20,
//! 80x24 and 120x40, scrolled to its end with PgDn, every word of its remedy shown, Esc closing
//! it; a tab in `--filter` moves no border. Needs tmux (`.ci/run` installs it).

#[path = "common/demo.rs"]
mod demo;
#[path = "common/tmux.rs"]
mod tmux;

use std::thread::sleep;
use std::time::Duration;

use demo::{DEMO, counts, demo_alert};
use tmux::Session;

#[test]
fn paused_the_screen_stays_exactly_as_it_was() {
    let s = Session::start("pause", "--demo --speed 10", (120, 40));
    s.wait_for(|t| t.contains("[exited"), "an exited process");
    s.keys(&["p"]);
    let paused = s.wait_for(|t| t.contains("PAUSED"), "the pause");
    // Long enough for the replay to move on by ten samples and more.
    sleep(Duration::from_millis(1500));
    assert_eq!(s.screen(), paused, "every age stayed as it was");
    s.keys(&["p"]);
    let resumed = s.wait_for(|t| !t.contains("PAUSED") && *t != paused, "the resume");
    assert!(!resumed.contains("stale"), "{resumed}");
    s.keys(&["q"]);
    s.assert_restored(0);
}

#[test]
fn a_replay_says_it_ended_and_the_demo_which_loop_it_is_on() {
    let s = Session::start("ended", &format!("--replay {DEMO} --speed 100"), (120, 40));
    let end = s.wait_for(|t| t.contains("replay ended"), "the replay's end");
    assert!(!end.contains("loop"), "{end}");
    assert!(!end.contains("stale"), "ended, not stale:\n{end}");
    let (gpu, panel) = counts(&end);
    assert_eq!(gpu, panel, "{end}");
    s.keys(&["q"]);
    s.assert_restored(0);

    let s = Session::start("loops", "--demo --speed 50", (120, 40));
    let before = s.wait_for(|t| t.contains("alerts (8)"), "the end of loop 1");
    let (gpu, panel) = counts(&before);
    assert_eq!((gpu, panel), (8, 8), "{before}");
    let second = s.wait_for(|t| t.contains("loop 2"), "loop 2");
    assert!(
        !second.contains("[exited"),
        "loop 2 starts clean:\n{second}"
    );
    assert!(!second.contains("OOM"), "no alert of loop 1:\n{second}");
    let later = s.wait_for(
        |t| t.contains("loop 2") && t.contains("alerts (8)"),
        "loop 2's alerts",
    );
    assert_eq!(counts(&later), (8, 8), "{later}");
    s.keys(&["q"]);
    s.assert_restored(0);
}

fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The open alert's text rows: between the header and the bottom border, borders cut.
fn text_rows(screen: &str) -> Vec<String> {
    let lines: Vec<&str> = screen.lines().collect();
    let bottom = lines.iter().rposition(|l| l.starts_with('└')).unwrap();
    lines[1..bottom]
        .iter()
        .map(|l| {
            l.trim_start_matches('│')
                .trim_end()
                .trim_end_matches('│')
                .to_string()
        })
        .collect()
}

#[test]
fn an_alert_reads_whole_at_every_size() {
    let alert = demo_alert("device-full");
    let remedy = words(alert.remedy.as_deref().unwrap());
    // Its row in the alerts list, newest first (at 72x20 the table has no room for the exited
    // rows below the two GPUs' blocks).
    let listed = format!("pid {} PyTorch OOM", alert.pid.unwrap());
    for (w, h) in [(72, 20), (80, 24), (120, 40)] {
        let s = Session::start(&format!("alert{w}"), "--demo --speed 20", (w, h));
        s.wait_for(|t| t.contains(&listed), "the device-full OOM");
        s.keys(&["p", "a", "Enter"]);
        s.wait_for(|t| t.contains("evidence (certain)"), "the open alert");
        let mut screen = s.settled();
        assert!(screen.contains("Esc close"), "{w}x{h}:\n{screen}");
        // Page down to the end, putting the text together from the rows passed.
        let mut seen: Vec<String> = Vec::new();
        loop {
            for row in text_rows(&screen) {
                if !seen.contains(&row) || row.trim().is_empty() {
                    seen.push(row);
                }
            }
            if !screen.contains("more below") {
                break;
            }
            s.keys(&["PageDown"]);
            let was = screen.clone();
            s.wait_for(|t| *t != was, "the next page");
            screen = s.settled();
        }
        let text = words(&seen.join(" "));
        assert!(
            text.contains(&remedy),
            "{w}x{h}: the remedy whole in\n{text}"
        );
        for e in &alert.evidence {
            assert!(text.contains(&words(e)), "{w}x{h}: {e:?} in\n{text}");
        }
        s.keys(&["Escape"]);
        s.wait_for(
            |t| t.contains("q quit") && !t.contains("Esc close"),
            "closed",
        );
        s.keys(&["q"]);
        s.assert_restored(0);
    }
}

#[test]
fn a_tab_in_the_filter_moves_no_border() {
    let s = Session::start("tab", "--demo --filter 'py\tthon'", (120, 40));
    let screen = s.wait_for(|t| t.contains("filter:"), "the filter in the header");
    assert!(screen.contains("py\\u{9}thon"), "{screen}");
    let top = screen.lines().next().unwrap();
    assert_eq!(top.chars().count(), 120, "{top}");
    assert!(top.ends_with('┐'), "{top}");
    s.keys(&["q"]);
    s.assert_restored(0);
}
