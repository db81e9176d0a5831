//! The replay source: plays a recording back (the `--replay` file, or the demo embedded in the binary).

use std::io::BufRead;

use super::{MachineInfo, Sample, Source, SourceError};
use crate::recording::{Header, Reader, RecordingError};

/// The demo: a real recording made on an NVIDIA H100 (see README).
pub const DEMO: &[u8] = include_bytes!("../../assets/demo.ndjson");

/// Samples of a recording, read and checked in full before the first frame.
pub struct ReplaySource {
    header: Header,
    samples: Vec<Sample>,
    next: usize,
    /// Start again at the end, shifting time forward so history stays in order.
    looping: bool,
    offset_ms: u64,
}

impl ReplaySource {
    pub fn read(name: &str, input: impl BufRead, looping: bool) -> Result<Self, RecordingError> {
        let (header, mut reader) = Reader::open(name, input)?;
        let mut samples = Vec::new();
        while let Some(s) = reader.next_sample()? {
            samples.push(s);
        }
        Ok(ReplaySource {
            header,
            samples,
            next: 0,
            looping,
            offset_ms: 0,
        })
    }

    pub fn demo() -> Result<Self, RecordingError> {
        Self::read("demo", DEMO, true)
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The last sample of the recording, for `gpumon snapshot --replay`.
    pub fn last(&self) -> Option<&Sample> {
        self.samples.last()
    }

    /// Time from the first sample to the last.
    pub fn span_ms(&self) -> u64 {
        match (self.samples.first(), self.samples.last()) {
            (Some(a), Some(b)) => b.at_ms.saturating_sub(a.at_ms),
            _ => 0,
        }
    }

    /// Every sample, in order.
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }
}

impl Source for ReplaySource {
    fn machine(&mut self) -> Result<MachineInfo, SourceError> {
        Ok(self.header.machine.clone())
    }

    fn sample(&mut self) -> Result<Sample, SourceError> {
        if self.next >= self.samples.len() {
            let (Some(first), Some(last)) = (self.samples.first(), self.samples.last()) else {
                return Err(SourceError::Ended);
            };
            if !self.looping {
                return Err(SourceError::Ended);
            }
            self.offset_ms += last.at_ms - first.at_ms + self.header.interval_ms;
            self.next = 0;
        }
        let mut s = self.samples[self.next].clone();
        self.next += 1;
        s.at_ms += self.offset_ms;
        for f in &mut s.failures {
            f.at_ms += self.offset_ms;
        }
        Ok(s)
    }
}
