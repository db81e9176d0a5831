//! `gpumon explain LOG…`: every allocation failure in whole log files, classified from the
//! message's own numbers (no state), every memory fault that is not an OOM joined with the
//! kernel's Xid line for it where the files given hold one (`kernel.rs`), those Xid lines in
//! words, and, when the logs carry ranks or a distributed job's events, the job's failure: the
//! rank that failed first and the ranks' failures that followed (`jobs.rs`), as text for people
//! (80 columns) or JSON. What a recording adds (the alerts its replay raised) is rendered by the
//! caller and appended as [`Extra`].

use std::io::Read;

use serde::Serialize;

use crate::analysis::classify::Confidence;
use crate::logs::lines::LineSplitter;
use crate::oom::OomParser;
use crate::oom::failure::{Allocator, Dialect, Failure, Numbers};
use alone::explained;
use jobs::JobExplained;
use kernel::XidLine;

mod alone;
mod input;
mod jobs;
mod kernel;

pub use input::InputRead;

pub use crate::format::Format;

const WIDTH: usize = 80;

/// One explained failure (the JSON shape).
#[derive(Debug, Serialize)]
struct Explained {
    log: String,
    line: u64,
    source: Option<Dialect>,
    allocator: Option<Allocator>,
    /// An OOM's class (`fragmentation`, …) or a fault's (`illegal-address`, …).
    class: String,
    confidence: Confidence,
    numbers: Numbers,
    evidence: Vec<String>,
    remedy: String,
    message: String,
    /// The kernel's Xid line a memory fault is joined with.
    #[serde(skip_serializing_if = "Option::is_none")]
    xid: Option<XidLine>,
    /// The rank its line names (`[rankN]:`), and the local rank (`[defaultN]:`).
    #[serde(skip_serializing_if = "Option::is_none")]
    rank: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    local_rank: Option<u32>,
}

#[derive(Serialize)]
struct Report<'a> {
    schema: &'static str,
    logs: Vec<String>,
    failures: &'a [Explained],
    /// The kernel's Xid lines in the files given; absent when none.
    #[serde(skip_serializing_if = "<[XidLine]>::is_empty")]
    xids: &'a [XidLine],
    /// A distributed job's failure, when the logs carry ranks; absent when they do not.
    #[serde(skip_serializing_if = "<[JobExplained]>::is_empty")]
    job_failures: &'a [JobExplained],
    /// Only there when recordings were given, so the report without them is unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    recordings: Option<serde_json::Value>,
    /// The files that could not be read, and why; absent when every one was.
    #[serde(skip_serializing_if = "<[Unreadable]>::is_empty")]
    unreadable: &'a [Unreadable],
    /// How far each log was read: whole, cut off (and where), empty.
    inputs: &'a [InputRead],
}

/// A file given that could not be read (the report goes on with the others).
#[derive(Debug, Serialize)]
pub struct Unreadable {
    pub file: String,
    pub error: String,
}

/// What the report adds after the logs' failures (the recordings' alerts): its JSON, the
/// report's `recordings` field, and its text, printed after the logs' (empty: nothing).
pub struct Extra {
    pub json: serde_json::Value,
    pub text: String,
}

/// The logs' failures, classified: each file read by [`read_log`], then all of them together
/// ([`Logs::new`], so a fault is joined with an Xid of another file), then [`render`]ed.
pub struct Logs {
    paths: Vec<String>,
    inputs: Vec<InputRead>,
    failures: Vec<Explained>,
    xids: Vec<XidLine>,
    unreadable: Vec<Unreadable>,
    jobs: Vec<JobExplained>,
}

/// One log read whole: its failures, in order, its kernel Xid lines, and how far it was read.
pub struct LogFile {
    name: String,
    failures: Vec<Failure>,
    xids: Vec<XidLine>,
    pub read: InputRead,
}

impl Logs {
    /// The failures of every file, classified; `unreadable` are the files that could not be
    /// read, named in the report.
    pub fn new(files: Vec<LogFile>, unreadable: Vec<Unreadable>) -> Logs {
        let paths = files.iter().map(|f| f.name.clone()).collect();
        let inputs = files.iter().map(|f| f.read.clone()).collect();
        let (mut failures, mut xids) = (Vec::new(), Vec::new());
        for f in files {
            failures.extend(f.failures);
            xids.extend(f.xids);
        }
        // The job's section reads every event, its failures' verdicts beside them.
        let events = failures.clone();
        let failures = explained(failures, &xids);
        let jobs = jobs::sections(&events, &failures);
        Logs {
            failures,
            paths,
            inputs,
            xids,
            unreadable,
            jobs,
        }
    }
}

/// The report on `logs`, followed by `extra`; without logs, the text is `extra`'s alone.
pub fn render(logs: &Logs, format: Format, extra: Option<Extra>) -> String {
    match format {
        Format::Json => {
            let report = Report {
                schema: "gpumon.explain/1",
                logs: logs.paths.clone(),
                failures: &logs.failures,
                xids: &logs.xids,
                job_failures: &logs.jobs,
                recordings: extra.map(|e| e.json),
                unreadable: &logs.unreadable,
                inputs: &logs.inputs,
            };
            serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
        }
        Format::Text => match extra {
            None => text(logs),
            Some(e) if logs.paths.is_empty() => e.text,
            Some(e) => format!("{}\n{}", text(logs), e.text),
        },
    }
}

