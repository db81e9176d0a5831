//! A failure read late, in words: a followed log's line read while the log was behind its writer
//! is told with when it was written (its own time, or the latest it can have been) and how much
//! later it was read, never as if it happened when it was read.

use crate::model::units::{clock, duration_label};
use crate::oom::failure::{Failure, LATE_MS, TimeFrom};
use crate::oom::sizes::human;

/// "written 10:00:00 UTC by its own time, read 1m13s later, its log 212.00 MiB behind", when the
/// line was read [`LATE_MS`] or more after the failure's time.
pub fn read_late(f: &Failure) -> Option<String> {
    let t = f.timing?;
    let late = t.read_ms.checked_sub(f.at_ms).filter(|l| *l >= LATE_MS)?;
    let when = clock(f.at_ms);
    let written = match t.from {
        TimeFrom::Line => format!("written {when} UTC by its own time"),
        TimeFrom::OnDisk => {
            format!("written by {when} UTC at the latest (its line has no time of its own)")
        }
    };
    let behind = match t.behind_bytes {
        0 => String::new(),
        b => format!(", its log {} behind", human(b)),
    };
    Some(format!(
        "{written}, read {} later{behind}",
        duration_label(late)
    ))
}

/// "run.log line 7", and when it was read late, when: the failure's place as evidence.
pub fn place(f: &Failure) -> String {
    match read_late(f) {
        Some(late) => format!("{} line {}: {late}", f.log, f.line),
        None => format!("{} line {}", f.log, f.line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oom::failure::Timing;

    #[test]
    fn late_lines_say_so_and_timely_ones_do_not() {
        let mut f = Failure {
            at_ms: 36_000_000,
            log: "run.log".into(),
            line: 7,
            ..Failure::default()
        };
        assert_eq!(place(&f), "run.log line 7");
        f.timing = Some(Timing {
            read_ms: 36_000_900,
            from: TimeFrom::Line,
            behind_bytes: 0,
        });
        assert_eq!(place(&f), "run.log line 7", "under 2 s: read as written");
        f.timing = Some(Timing {
            read_ms: 36_073_000,
            from: TimeFrom::Line,
            behind_bytes: 212 << 20,
        });
        assert_eq!(
            place(&f),
            "run.log line 7: written 10:00:00 UTC by its own time, read 1m13s later, its log \
             212.00 MiB behind"
        );
        f.timing = Some(Timing {
            read_ms: 36_073_000,
            from: TimeFrom::OnDisk,
            behind_bytes: 0,
        });
        assert_eq!(
            place(&f),
            "run.log line 7: written by 10:00:00 UTC at the latest (its line has no time of its \
             own), read 1m13s later"
        );
    }
}
