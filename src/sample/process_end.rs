//! What a probe says of its process's end and of where its main thread waits
//! (docs/probe-format.md, `end` and `where`): the end as the interpreter saw it (a normal exit,
//! an uncaught exception), and the main thread's innermost frames once it has not moved for a
//! while or gpumon asked. Both are carried in a sample's [`ProbeNews`](super::ProbeNews); every
//! string came from someone else's process and is made printable when it is read.

use serde::{Deserialize, Deserializer, Serialize};

use super::printable::{MAX_FILE, MAX_FUNCTION, printable, short_label};

/// Longest exception type and message kept (the probe cuts them too).
pub const MAX_TYPE: usize = 128;
pub const MAX_MESSAGE: usize = 300;
/// Frames of a [`MainWhere`] kept, innermost first.
pub const MAX_FRAMES: usize = 8;

/// How the interpreter ended, as its probe recorded it in its last file. A process killed by a
/// signal, ended by `os._exit` or crashed has no end record: its absence is the evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessEnd {
    pub how: EndHow,
    /// The exit status: 1 after an uncaught exception; `None` where the probe cannot know it
    /// (a normal end or `sys.exit(n)`: Python keeps the status out of reach of `atexit`).
    #[serde(default)]
    pub code: Option<i64>,
    /// The uncaught exception (`how` is `exception`).
    #[serde(default)]
    pub exception: Option<EndException>,
    /// When the probe recorded it, Unix ms.
    pub at_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndHow {
    /// The interpreter shut down (the script's end, `sys.exit`, `SystemExit`): `atexit` ran.
    Exit,
    /// An exception reached the top of the main thread (`sys.excepthook` was called for it).
    Exception,
}

/// An uncaught exception: its module-qualified type (`torch.OutOfMemoryError`,
/// `jax.errors.JaxRuntimeError`, `RuntimeError`) and the first line of its message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndException {
    #[serde(rename = "type", deserialize_with = "printable_type")]
    pub kind: String,
    #[serde(deserialize_with = "printable_message")]
    pub message: String,
}

impl ProcessEnd {
    /// Whether it ended by an uncaught out-of-memory error, in its framework's type or words
    /// (`torch.OutOfMemoryError`, `RESOURCE_EXHAUSTED`, `cupy…OutOfMemoryError`).
    pub fn raised_oom(&self) -> bool {
        self.how == EndHow::Exception
            && self.exception.as_ref().is_some_and(|x| {
                x.kind.ends_with("OutOfMemoryError")
                    || x.message.contains("RESOURCE_EXHAUSTED")
                    || x.message.to_lowercase().contains("out of memory")
            })
    }

    /// "exited", "exited with status 3", "raised torch.OutOfMemoryError: CUDA out of memory…".
    pub fn words(&self) -> String {
        match (&self.how, &self.exception, self.code) {
            (EndHow::Exception, Some(e), _) if e.message.is_empty() => {
                format!("raised {}", e.kind)
            }
            (EndHow::Exception, Some(e), _) => format!("raised {}: {}", e.kind, e.message),
            (EndHow::Exception, None, _) => "raised an exception".into(),
            (EndHow::Exit, _, Some(code)) => format!("exited with status {code}"),
            (EndHow::Exit, _, None) => "exited".into(),
        }
    }
}

/// Where the main thread is, read from its own frames: the innermost `MAX_FRAMES` frames, since
/// when they have not moved, and whether gpumon asked for it (`where` request) or the probe
/// reported it on its own (unmoved for `GPUMON_PROBE_STILL_S`, default 10 s).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MainWhere {
    /// Innermost first; at most `MAX_FRAMES` (more are cut when read).
    #[serde(deserialize_with = "at_most_frames")]
    pub frames: Vec<Frame>,
    /// When the main thread arrived where it is (its stack's top frames last changed), Unix ms.
    pub since_ms: u64,
    /// When it was read, Unix ms.
    pub at_ms: u64,
    /// Read because gpumon asked (`where`), not because it stood still.
    pub asked: bool,
}

/// One frame of the main thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    #[serde(deserialize_with = "printable_file")]
    pub file: String,
    pub line: u64,
    #[serde(deserialize_with = "printable_function")]
    pub function: String,
}

impl Frame {
    /// `data/loader.py:88 next_batch`.
    pub fn label(&self) -> String {
        short_label(&self.file, self.line, &self.function)
    }
}