/// Reads the log `name` whole from `input`: its failures, in order, and its kernel Xid lines. A
/// stream cut off (a compressed log whose end is missing) is read up to its last whole line.
pub fn read_log(name: &str, mut input: impl Read) -> std::io::Result<LogFile> {
    let log = name.to_string();
    let mut cut_at = None;
    let mut content = false;
    let mut lines = LineSplitter::default();
    let mut parser = OomParser::new();
    let (mut found, mut xids) = (Vec::new(), Vec::new());
    let mut feed = |no: u64, l: &[u8]| {
        content |= !l.trim_ascii().is_empty();
        parser.feed(no, l, &mut found);
        if l.windows(4).any(|w| w == b"NVRM")
            && let Some(x) = crate::oom::xid::parse_kernel_line(&crate::oom::clean(l))
        {
            let x = XidLine::new(&log, no, x);
            if let Some(prev) = xids
                .last_mut()
                .filter(|p: &&mut XidLine| p.continued_by(&x))
            {
                prev.absorb(x);
            } else {
                xids.push(x);
            }
        }
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                cut_at = Some(lines.lines + 1);
                break;
            }
            Err(e) => return Err(e),
        };
        lines.push(&buf[..n], &mut feed);
    }
    // A cut stream's last line is not whole: it is left out.
    let ended = lines.lines;
    if cut_at.is_none() {
        lines.finish(&mut feed);
    }
    let unended_line = (lines.lines > ended).then_some(lines.lines);
    parser.flush(&mut found);
    let failures = found
        .into_iter()
        .map(|p| p.into_failure(0, &log, None))
        .collect();
    Ok(LogFile {
        read: InputRead {
            file: log.clone(),
            whole: cut_at.is_none(),
            lines: lines.lines,
            empty: !content,
            cut_at_line: cut_at,
            unended_line,
        },
        name: log,
        failures,
        xids,
    })
}

fn text(logs: &Logs) -> String {
    let (all, xids) = (&logs.failures, &logs.xids);
    // What was not read whole, or was empty, comes first: the verdict below is on the rest.
    let mut out = String::new();
    for note in logs.inputs.iter().filter_map(InputRead::note) {
        out.push_str(&wrap(&note, "", "  "));
    }
    if all.is_empty() && xids.is_empty() && logs.jobs.is_empty() {
        let read = logs.inputs.iter().filter(|i| !i.empty);
        let whole = logs.inputs.iter().all(|i| i.note().is_none());
        if whole {
            out.push_str("no allocation failures found\n");
        } else if read.count() > 0 {
            out.push_str("no allocation failures found in what was read\n");
        }
        return out;
    }
    if !out.is_empty() && (!all.is_empty() || !xids.is_empty()) {
        out.push('\n');
    }
    for (i, e) in all.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let who = e.source.map_or("GPU", Dialect::label);
        out.push_str(&wrap(
            &format!(
                "{}:{}: {who} {} ({})",
                e.log,
                e.line,
                e.class.as_str(),
                e.confidence.as_str()
            ),
            "",
            "  ",
        ));
        out.push_str(&wrap(quote(&e.message), "  > ", "    "));
        for ev in &e.evidence {
            out.push_str(&wrap(ev, "  - ", "    "));
        }
        out.push_str(&wrap(&e.remedy, "  remedy: ", "    "));
    }
    for (i, x) in xids.iter().enumerate() {
        if i > 0 || !all.is_empty() {
            out.push('\n');
        }
        out.push_str(&wrap(
            &format!("{}:{}: {}", x.log, x.line, x.title()),
            "",
            "  ",
        ));
        for ev in x.meaning.iter().copied().chain(x.detail.as_deref()) {
            out.push_str(&wrap(ev, "  - ", "    "));
        }
        out.push_str(&wrap(&x.remedy, "  remedy: ", "    "));
    }
    for job in &logs.jobs {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&jobs::text(job, logs.paths.len(), wrap));
    }
    let faults = all
        .iter()
        .filter(|e| FAULTS.contains(&e.class.as_str()))
        .count();
    let mut count = format!("\n{} allocation failure(s)", all.len() - faults);
    if faults > 0 {
        count.push_str(&format!(", {faults} memory fault(s)"));
    }
    if !xids.is_empty() {
        count.push_str(&format!(", {} Xid(s) in the kernel log", xids.len()));
    }
    for job in &logs.jobs {
        count.push_str(&match job.root {
            Some(_) => format!(
                ", 1 job failure ({} consequence(s))",
                job.consequences.len()
            ),
            None => format!(
                ", 1 job failure (no root cause, {} rank(s))",
                job.consequences.len()
            ),
        });
    }
    out.push_str(&count);
    out.push('\n');
    out
}

/// The classes of memory faults that are not OOMs.
const FAULTS: [&str; 5] = crate::analysis::gpu_events::FAULT_CLASSES;

/// Advice frameworks append to their messages; the quote stops before it (the remedy says
/// what applies to this failure).
const ADVICE: [&str; 3] = [
    "If reserved but unallocated memory is large",
    "If reserved memory is >> allocated memory",
    "See documentation for Memory Management",
];

/// The message without the framework's generic advice.
fn quote(message: &str) -> &str {
    ADVICE
        .iter()
        .filter_map(|a| message.find(a))
        .min()
        .map_or(message, |i| message[..i].trim_end())
}

/// Word-wraps `s` to [`WIDTH`] columns; a word longer than a line is cut.
pub fn wrap(s: &str, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in s.split_whitespace() {
        let len = line.chars().count();
        if !empty && len + 1 + word.chars().count() > WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        let room = WIDTH.saturating_sub(line.chars().count()).max(1);
        let mut w: String = word.chars().take(room).collect();
        if w.chars().count() < word.chars().count() {
            w.pop();
            w.push('…');
        }
        line.push_str(&w);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests;
