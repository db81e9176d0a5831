//! The job view and the ranks on screen: the RANK column, `J` grouping the table by job (a line
//! a job above its ranks; keys, sort, filter by job id, focus and the mouse keep working), the
//! detail pane of a rank with its job's ranks side by side and NCCL's share of the memory outside
//! the pool, an untrusted rank and an environment gpumon could not read. States built only
//! through `State::update`, rendered into a `TestBackend` and compared with reviewed insta
//! snapshots.

#[path = "common/job_view.rs"]
mod jobs;

use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use gpumon::input::Action;
use gpumon::model::{Config, Event};
use gpumon::sample::{Reading, Sample};
use gpumon::screen::{Msg, State, TableLine};
use gpumon::source::scripted::build::machine;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

use jobs::{DDP, NOTEBOOK, RANK0, RANK1, SRUN, SRUN0};

/// Samples fed to each state: 40 s at one a second.
const TICKS: u64 = 40;
const SIZES: [(u16, u16); 3] = [(80, 24), (120, 40), (200, 50)];

fn config() -> Config {
    Config {
        color: true,
        ..Config::new(1000, 60_000)
    }
}

fn state_of(sample: impl Fn(u64) -> Sample) -> State {
    let mut state = State::new(config());
    state.update(Msg::from(Event::Started(machine())));
    for k in 0..TICKS {
        state.update(Msg::from(Event::Sample(sample(k))));
    }
    state
}

fn act(state: &mut State, actions: &[Action]) {
    for a in actions {
        state.update(Msg::Action(*a));
    }
}

fn draw(state: &State, (w, h): (u16, u16)) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    format!("{}", terminal.backend())
}

#[track_caller]
fn check(name: &str, state: &State, sizes: &[(u16, u16)]) {
    for &(w, h) in sizes {
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), draw(state, (w, h)));
    }
}

fn pids(state: &State) -> Vec<u32> {
    state.screen.rows.iter().map(|k| k.pid).collect()
}

fn selected(state: &State) -> Option<u32> {
    state.screen.selected.as_ref().map(|k| k.pid)
}

/// Moves the selection down to `pid`.
fn select(state: &mut State, pid: u32) {
    act(state, &[Action::Up; 32]);
    for _ in 0..state.screen.rows.len() {
        if selected(state) == Some(pid) {
            return;
        }
        act(state, &[Action::Down]);
    }
    panic!("pid {pid} not in the table: {:?}", pids(state));
}

/// A new filter (Esc clears the one in force, which the prompt would start from).
fn filter(state: &mut State, text: &str) {
    act(state, &[Action::Escape, Action::FilterPrompt]);
    for c in text.chars() {
        act(state, &[Action::PromptChar(c)]);
    }
    act(state, &[Action::PromptApply]);
}

#[test]
fn the_job_view_puts_the_ddp_job_on_one_line_above_its_ranks() {
    let mut s = state_of(jobs::ddp);
    act(&mut s, &[Action::ToggleJobs]);
    assert_eq!(pids(&s), [RANK0, RANK1, NOTEBOOK]);
    assert_eq!(s.screen.job_lines.len(), 1);
    assert_eq!(s.screen.table_line(0), Some(TableLine::Job(0)));
    assert_eq!(s.screen.table_line(3), Some(TableLine::Process(2)));
    check("jobs_ddp", &s, &SIZES);
    let screen = draw(&s, (120, 40));
    for part in [
        "processes by job",
        &format!("job {DDP} (torchrun)  2/2 ranks on GPU0,1"),
        "rank 0 1.6x the median, growing alone",
    ] {
        assert!(screen.contains(part), "{part}:\n{screen}");
    }
    // `J` again: the table as it was.
    act(&mut s, &[Action::ToggleJobs]);
    assert!(s.screen.job_lines.is_empty());
    let flat = draw(&s, (120, 40));
    assert!(
        !flat.contains("processes by job") && !flat.contains("2/2 ranks"),
        "{flat}"
    );
}

