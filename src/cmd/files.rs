//! `snapshot` (of the GPUs now, or of a recording's end); the other file subcommands are
//! `explain` (`explain.rs`) and `diff` (`diff.rs`, whose sides may also be servers).

use std::io::BufRead;
use std::path::Path;
use std::process::ExitCode;

use super::{Fail, HINT, print_out, sources};
use crate::cli::Format;
use crate::model::{Config, Event, Machine};
use crate::recording::{RecordingError, cut_notice};
use crate::source::replay::ReplaySource;
use crate::{pipeline, snapshot};

/// The history window of the machines these commands build (the screen's default).
const HISTORY_MS: u64 = 600_000;

/// Replays a recording through the pipeline, one sample at a time (memory holds the machine,
/// never the recording), calling `each` after every sample (`true`) and once more after its end
/// (`false`: what waited for more samples judged then); the caller words the errors. A
/// recording cut off is replayed up to its last whole line, and stderr says where it was cut.
pub(super) fn replay_recording<R: BufRead>(
    source: &mut ReplaySource<R>,
    mut each: impl FnMut(&Machine, bool),
) -> Result<Machine, RecordingError> {
    let mut machine = Machine::new(Config::new(source.header().interval_ms, HISTORY_MS));
    pipeline::apply(
        &mut machine,
        Event::Started(source.header().machine.clone()),
    );
    while let Some(s) = source.next_sample()? {
        pipeline::apply(&mut machine, Event::Sample(s));
        each(&machine, true);
    }
    // The recording is over: what waited for more is judged now (an OOM line waiting for its
    // writer's count, seconds before the recording ended, was never judged otherwise).
    pipeline::apply(&mut machine, Event::SourceEnded);
    each(&machine, false);
    if let Some(line) = source.cut_off() {
        crate::say!("gpumon: {}", cut_notice(source.name(), line));
    }
    Ok(machine)
}

pub(super) fn take_snapshot(
    output: Option<&Path>,
    format: Format,
    replay: Option<&Path>,
) -> Result<ExitCode, Fail> {
    let machine = match replay {
        Some(path) => {
            let mut source = sources::open_replay(path)?.source;
            replay_recording(&mut source, |_, _| {}).map_err(|e| Fail::usage(e.to_string()))?
        }
        None => {
            let start = |e: crate::source::SourceError| Fail::usage(format!("{e}\n{HINT}"));
            let mut source = sources::live_factory(Vec::new())().map_err(start)?;
            let mut machine = Machine::new(Config::new(1000, HISTORY_MS));
            pipeline::apply(
                &mut machine,
                Event::Started(source.machine().map_err(start)?),
            );
            let sample = source.sample().map_err(Fail::runtime)?;
            pipeline::apply(&mut machine, Event::Sample(sample));
            machine
        }
    };
    let now = machine.last_sample_ms.unwrap_or(machine.now_ms);
    let snap = snapshot::Snapshot::of_machine(&machine, now);
    let text = match format {
        Format::Json => String::from_utf8_lossy(&snap.to_json()).into_owned(),
        Format::Text => snapshot::text::render(&snap),
    };
    match output {
        None => print_out(&text, format),
        Some(p) if p == Path::new("-") => print_out(&text, format),
        Some(p) => {
            // Escaped in a file too: it is read with `cat` as often as by a program.
            let text = crate::format::escape(&text, format);
            snapshot::write_atomic(p, text.as_bytes()).map_err(Fail::runtime)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
