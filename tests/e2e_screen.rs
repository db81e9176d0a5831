//! End to end in tmux: the layout at large and small sizes (the chart fills a large screen with
//! no empty row; the GPU bar keeps half of an 80-column one) and the mouse (a click selects a
//! process row; with `--no-mouse` the terminal is never asked for mouse reports, so its own
//! selection works).
//! Needs tmux (`.ci/run` installs it).

#[path = "common/demo.rs"]
mod demo;
#[path = "common/tmux.rs"]
mod tmux;

use demo::demo_alert;
use tmux::Session;

/// The demo's fragmenting PyTorch job: the process its fragmentation OOM names.
fn fragmenting_pid() -> u32 {
    demo_alert("fragmentation")
        .pid
        .expect("the demo's fragmentation OOM names its process")
}

/// The demo's processes are in the table (they start a few seconds into the recording).
fn table_rows(screen: &str) -> Vec<(usize, u32)> {
    screen
        .lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let mut words = l.trim_start_matches(['│', '>', ' ']).split_whitespace();
            let gpu = words.next()?;
            let pid = words.next()?.parse().ok()?;
            (gpu == "0" && l.contains("python3")).then_some((i, pid))
        })
        .collect()
}

/// Rows below the header that show nothing but borders: the panels' frames, and the columns
/// where a divider above has a `┬` (the border between the detail and alerts panels).
fn empty_rows(screen: &str) -> Vec<usize> {
    let lines: Vec<Vec<char>> = screen.lines().map(|l| l.chars().collect()).collect();
    let mut splits: Vec<usize> = Vec::new();
    let mut empty = Vec::new();
    for (i, l) in lines.iter().enumerate().skip(1) {
        if l.first() == Some(&'├') || l.first() == Some(&'└') {
            splits = (0..l.len()).filter(|c| l[*c] == '┬').collect();
            continue;
        }
        if l.first() != Some(&'│') {
            continue;
        }
        let content = l
            .iter()
            .enumerate()
            .filter(|(c, _)| *c != 0 && *c != l.len() - 1 && !splits.contains(c))
            .any(|(_, ch)| !ch.is_whitespace());
        if !content {
            empty.push(i);
        }
    }
    empty
}

/// Columns between the brackets of the GPU0 bar.
fn bar_width(screen: &str) -> usize {
    let line = screen
        .lines()
        .find(|l| l.contains("GPU0"))
        .expect("a GPU0 line");
    let open = line.find('[').expect("a bar");
    let close = line[open..].find(']').expect("a closed bar") + open;
    line[open + 1..close].chars().count()
}

#[test]
fn the_chart_fills_a_large_screen_and_the_bar_half_a_small_one() {
    let s = Session::start("layout", "--demo", (200, 50));
    // The first row, selected, is the demo's probed JAX job: the chart tells its pool's story.
    let screen = s.wait_for(
        |t| table_rows(t).len() >= 3 && t.contains("pool on GPU0, last"),
        "the chart and three processes",
    );
    assert!(screen.contains("now"), "a time axis:\n{screen}");
    assert_eq!(empty_rows(&screen), Vec::<usize>::new(), "\n{screen}");

    s.resize(80, 24);
    let screen = s.wait_for(
        |t| t.lines().count() <= 24 && t.contains("processes") && t.contains("GPU0"),
        "the screen at 80x24",
    );
    let width = bar_width(&screen);
    assert!(width >= 38, "bar of {width} columns:\n{screen}");
    s.keys(&["q"]);
    s.assert_restored(0);
}

#[test]
fn the_probed_pytorch_job_shows_its_pool_over_time() {
    let pid = fragmenting_pid();
    let s = Session::start("pool", "--demo --speed 10", (120, 40));
    s.wait_for(
        |t| t.contains(&format!(" {pid} ")),
        "the fragmenting PyTorch job",
    );
    s.keys(&["/", &pid.to_string(), "Enter"]);
    let screen = s.wait_for(
        |t| t.contains(&format!("pid {pid} pool on GPU0")) && t.contains("allocated"),
        "its pool chart",
    );
    for legend in ["device", "pool ", "allocated"] {
        assert!(screen.contains(legend), "{legend}:\n{screen}");
    }
    s.keys(&["g"]);
    s.wait_for(|t| t.contains("whole GPU (g: fit)"), "the whole-GPU scale");
    s.keys(&["q"]);
    s.assert_restored(0);
}

#[test]
fn a_click_selects_a_process_row() {
    let s = Session::start("click", "--demo", (120, 40));
    let screen = s.wait_for(|t| table_rows(t).len() >= 3, "three processes");
    let (row, pid) = table_rows(&screen)[2];
    s.click(20, u16::try_from(row).unwrap());
    s.wait_for(
        |t| t.contains(&format!("selected: {pid} ")),
        "the clicked process selected",
    );
    s.keys(&["q"]);
    s.assert_restored(0);
}

#[test]
fn the_mouse_is_captured_only_without_no_mouse() {
    for (args, captured) in [("--demo", true), ("--demo --no-mouse", false)] {
        let s = Session::start("mouseflag", args, (100, 30));
        s.wait_for(|t| t.contains("processes"), "the demo");
        assert_eq!(s.mouse_captured(), captured, "{args}");
        s.keys(&["q"]);
        // Released again on quit (`assert_restored` checks the mouse flag too).
        s.assert_restored(0);
    }
}
