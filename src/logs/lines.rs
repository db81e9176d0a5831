//! Splits a byte stream into lines, keeping at most a bounded prefix of an overlong line; NUL
//! bytes are holes (logrotate's `copytruncate` leaves KiBs of them where the writer's next line
//! lands), left out of the lines.

use crate::oom::MAX_LINE;

/// Carries a partial line between chunks.
#[derive(Debug, Default)]
pub struct LineSplitter {
    partial: Vec<u8>,
    /// Lines completed so far.
    pub lines: u64,
}

impl LineSplitter {
    /// Calls `each(line_no, bytes)` for every line `chunk` completes.
    pub fn push(&mut self, chunk: &[u8], mut each: impl FnMut(u64, &[u8])) {
        self.push_at(chunk, |no, _, line| each(no, line));
    }

    /// [`LineSplitter::push`], also telling where in `chunk` each line ends (past its newline).
    pub fn push_at(&mut self, chunk: &[u8], mut each: impl FnMut(u64, usize, &[u8])) {
        let mut rest = chunk;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            self.keep(&rest[..i]);
            self.lines += 1;
            let end = chunk.len() - rest.len() + i + 1;
            each(self.lines, end, &self.partial);
            self.partial.clear();
            rest = &rest[i + 1..];
        }
        self.keep(rest);
    }

    /// Ends the stream: a last line without a newline counts.
    pub fn finish(&mut self, mut each: impl FnMut(u64, &[u8])) {
        if !self.partial.is_empty() {
            self.lines += 1;
            each(self.lines, &self.partial);
            self.partial.clear();
        }
    }

    fn keep(&mut self, bytes: &[u8]) {
        for run in bytes.split(|b| *b == 0) {
            let room = MAX_LINE.saturating_sub(self.partial.len());
            self.partial
                .extend_from_slice(run.get(..room).unwrap_or(run));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_across_chunks_and_caps_long_lines() {
        let mut s = LineSplitter::default();
        let mut got = Vec::new();
        s.push(b"ab", |n, l| got.push((n, l.to_vec())));
        s.push(b"c\nd", |n, l| got.push((n, l.to_vec())));
        let big = vec![b'x'; 3 * MAX_LINE];
        s.push(&big, |n, l| got.push((n, l.to_vec())));
        s.push(b"\n", |n, l| got.push((n, l.len().to_le_bytes().to_vec())));
        s.finish(|n, l| got.push((n, l.to_vec())));
        assert_eq!(got[0], (1, b"abc".to_vec()));
        assert_eq!(got[1], (2, MAX_LINE.to_le_bytes().to_vec()));
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn nul_runs_are_holes() {
        let mut s = LineSplitter::default();
        let mut got = Vec::new();
        let mut led = vec![0; 3 * MAX_LINE];
        led.extend_from_slice(b"torch.OutOfMemoryError\n\0\0ok\n");
        s.push(&led, |n, l| got.push((n, l.to_vec())));
        assert_eq!(
            got,
            [(1, b"torch.OutOfMemoryError".to_vec()), (2, b"ok".to_vec())]
        );
    }
}
