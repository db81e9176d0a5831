//! The job view end to end: a recording with ranks (a 2-rank DDP job whose rank 0 grows alone,
//! and a notebook), written from scripted samples with the recording writer into a temp dir and
//! replayed by the real binary in tmux; `J` groups the table by job, the filter keeps a job by
//! its id, a resize narrows the job's line, `q` quits with the terminal restored. Needs tmux.

#[path = "common/job_view.rs"]
mod jobs;
#[path = "common/tmux.rs"]
mod tmux;

use gpumon::recording::{Header, Writer};
use gpumon::source::scripted::build::machine;
use tmux::Session;

use jobs::{DDP, NOTEBOOK, RANK0, RANK1};

/// Samples in the recording: long enough that the replay is still running while the test types.
const TICKS: u64 = 600;

/// The table's row of `pid` (the line holding it and its command), if shown.
fn row(screen: &str, pid: u32) -> Option<&str> {
    screen
        .lines()
        .find(|l| l.contains(&format!(" {pid} ")) && l.contains("python3"))
}

#[test]
fn the_job_key_groups_the_ranks_the_filter_finds_the_job_and_a_resize_narrows_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ranks.ndjson");
    let mut w = Writer::new(
        std::fs::File::create(&path).unwrap(),
        &Header::new(machine(), 1000),
    )
    .unwrap();
    for k in 0..TICKS {
        w.sample(&jobs::ddp(k)).unwrap();
    }
    drop(w);

    let s = Session::start(
        "jobs",
        &format!("--replay {} --speed 4", path.display()),
        (120, 40),
    );
    let screen = s.wait_for(
        |t| row(t, RANK0).is_some() && row(t, NOTEBOOK).is_some(),
        "the ranks and the notebook in the table",
    );
    assert!(row(&screen, RANK0).unwrap().contains(" 0/2 "), "{screen}");
    assert!(row(&screen, RANK1).unwrap().contains(" 1/2 "), "{screen}");

    s.keys(&["J"]);
    let screen = s.wait_for(
        |t| t.contains("processes by job") && t.contains(&format!("job {DDP} (torchrun)")),
        "the job view",
    );
    let lines: Vec<&str> = screen.lines().collect();
    let at = |pred: &dyn Fn(&str) -> bool| lines.iter().position(|l| pred(l)).unwrap();
    let job = at(&|l| l.contains(&format!("job {DDP}")) && l.contains("2/2 ranks"));
    let r0 = at(&|l| row(l, RANK0).is_some());
    let r1 = at(&|l| row(l, RANK1).is_some());
    let nb = at(&|l| row(l, NOTEBOOK).is_some());
    assert!(job < r0 && r0 < r1 && r1 < nb, "{screen}");
    assert!(lines[job].contains("rank 0"), "{screen}");

    s.keys(&["/"]);
    s.keys(&["-l", "DDP-7F"]);
    s.keys(&["Enter"]);
    let screen = s.wait_for(
        |t| t.contains("filter: \"ddp-7f\"") && row(t, NOTEBOOK).is_none(),
        "the filter on the job id",
    );
    assert!(row(&screen, RANK0).is_some() && row(&screen, RANK1).is_some());
    assert!(screen.contains(&format!("job {DDP}")), "{screen}");

    s.resize(80, 24);
    // Redrawn at 80 columns: the top border closes at the 80th (a frame of 120 columns cut by
    // the narrower pane does not).
    let screen = s.wait_for(
        |t| {
            t.lines()
                .next()
                .is_some_and(|l| l.chars().count() == 80 && l.ends_with('┐'))
                && t.contains("2/2 ranks")
        },
        "the screen redrawn at 80x24",
    );
    // At 80 columns the job's line keeps its id, ranks and imbalance; the per-rank memory and
    // the GPUs give way.
    let line = screen
        .lines()
        .find(|l| l.contains(&format!("job {DDP}")))
        .unwrap();
    assert!(
        !line.contains(" = ") && !line.contains("on GPU") && line.contains("rank 0 "),
        "{screen}"
    );

    s.keys(&["q"]);
    s.assert_restored(0);
}
