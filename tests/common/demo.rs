//! The built-in demo as tests read it: its path, its alerts as the pipeline raises them (any
//! recording replayed whole through the pipeline), and the alert counts a drawn screen shows.
#![allow(dead_code, reason = "each test file uses the part it needs")]

use gpumon::model::{Alert, Config, Event, Machine};
use gpumon::pipeline;
use gpumon::source::replay::ReplaySource;

pub const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson");

/// The recording at `path` replayed whole through the pipeline, `interval_ms` apart.
pub fn replayed(path: &str, interval_ms: u64) -> Machine {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut source = ReplaySource::read(path, file).unwrap();
    let mut machine = Machine::new(Config::new(interval_ms, 600_000));
    pipeline::apply(
        &mut machine,
        Event::Started(source.header().machine.clone()),
    );
    for s in source.samples() {
        pipeline::apply(&mut machine, Event::Sample(s.unwrap()));
    }
    machine
}

/// The demo's first alert of `class`.
pub fn demo_alert(class: &str) -> Alert {
    let machine = replayed(DEMO, 1000);
    let found = machine.alerts.iter().find(|a| a.class == class);
    found
        .unwrap_or_else(|| panic!("the demo raises no {class}"))
        .clone()
}

/// The GPU line's "⚠ 7 alerts  1 info" as a number of alerts and info-level findings, and the
/// panel's "alerts (8)".
pub fn counts(screen: &str) -> (usize, usize) {
    let number = |pattern: &str| -> usize {
        regex_lite::Regex::new(pattern)
            .unwrap()
            .captures(screen)
            .map_or(0, |c| c[1].parse().unwrap())
    };
    let gpu = number(r"⚠ (\d+) alerts?") + number(r"  (\d+) info");
    (gpu, number(r"alerts \((\d+)\)"))
}