#[test]
fn eight_ranks_of_an_srun_job_and_the_ddp_job_each_under_their_line() {
    let mut s = state_of(jobs::eight);
    act(&mut s, &[Action::ToggleJobs]);
    // The srun job first (its rank 3 is the largest process), its ranks in rank order; then
    // the DDP job; then the notebook.
    let srun: Vec<u32> = (0..8).map(|r| SRUN0 + r).collect();
    let mut want = srun.clone();
    want.extend([RANK0, RANK1, NOTEBOOK]);
    assert_eq!(pids(&s), want);
    let firsts: Vec<usize> = s.screen.job_lines.iter().map(|j| j.first).collect();
    assert_eq!(firsts, [0, 8]);
    // The first rank selected, so the table starts at its job's line.
    select(&mut s, SRUN0);
    check("jobs_eight", &s, &SIZES);
    let screen = draw(&s, (200, 50));
    assert!(
        screen.contains(&format!(
            "job {SRUN} (srun)  8/8 ranks on GPU0-7  164G, 20G..24G a rank  rank 3 1.2x the median"
        )),
        "{screen}"
    );
}

#[test]
fn keys_skip_the_job_lines_and_sort_filter_focus_and_the_mouse_keep_working() {
    let mut s = state_of(jobs::eight);
    act(&mut s, &[Action::ToggleJobs]);
    select(&mut s, SRUN0 + 7);
    act(&mut s, &[Action::Down]);
    assert_eq!(
        selected(&s),
        Some(RANK0),
        "Down steps over the DDP job's line"
    );
    act(&mut s, &[Action::Up]);
    assert_eq!(selected(&s), Some(SRUN0 + 7));

    // Sorted by PID the DDP job comes first; each job's ranks stay in rank order.
    act(
        &mut s,
        &[Action::CycleSort, Action::CycleSort, Action::CycleSort],
    );
    assert_eq!(s.screen.sort.label(), "PID");
    assert_eq!(pids(&s)[..3], [RANK0, RANK1, SRUN0]);
    assert_eq!(*pids(&s).last().unwrap(), NOTEBOOK);

    // The filter matches a job id, any part of it, in any case.
    filter(&mut s, "SLURM:5222");
    assert_eq!(pids(&s), (0..8).map(|r| SRUN0 + r).collect::<Vec<_>>());
    filter(&mut s, "ddp-7F");
    assert_eq!(pids(&s), [RANK0, RANK1]);
    act(&mut s, &[Action::Escape]);

    // GPU1 only: each job's rank there under its line, then the notebook.
    act(&mut s, &[Action::FocusGpu(1)]);
    assert_eq!(pids(&s), [RANK1, SRUN0 + 1, NOTEBOOK]);
    assert_eq!(s.screen.job_lines.len(), 2);
    act(&mut s, &[Action::FocusNext; 7]);
    assert_eq!(s.screen.focus, None, "past GPU7: all GPUs");

    // A click on a job's line selects its first rank; on a rank, that rank.
    let area = Rect::new(0, 0, 200, 50);
    let table = gpumon::view::regions(area, &s).unwrap().table;
    let click = |state: &State, y: u16| {
        gpumon::view::mouse::action(
            area,
            state,
            MouseEvent {
                kind: MouseEventKind::Down(MouseButton::Left),
                column: 10,
                row: y,
                modifiers: KeyModifiers::NONE,
            },
        )
    };
    // Top border, header, the first job's line (DDP, sorted by PID), its ranks.
    let ddp_line = table.y + 2;
    assert_eq!(s.screen.table_line(0), Some(TableLine::Job(0)));
    assert_eq!(click(&s, ddp_line), Some(Action::SelectRow(0)));
    assert_eq!(click(&s, ddp_line + 2), Some(Action::SelectRow(1)));
    assert_eq!(click(&s, ddp_line + 3), Some(Action::SelectRow(2)));
    select(&mut s, NOTEBOOK);
    act(&mut s, &[Action::SelectRow(0)]);
    assert_eq!(selected(&s), Some(RANK0));
}

#[test]
fn a_rank_s_row_and_detail_pane_with_nccl_s_share_of_the_memory_outside_its_pool() {
    let mut s = state_of(jobs::ddp);
    select(&mut s, RANK0);
    check("jobs_rank_detail", &s, &[(120, 40), (200, 50)]);
    let screen = draw(&s, (200, 50));
    for part in [
        " RANK ",
        "  0/2 ",
        "  1/2 ",
        &format!("job {DDP} (torchrun)"),
        "rank 0/2  local rank 0  node 0",
        "its probe: torch rank 0/2, backend nccl",
        "outside it 1.4G, part of it NCCL's",
        "NCCL outside the pool, a reference measured elsewhere (2 H100s, torch 2.11, NVLS off),",
    ] {
        assert!(screen.contains(part), "{part}:\n{screen}");
    }
    // The notebook is no rank: an empty cell, no job lines in its detail.
    select(&mut s, NOTEBOOK);
    let screen = draw(&s, (200, 50));
    assert!(
        !screen.contains("job unknown") && !screen.contains("NCCL"),
        "{screen}"
    );
}

