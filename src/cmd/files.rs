//! `snapshot` (of the GPUs now, or of a recording's end); the other file subcommands are
//! `explain` (`explain.rs`) and `diff` (`diff.rs`, whose sides may also be servers).

use std::path::Path;
use std::process::ExitCode;

use super::{Fail, HINT, print_out, sources};
use crate::cli::Format;
use crate::model::{Config, Event, Machine};
use crate::{pipeline, snapshot};

pub(super) fn take_snapshot(
    output: Option<&Path>,
    format: Format,
    replay: Option<&Path>,
) -> Result<ExitCode, Fail> {
    let config = |interval_ms| Config::new(interval_ms, 600_000);
    let machine = match replay {
        Some(path) => {
            // One sample at a time: memory holds the machine, never the recording.
            let mut source = sources::open_replay(path)?;
            let mut machine = Machine::new(config(source.header().interval_ms));
            pipeline::apply(
                &mut machine,
                Event::Started(source.header().machine.clone()),
            );
            for s in source.samples() {
                let s = s.map_err(|e| Fail::usage(e.to_string()))?;
                pipeline::apply(&mut machine, Event::Sample(s));
            }
            machine
        }
        None => {
            let start = |e: crate::source::SourceError| Fail::usage(format!("{e}\n{HINT}"));
            let mut source = sources::live_factory(Vec::new())().map_err(start)?;
            let mut machine = Machine::new(config(1000));
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
    let bytes = match format {
        Format::Json => snap.to_json(),
        Format::Text => snapshot::text::render(&snap).into_bytes(),
    };
    match output {
        None => print_out(&String::from_utf8_lossy(&bytes)),
        Some(p) if p == Path::new("-") => print_out(&String::from_utf8_lossy(&bytes)),
        Some(p) => {
            snapshot::write_atomic(p, &bytes).map_err(Fail::runtime)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
