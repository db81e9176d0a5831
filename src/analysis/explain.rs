//! `gpumon explain LOG…`: every allocation failure in whole log files, classified from the
//! message's own numbers (no state), as text for people (80 columns) or JSON. What a recording
//! adds (the alerts its replay raised) is rendered by the caller and appended as [`Extra`].

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::analysis::classify::{Class, Confidence, classify};
use crate::analysis::context::Context;
use crate::analysis::remedy::remedy;
use crate::logs::lines::LineSplitter;
use crate::oom::OomParser;
use crate::oom::failure::{Allocator, Dialect, Failure, Numbers};

pub use crate::format::Format;

const WIDTH: usize = 80;

#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
}

/// One explained failure (the JSON shape).
#[derive(Debug, Serialize)]
struct Explained {
    log: String,
    line: u64,
    source: Option<Dialect>,
    allocator: Option<Allocator>,
    class: Class,
    confidence: Confidence,
    numbers: Numbers,
    evidence: Vec<String>,
    remedy: String,
    message: String,
}

#[derive(Serialize)]
struct Report<'a> {
    schema: &'static str,
    logs: Vec<String>,
    failures: &'a [Explained],
    /// Only there when recordings were given, so the report without them is unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    recordings: Option<serde_json::Value>,
}

/// What the report adds after the logs' failures (the recordings' alerts): its JSON, the
/// report's `recordings` field, and its text, printed after the logs' (empty: nothing).
pub struct Extra {
    pub json: serde_json::Value,
    pub text: String,
}

/// Reads every file whole and explains each failure in it; an unreadable file is an error.
pub fn explain(paths: &[PathBuf], format: Format) -> Result<String, ExplainError> {
    Ok(render(&read_logs(paths)?, format, None))
}

/// The logs' failures, classified: read once by [`read_logs`], then [`render`]ed.
pub struct Logs {
    paths: Vec<String>,
    failures: Vec<Explained>,
}

/// Reads every file whole and classifies each failure in it; an unreadable file is an error.
pub fn read_logs(paths: &[PathBuf]) -> Result<Logs, ExplainError> {
    let mut all = Vec::new();
    for p in paths {
        let name = p.display().to_string();
        let failures = read(p).map_err(|source| ExplainError::Read {
            path: name.clone(),
            source,
        })?;
        all.extend(failures.into_iter().map(|f| {
            let ctx = Context::default();
            let v = classify(&f, &ctx);
            Explained {
                remedy: remedy(&f, &v, &ctx),
                log: f.log,
                line: f.line,
                source: f.source,
                allocator: f.allocator,
                class: v.class,
                confidence: v.confidence,
                numbers: f.numbers,
                evidence: v.evidence,
                message: f.message,
            }
        }));
    }
    Ok(Logs {
        paths: paths.iter().map(|p| p.display().to_string()).collect(),
        failures: all,
    })
}

/// The report on `logs`, followed by `extra`; without logs, the text is `extra`'s alone.
pub fn render(logs: &Logs, format: Format, extra: Option<Extra>) -> String {
    match format {
        Format::Json => {
            let report = Report {
                schema: "gpumon.explain/1",
                logs: logs.paths.clone(),
                failures: &logs.failures,
                recordings: extra.map(|e| e.json),
            };
            serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
        }
        Format::Text => match extra {
            None => text(&logs.failures),
            Some(e) if logs.paths.is_empty() => e.text,
            Some(e) => format!("{}\n{}", text(&logs.failures), e.text),
        },
    }
}

/// The failures of one file, in order.
fn read(path: &Path) -> std::io::Result<Vec<Failure>> {
    let mut file = File::open(path)?;
    let log = path.display().to_string();
    let mut lines = LineSplitter::default();
    let mut parser = OomParser::new();
    let mut found = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        lines.push(&buf[..n], |no, l| parser.feed(no, l, &mut found));
    }
    lines.finish(|no, l| parser.feed(no, l, &mut found));
    parser.flush(&mut found);
    Ok(found
        .into_iter()
        .map(|p| p.into_failure(0, &log, None))
        .collect())
}

fn text(all: &[Explained]) -> String {
    if all.is_empty() {
        return "no allocation failures found\n".into();
    }
    let mut out = String::new();
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
    out.push_str(&format!("\n{} allocation failure(s)\n", all.len()));
    out
}

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