#[test]
fn an_untrusted_rank_says_question_mark_and_why() {
    let mut s = state_of(|k| {
        let mut sample = jobs::ddp(k);
        let r = sample.processes[1].rank.as_mut().unwrap();
        r.rank = None;
        r.inside = None;
        r.problem = Some("RANK 2 is not below WORLD_SIZE 2".into());
        sample
    });
    select(&mut s, RANK1);
    act(&mut s, &[Action::ToggleJobs]);
    check("jobs_untrusted", &s, &[(120, 40)]);
    let screen = draw(&s, (120, 40));
    for part in [
        "  ?/2 ",
        "rank ?/2  local rank 1",
        "rank unknown: RANK 2 is not below WORLD_SIZE 2",
        "⚠ 1 problem",
    ] {
        assert!(screen.contains(part), "{part}:\n{screen}");
    }
}

#[test]
fn an_environment_gpumon_could_not_read_leaves_the_job_unknown() {
    let mut s = state_of(|k| {
        let mut sample = jobs::ddp(k);
        let mut other = jobs::notebook();
        other.pid = 4100;
        other.device_memory = Reading::Value(5 << 30);
        other.user = Reading::Value("dmitri".into());
        other.settings =
            Reading::na("unknown: initial environment not readable (permission denied)");
        sample.processes.push(other);
        sample
    });
    select(&mut s, 4100);
    check("jobs_unreadable", &s, &[(120, 40)]);
    let screen = draw(&s, (120, 40));
    let row = screen.lines().find(|l| l.contains(" 4100 ")).unwrap();
    assert!(row.contains("    ? "), "{row}");
    assert!(
        screen.contains("job unknown: initial environment not readable"),
        "{screen}"
    );
}

#[test]
fn two_processes_claiming_one_rank_are_both_untrusted_and_the_job_says_so() {
    let s = state_of(|k| {
        let mut sample = jobs::ddp(k);
        let r = sample.processes[1].rank.as_mut().unwrap();
        r.rank = Some(0);
        sample
    });
    let screen = draw(&s, (200, 50));
    for pid in [RANK0, RANK1] {
        let row = screen
            .lines()
            .find(|l| l.contains(&format!(" {pid} ")) && l.contains("train_gpt2"))
            .unwrap();
        assert!(row.contains("  ?/2 "), "{row}");
    }
    assert!(
        screen.contains(&format!(
            "in the job: pid {RANK0} and pid {RANK1} all say rank 0"
        )),
        "{screen}"
    );
}

#[test]
fn a_rank_also_on_another_gpu_keeps_its_own_gpu_first_and_names_the_other() {
    // Rank 1 loaded a checkpoint without `map_location`: a second context on GPU0.
    let mut s = state_of(|k| {
        let mut sample = jobs::ddp(k);
        let mut extra = jobs::ddp_rank(1, k);
        extra.gpu_uuid.clone_from(&sample.gpus[0].uuid);
        extra.device_memory = Reading::Value(774 << 20);
        extra.pool = Reading::na("not probed");
        sample.processes.push(extra);
        sample
    });
    act(&mut s, &[Action::ToggleJobs]);
    let rows: Vec<(u32, String)> = s
        .screen
        .rows
        .iter()
        .map(|k| (k.pid, k.gpu_uuid.clone()))
        .collect();
    let uuid = |i: usize| s.machine().gpus_in_order()[i].sample.uuid.clone();
    assert_eq!(
        rows,
        [
            (RANK0, uuid(0)),
            (RANK1, uuid(1)),
            (RANK1, uuid(0)),
            (NOTEBOOK, uuid(1))
        ]
    );
    select(&mut s, RANK1);
    let screen = draw(&s, (200, 50));
    assert!(screen.contains("also on GPU0 774M"), "{screen}");
}
