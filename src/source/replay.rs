//! The replay source: plays a recording back (the `--replay` file, or the demo embedded in the
//! binary), reading it one line at a time so memory does not grow with its length.

use std::io::BufRead;

use super::{MachineInfo, Sample, Source, SourceError};
use crate::recording::{Header, Reader, RecordingError, cut_notice};

mod demo;

pub use demo::{DemoReader, demo, demo_last_at_ms};

/// A recording read lazily: the header when opened, each sample when asked for, one read ahead.
/// A bad line is an error naming the file and line when it is reached; the replay stops there.
/// A recording cut off mid-line ends at its last whole line, which carries a notice saying so.
pub struct ReplaySource<R> {
    header: Header,
    name: String,
    reader: Reader<R>,
    /// A sample read ahead, handed out next.
    peeked: Option<Sample>,
    /// The fault met reading ahead, told after the sample before it.
    ahead: Option<RecordingError>,
    /// Opens the recording again from its start, at its end (the demo loops).
    again: Option<fn() -> R>,
    /// Time of this lap's first and last sample, as recorded.
    first_ms: Option<u64>,
    last_ms: u64,
    /// Added to every time: the laps played so far, so time keeps moving forward (whole
    /// seconds: a process's start time is kept in seconds and moves with the rest).
    offset_s: u64,
    /// Which pass over the recording this is (1: the first).
    lap: u32,
    /// The time of the latest sample handed out (shifted by `offset_ms`): the replay's clock.
    clock_ms: u64,
    /// Why the replay stopped (a bad line): told again on every later call.
    failed: Option<String>,
}

impl<R: BufRead> ReplaySource<R> {
    /// Reads and checks the header; the samples are read as they are asked for.
    pub fn read(name: &str, input: R) -> Result<Self, RecordingError> {
        let (header, reader) = Reader::open(name, input)?;
        Ok(ReplaySource {
            header,
            name: name.to_string(),
            reader,
            peeked: None,
            ahead: None,
            again: None,
            first_ms: None,
            last_ms: 0,
            offset_s: 0,
            lap: 1,
            clock_ms: 0,
            failed: None,
        })
    }

    /// A replay that starts again at its end, shifting time forward; `open` gives the
    /// recording from its start, each time.
    pub fn looping(name: &str, open: fn() -> R) -> Result<Self, RecordingError> {
        let mut source = Self::read(name, open())?;
        source.again = Some(open);
        Ok(source)
    }

    /// The name the recording was opened by.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The first sample, read ahead and checked (`None` for a recording without samples).
    pub fn first(&mut self) -> Result<Option<&Sample>, RecordingError> {
        if self.peeked.is_none() && self.first_ms.is_none() {
            self.peeked = self.reader.next_sample()?;
        }
        Ok(self.peeked.as_ref())
    }

    /// The next sample as recorded, `None` at the end (no looping, no time shift). The last
    /// whole sample of a recording cut off after it says so in a notice.
    pub fn next_sample(&mut self) -> Result<Option<Sample>, RecordingError> {
        if let Some(e) = self.ahead.take() {
            return Err(e);
        }
        let next = match self.peeked.take() {
            Some(s) => Some(s),
            None => self.reader.next_sample()?,
        };
        let Some(mut s) = next else {
            return Ok(None);
        };
        match self.reader.next_sample() {
            Ok(Some(n)) => self.peeked = Some(n),
            Ok(None) => {
                if let Some(line) = self.reader.cut_off() {
                    s.notices.push(cut_notice(&self.name, line));
                }
            }
            Err(e) => self.ahead = Some(e),
        }
        self.first_ms.get_or_insert(s.at_ms);
        self.last_ms = s.at_ms;
        Ok(Some(s))
    }

    /// The line the recording was cut off in, once the replay has reached it.
    pub fn cut_off(&self) -> Option<usize> {
        self.reader.cut_off()
    }

    /// The samples as recorded, one at a time.
    pub fn samples(&mut self) -> impl Iterator<Item = Result<Sample, RecordingError>> + '_ {
        std::iter::from_fn(|| self.next_sample().transpose())
    }

    /// At the end of a looping replay: reads it again from the start, later in time.
    fn lap(&mut self) -> Result<bool, RecordingError> {
        let (Some(again), Some(first)) = (self.again, self.first_ms) else {
            return Ok(false);
        };
        let (_, reader) = Reader::open(self.name.clone(), again())?;
        self.reader = reader;
        let lap_ms = self.last_ms.saturating_sub(first) + self.header.interval_ms;
        self.offset_s += lap_ms.div_ceil(1000);
        self.first_ms = None;
        self.lap += 1;
        Ok(true)
    }

    /// The next sample, every time in it shifted by the laps played (`Sample::shift`); at the end
    /// of a looping replay, `Lapped` once (the screen starts clean) and then the new lap's first
    /// sample.
    fn sample_or_end(&mut self) -> Result<Sample, SourceError> {
        let mut s = match self.next_sample()? {
            Some(s) => s,
            None if self.lap()? => return Err(SourceError::Lapped(self.lap)),
            None => return Err(SourceError::Ended),
        };
        s.shift(self.offset_s);
        self.clock_ms = s.at_ms;
        Ok(s)
    }
}

impl ReplaySource<DemoReader> {
    /// The demo, looping, read as a stream each lap.
    pub fn demo() -> Result<Self, RecordingError> {
        Self::looping("demo", demo::open)
    }
}

impl<R: BufRead + Send> Source for ReplaySource<R> {
    fn machine(&mut self) -> Result<MachineInfo, SourceError> {
        Ok(self.header.machine.clone())
    }

    /// The time of the latest sample handed out: a replay's failures and ages are in its
    /// recording's time, never the wall clock's.
    fn now_ms(&self) -> u64 {
        match (self.clock_ms, &self.peeked) {
            (0, Some(first)) => first.at_ms,
            (at, _) => at,
        }
    }

    /// A bad line stops the replay: it fails with that line's fault from then on.
    fn sample(&mut self) -> Result<Sample, SourceError> {
        if let Some(reason) = &self.failed {
            return Err(SourceError::Unavailable(reason.clone()));
        }
        match self.sample_or_end() {
            Err(SourceError::Recording(e)) => {
                let reason = format!("replay stopped: {e}");
                self.failed = Some(reason.clone());
                Err(SourceError::Unavailable(reason))
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_says_when_it_starts_again_and_keeps_its_own_clock() {
        let mut demo = ReplaySource::demo().unwrap();
        let first = demo.sample().unwrap().at_ms;
        assert_eq!(demo.now_ms(), first, "a replay's clock is its samples'");
        let mut last = first;
        let lap = loop {
            match demo.sample() {
                Ok(s) => last = s.at_ms,
                Err(SourceError::Lapped(n)) => break n,
                Err(e) => panic!("{e}"),
            }
        };
        assert_eq!(lap, 2);
        assert_eq!(demo.now_ms(), last);
        let again = demo.sample().unwrap().at_ms;
        let step = demo.header().interval_ms;
        assert!(
            again >= last + step && again < last + step + 1000,
            "time goes on, by whole seconds: {again} after {last}"
        );
        assert_eq!((again - first) % 1000, 0);
    }

    #[test]
    fn a_replay_that_does_not_loop_ends() {
        let mut once = ReplaySource::read("demo", demo()).unwrap();
        while once.sample().is_ok() {}
        assert!(matches!(once.sample(), Err(SourceError::Ended)));
    }
}