impl MainWhere {
    /// How long the main thread had stood where it is when it was read, ms.
    pub fn still_ms(&self) -> u64 {
        self.at_ms.saturating_sub(self.since_ms)
    }

    /// The innermost frame's label, when there is a frame.
    pub fn label(&self) -> Option<String> {
        self.frames.first().map(Frame::label)
    }
}

/// What a sample says of a process's main thread, when it changed: where it stands now (a new
/// place, or newly asked for), or that the probe no longer reports it (it moved again, or an
/// answer to `where` lapsed) — the model then clears it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhereNews {
    At(MainWhere),
    /// The first probe file without it, at this file's time (Unix ms).
    Moved {
        at_ms: u64,
    },
}

fn printable_type<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(printable(&String::deserialize(d)?, MAX_TYPE))
}

fn printable_message<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(printable(&String::deserialize(d)?, MAX_MESSAGE))
}

fn printable_file<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(printable(&String::deserialize(d)?, MAX_FILE))
}

fn printable_function<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(printable(&String::deserialize(d)?, MAX_FUNCTION))
}

fn at_most_frames<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Frame>, D::Error> {
    let mut frames = Vec::<Frame>::deserialize(d)?;
    frames.truncate(MAX_FRAMES);
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::ProbeNews;

    #[test]
    fn hostile_strings_are_escaped_and_cut_and_frames_bounded() {
        let long = "y".repeat(50_000);
        let end: ProcessEnd = serde_json::from_str(&format!(
            r#"{{"how":"exception","code":1,"exception":{{"type":"torch.\u001b[2JOutOfMemoryError","message":"{long}\r\n"}},"at_ms":5}}"#
        ))
        .unwrap();
        let e = end.exception.as_ref().unwrap();
        assert_eq!(e.kind, "torch.\\u{1b}[2JOutOfMemoryError");
        assert_eq!(e.message.chars().count(), MAX_MESSAGE);
        let frame = r#"{"file":"/w/\u202et.py","line":3,"function":"f\u0007"}"#;
        let frames = vec![frame; 20].join(",");
        let w: MainWhere = serde_json::from_str(&format!(
            r#"{{"frames":[{frames}],"since_ms":1,"at_ms":11001,"asked":false}}"#
        ))
        .unwrap();
        assert_eq!(w.frames.len(), MAX_FRAMES);
        assert_eq!(w.frames[0].file, "/w/\\u{202e}t.py");
        assert_eq!(w.frames[0].function, "f\\u{7}");
        assert_eq!(w.still_ms(), 11_000);
    }

    #[test]
    fn wrong_types_are_refused() {
        for bad in [
            r#"{"how":"killed","code":null,"exception":null,"at_ms":1}"#,
            r#"{"how":"exit","code":"3","exception":null,"at_ms":1}"#,
            r#"{"how":"exit","code":null,"exception":{"type":3,"message":""},"at_ms":1}"#,
            r#"{"how":"exit","code":null,"exception":null,"at_ms":-1}"#,
        ] {
            assert!(serde_json::from_str::<ProcessEnd>(bad).is_err(), "{bad}");
        }
        for bad in [
            r#"{"frames":{"file":"a"},"since_ms":1,"at_ms":1,"asked":false}"#,
            r#"{"frames":[{"file":"a","line":"1","function":"f"}],"since_ms":1,"at_ms":1,"asked":false}"#,
            r#"{"frames":[],"since_ms":1,"at_ms":1,"asked":"yes"}"#,
        ] {
            assert!(serde_json::from_str::<MainWhere>(bad).is_err(), "{bad}");
        }
    }

    /// News with an end and a place round-trips as a recording writes it; news written before
    /// either existed still reads.
    #[test]
    fn news_round_trips_and_old_news_reads() {
        let news = ProbeNews {
            pid: 7,
            start_time: 9,
            answer: None,
            recording: None,
            map: None,
            end: Some(ProcessEnd {
                how: EndHow::Exit,
                code: None,
                exception: None,
                at_ms: 3,
            }),
            main_where: Some(WhereNews::Moved { at_ms: 4 }),
        };
        let text = serde_json::to_string(&news).unwrap();
        assert!(text.contains(r#""where":{"moved":{"at_ms":4}}"#), "{text}");
        assert_eq!(serde_json::from_str::<ProbeNews>(&text).unwrap(), news);
        let old: ProbeNews = serde_json::from_str(r#"{"pid":7,"start_time":9}"#).unwrap();
        assert_eq!((old.end, old.main_where), (None, None));
        assert_eq!(news.end.unwrap().words(), "exited");
    }
}
