//! Lines a client can make `serve` say (a failed TLS handshake, plain http on the https port)
//! said at most `PER_MINUTE` a minute: past that they are counted, and the count is said with the
//! first line of a later minute, so a flood of bad handshakes cannot flood the log.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Lines said a minute, at most.
pub const PER_MINUTE: u32 = 10;
const MINUTE: Duration = Duration::from_secs(60);

/// One kind of line's budget.
#[derive(Debug, Default)]
pub struct Limited {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    since: Option<Instant>,
    said: u32,
    held: u64,
}

/// What to do with one line.
#[derive(Debug, PartialEq, Eq)]
pub enum Say {
    /// Say it; `held`: lines not said since the last one said.
    Now { held: u64, last: bool },
    /// Count it only.
    Held,
}

impl Limited {
    pub const fn new() -> Limited {
        Limited {
            state: Mutex::new(State {
                since: None,
                said: 0,
                held: 0,
            }),
        }
    }

    /// Whether a line may be said at `now`.
    pub fn judge(&self, now: Instant) -> Say {
        let mut s = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if s.since.is_none_or(|t| now.duration_since(t) >= MINUTE) {
            s.since = Some(now);
            s.said = 0;
        }
        if s.said >= PER_MINUTE {
            s.held += 1;
            return Say::Held;
        }
        s.said += 1;
        Say::Now {
            held: std::mem::take(&mut s.held),
            last: s.said == PER_MINUTE,
        }
    }

    /// Says `line` on stderr if the budget allows, with the count held back before it.
    pub fn say(&self, line: std::fmt::Arguments) {
        if let Say::Now { held, last } = self.judge(Instant::now()) {
            if held > 0 {
                crate::say!("gpumon: {held} more such lines were not said in the last minute");
            }
            let more = if last {
                format!(" (more this minute are counted: at most {PER_MINUTE} said a minute)")
            } else {
                String::new()
            };
            crate::say!("{line}{more}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_a_minute_then_counted() {
        let limit = Limited::new();
        let t0 = Instant::now();
        for i in 0..PER_MINUTE {
            let last = i + 1 == PER_MINUTE;
            assert_eq!(limit.judge(t0), Say::Now { held: 0, last });
        }
        for _ in 0..20_000 {
            assert_eq!(limit.judge(t0 + Duration::from_secs(30)), Say::Held);
        }
        assert_eq!(
            limit.judge(t0 + MINUTE),
            Say::Now {
                held: 20_000,
                last: false
            }
        );
    }
}
