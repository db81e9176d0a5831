//! Several machines' data side by side: each built from its own scripted source through the
//! pipeline, one screen state pointing at one of them, and a render that reads only those inputs.

use gpumon::model::{Config, Event, Machine};
use gpumon::pipeline;
use gpumon::screen::State;
use gpumon::source::scripted::ScriptedSource;
use gpumon::source::scripted::build::{GIB, gpu, machine, process};
use gpumon::source::{Framework, MachineInfo, Sample, Source};
use gpumon::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const T0: u64 = 1_763_812_900_000;

fn host(name: &str) -> MachineInfo {
    MachineInfo {
        host: name.into(),
        ..machine()
    }
}

/// Ten seconds of one process holding `gb` GiB on one GPU.
fn source(name: &str, pid: u32, gb: u64, command: &str) -> ScriptedSource {
    let g = gpu(0, 80 * GIB, gb * GIB, GIB / 2);
    let samples = (0..10).map(|k| {
        Ok(Sample {
            at_ms: T0 + k * 1000,
            gpus: vec![g.clone()],
            processes: vec![process(pid, &g, gb * GIB, Framework::Pytorch, command)],
            ..Default::default()
        })
    });
    ScriptedSource::new(host(name), samples)
}

/// A machine's data as the pipeline builds it from a source, with no screen involved.
fn machine_of(mut source: ScriptedSource) -> Machine {
    let mut m = Machine::new(Config::new(1000, 60_000));
    pipeline::apply(&mut m, Event::Started(source.machine().unwrap()));
    while let Ok(s) = source.sample() {
        pipeline::apply(&mut m, Event::Sample(s));
    }
    m
}

fn screen_text(state: &State) -> String {
    let mut terminal = Terminal::new(TestBackend::new(100, 24)).unwrap();
    terminal.draw(|f| view::render(f, state)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    buffer
        .content
        .chunks(usize::from(buffer.area.width))
        .map(|row| row.iter().map(|c| c.symbol()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn two_machines_from_two_sources_and_a_screen_on_the_second() {
    let a = machine_of(source("gpu-07", 4312, 60, "python train.py"));
    let b = machine_of(source("gpu-12", 777, 7, "python serve.py"));
    assert_eq!(a.processes.len(), 1);
    assert_eq!(b.processes.len(), 1);
    let (a_copy, b_copy) = (a.clone(), b.clone());

    let mut state = State::with_machines(Config::new(1000, 60_000), vec![a, b]);
    state.show_machine(1);
    let text = screen_text(&state);
    assert!(text.contains("gpu-12"), "{text}");
    assert!(text.contains("serve.py"), "{text}");
    assert!(!text.contains("train.py"), "{text}");
    assert!(!text.contains("gpu-07"), "{text}");
    assert_eq!(state.screen.rows.len(), 1);
    assert_eq!(state.screen.rows[0].pid, 777);

    // The render reads only its inputs: the same state draws the same screen, and the machines'
    // data is what the pipeline built, untouched by the screen.
    assert_eq!(screen_text(&state), text);
    assert_eq!(
        state.machines[0].processes.keys().collect::<Vec<_>>(),
        a_copy.processes.keys().collect::<Vec<_>>()
    );
    assert_eq!(state.machines[1].alerts, b_copy.alerts);
    assert_eq!(state.machines[1].last_sample_ms, Some(T0 + 9000));

    state.show_machine(0);
    let first = screen_text(&state);
    assert!(
        first.contains("gpu-07") && first.contains("train.py"),
        "{first}"
    );
    state.show_machine(5);
    assert_eq!(
        state.screen.host, 0,
        "a machine that is not there is not shown"
    );
}
