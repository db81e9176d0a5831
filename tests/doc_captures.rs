//! The screens in the README, docs/guide/screen.md and docs/guide/memory-map.md are the binary's:
//! each fenced block that follows a `<!-- capture: NAME -->` line is compared with what the
//! screen draws of the demo recording built into gpumon (`gpumon --demo --speed 10` at 120x40),
//! replayed through the same update to 15 s after its last OOM and paused, rendered into a
//! TestBackend. A change that alters these screens fails here until the docs show it.
//!
//! To regenerate them (a new demo recording, a changed screen), one command:
//!
//! ```text
//! UPDATE_DOCS=1 cargo test --test doc_captures
//! ```
//!
//! writes README.md and the guide's pages with every capture replaced under
//! `target/tmp/doc-captures/` (tests never write into the checkout); copy them over with
//! `cp -r target/tmp/doc-captures/. .` and read the diff.

use std::fs;
use std::path::{Path, PathBuf};

use gpumon::input::Action;
use gpumon::model::{Config, Event, Level};
use gpumon::screen::{Msg, State};
use gpumon::source::replay::ReplaySource;
use gpumon::source::{Source, SourceError};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// The pages that hold captures, from the repository's root.
const PAGES: [&str; 3] = [
    "README.md",
    "docs/guide/screen.md",
    "docs/guide/memory-map.md",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// How long after the demo's last OOM its screens are captured.
const AFTER_LAST_OOM_MS: u64 = 15_000;

/// The demo as `gpumon --demo --speed 10` plays it (the embedded recording, its interval, the
/// history `--demo` gives it: its span in whole minutes; no signals or requests to its
/// processes), up to the sample `AFTER_LAST_OOM_MS`
/// after its first loop's last OOM.
fn demo_after_its_last_oom() -> State {
    let play = |until: Option<u64>| {
        let mut source = ReplaySource::demo().unwrap();
        let config = Config {
            replay_speed: Some(10.0),
            ..Config::new(source.header().interval_ms, 120_000)
        };
        let mut state = State::new(config);
        // As `gpumon --demo` sets it up: no signals to, and no requests to the probes of, a
        // recording's processes.
        state.screen.signals_off = Some("the demo replays a recording".into());
        state.screen.requests_off = Some("the demo replays a recording".into());
        state.update(Msg::from(Event::Started(source.machine().unwrap())));
        loop {
            match source.sample() {
                Ok(s) if until.is_some_and(|t| s.at_ms > t) => break,
                Ok(s) => state.update(Msg::from(Event::Sample(s))),
                Err(SourceError::Lapped(_)) => break,
                Err(e) => panic!("{e}"),
            };
        }
        state
    };
    let whole = play(None);
    let last_oom = whole
        .machine()
        .alerts
        .iter()
        .filter(|a| a.level == Level::Failure)
        .map(|a| a.at_ms)
        .max()
        .expect("the demo's OOMs");
    play(Some(last_oom + AFTER_LAST_OOM_MS))
}

fn act(state: &mut State, actions: &[Action]) {
    for a in actions {
        state.update(Msg::Action(*a));
    }
}

/// What the screen draws at 120x40, as `tmux capture-pane` gives it (trailing blanks cut).
fn draw(state: &State) -> String {
    let (w, h) = (120, 40);
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    let buf = terminal.backend().buffer();
    (0..h)
        .map(|y| {
            let line: String = (0..w).map(|x| buf[(x, y)].symbol()).collect();
            line.trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every capture by name: what the binary draws for it.
fn captures() -> Vec<(&'static str, String)> {
    let mut paused = demo_after_its_last_oom();
    act(&mut paused, &[Action::TogglePause]);
    // The fragmenting PyTorch job filtered (`/PID` Enter, 5230 in this recording) with the
    // alerts list selected (`a`), and with its block map open (`m`) instead.
    let frag = || {
        let mut s = demo_after_its_last_oom();
        let pid = fragmenting_pid(&s);
        act(&mut s, &[Action::TogglePause, Action::FilterPrompt]);
        let digits: Vec<Action> = pid.to_string().chars().map(Action::PromptChar).collect();
        act(&mut s, &digits);
        act(&mut s, &[Action::PromptApply]);
        s
    };
    let mut alerts = frag();
    act(&mut alerts, &[Action::TogglePane]);
    let mut map = frag();
    act(&mut map, &[Action::MapPane]);
    vec![
        ("demo-paused", draw(&paused)),
        ("demo-frag-alerts", draw(&alerts)),
        ("demo-frag-map", draw(&map)),
    ]
}

/// The process the demo's fragmentation OOM names.
fn fragmenting_pid(state: &State) -> u32 {
    state
        .machine()
        .alerts
        .iter()
        .find(|a| a.class == "fragmentation")
        .and_then(|a| a.pid)
        .expect("the demo's fragmentation OOM")
}

/// `text` with the fenced block after each `<!-- capture: NAME -->` line given by `blocks`
/// (names without one kept as they are); and the names found, with their blocks as they were.
fn replace(text: &str, blocks: &[(&str, String)]) -> (String, Vec<(String, String)>) {
    let mut out = Vec::new();
    let mut found = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        out.push(line.to_string());
        let Some(name) = line
            .trim()
            .strip_prefix("<!-- capture: ")
            .and_then(|r| r.split_whitespace().next())
        else {
            continue;
        };
        let fence = lines.next().expect("a fenced block after the capture line");
        assert!(fence.starts_with("```"), "{name}: {fence}");
        out.push(fence.to_string());
        let mut old = Vec::new();
        for l in lines.by_ref() {
            if l.starts_with("```") {
                break;
            }
            old.push(l);
        }
        match blocks.iter().find(|(n, _)| *n == name) {
            Some((_, new)) => out.push(new.clone()),
            None => out.extend(old.iter().map(|l| l.to_string())),
        }
        out.push("```".to_string());
        found.push((name.to_string(), old.join("\n")));
    }
    (out.join("\n") + "\n", found)
}

#[test]
fn the_docs_screens_are_what_the_binary_draws() {
    let captures = captures();
    let update = std::env::var_os("UPDATE_DOCS").is_some_and(|v| !v.is_empty());
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("doc-captures");
    let mut stale = Vec::new();
    let mut seen = Vec::new();
    for page in PAGES {
        let text = fs::read_to_string(root().join(page)).unwrap();
        let (new, found) = replace(&text, &captures);
        for (name, old) in &found {
            let (_, want) = captures
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("{page}: no capture is named {name}"));
            if old != want {
                stale.push(format!(
                    "{page}: {name}\n--- in the page\n{old}\n--- drawn\n{want}"
                ));
            }
            seen.push(name.clone());
        }
        if update {
            let to = out_dir.join(page);
            fs::create_dir_all(to.parent().unwrap()).unwrap();
            fs::write(&to, new).unwrap();
            eprintln!("wrote {}", to.display());
        }
    }
    for (name, _) in &captures {
        assert!(seen.iter().any(|n| n == name), "{name} is shown nowhere");
    }
    if update {
        eprintln!("copy them over: cp -r {}/. .", out_dir.display());
        return;
    }
    assert!(
        stale.is_empty(),
        "the docs show screens the binary no longer draws (UPDATE_DOCS=1 regenerates them, see \
         this file's top):\n{}",
        stale.join("\n\n")
    );
}

#[test]
fn the_capture_is_the_demo_paused_after_its_ooms() {
    let captures = captures();
    let paused = &captures[0].1;
    assert!(paused.contains("replay x10 ─ PAUSED"), "{paused}");
    for class in ["fragmentation", "device-full"] {
        assert!(paused.contains(&format!("OOM: {class}]")), "{paused}");
    }
}

#[test]
fn the_map_capture_is_the_fragmenting_job_s_map_at_its_oom() {
    let captures = captures();
    let (name, map) = &captures[2];
    assert_eq!(*name, "demo-frag-map");
    for says in [
        "torch at the OOM",
        "a 512.00 MiB request does not fit",
        "917 holes",
        "gpu/torch_frag.py:48 <module>",
    ] {
        assert!(map.contains(says), "{says}:\n{map}");
    }
}
