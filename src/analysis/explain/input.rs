//! How far `explain` read each log (whole, cut off and where, empty, its last line unended): in
//! the JSON report's `inputs`, and as a note before the text's verdict, so that a cut or empty
//! input never reads as an all-clear.

use serde::Serialize;

/// How much of one log was read: a report on a cut or empty input is no all-clear.
#[derive(Debug, Clone, Serialize)]
pub struct InputRead {
    pub file: String,
    /// Read to its end (a compressed stream that ends mid-frame was not).
    pub whole: bool,
    /// The lines read (a cut stream's last, partial line is not one).
    pub lines: u64,
    /// Nothing but white space (or NUL holes) in it.
    pub empty: bool,
    /// The line a compressed stream was cut off in: read up to the last whole line before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut_at_line: Option<u64>,
    /// The last line, when it has no newline (the file may have been cut off there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unended_line: Option<u64>,
}

impl InputRead {
    /// What the reader must know beside the failures, in a sentence; `None` for a log read
    /// whole, with content, its last line ended.
    pub(super) fn note(&self) -> Option<String> {
        let f = &self.file;
        if let Some(line) = self.cut_at_line {
            return Some(format!(
                "{f}: cut off at line {line} (its compressed stream ends mid-frame): read up to \
                 the last whole line before it, what came after is unread"
            ));
        }
        if self.empty {
            return Some(format!("{f}: empty, nothing to explain"));
        }
        self.unended_line.map(|line| {
            format!("{f}: its last line, line {line}, has no newline: the log may be cut off there")
        })
    }
}
