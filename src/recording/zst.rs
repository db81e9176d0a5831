//! zstd-compressed recordings (`*.zst`), in pure Rust (ruzstd): a reader of one or more
//! concatenated frames, and a writer that closes a frame every few lines so that a killed
//! `gpumon record` leaves a file that reads up to its last complete frame.

use std::io::{self, BufRead, Read, Write};

use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
use ruzstd::encoding::{CompressionLevel, compress};

/// A frame is closed at least this often (in recorded time), so a killed `record` loses at most
/// the samples of the last this many milliseconds (or the last sample, for longer intervals).
pub const FRAME_MS: u64 = 10_000;

/// Reads the decompressed bytes of a zstd stream: frames one after another (skippable frames
/// skipped), as `zstd` and `gpumon record` write them.
pub struct Decoder<R> {
    input: R,
    frame: FrameDecoder,
    /// Inside a frame whose end has not been reached.
    open: bool,
}

impl<R: BufRead> Decoder<R> {
    pub fn new(input: R) -> Self {
        Decoder {
            input,
            frame: FrameDecoder::new(),
            open: false,
        }
    }

    /// Starts the next frame; `false` at the end of the input.
    fn next_frame(&mut self) -> io::Result<bool> {
        loop {
            if self.input.fill_buf()?.is_empty() {
                return Ok(false);
            }
            match self.frame.reset(&mut self.input) {
                Ok(()) => return Ok(true),
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    let skipped =
                        io::copy(&mut (&mut self.input).take(length.into()), &mut io::sink())?;
                    if skipped < u64::from(length) {
                        return Err(corrupt("a skippable frame is cut off"));
                    }
                }
                Err(e) => return Err(self.fault(e)),
            }
        }
    }
}

impl<R: BufRead> Decoder<R> {
    /// A frame the input ends in the middle of was cut off, not damaged.
    fn fault(&mut self, e: FrameDecoderError) -> io::Error {
        if self.input.fill_buf().is_ok_and(<[u8]>::is_empty) {
            cut_off()
        } else {
            corrupt(e)
        }
    }
}

fn corrupt(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("not a valid zstd stream ({e})"),
    )
}

fn cut_off() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the zstd stream is cut off mid-frame (was the recording interrupted?)",
    )
}

impl<R: BufRead> Read for Decoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if !self.open {
                if !self.next_frame()? {
                    return Ok(0);
                }
                self.open = true;
            }
            if self.frame.can_collect() > 0 {
                return self.frame.read(buf);
            }
            if self.frame.is_finished() {
                self.open = false;
                continue;
            }
            if self.input.fill_buf()?.is_empty() {
                return Err(cut_off());
            }
            if let Err(e) = self
                .frame
                .decode_blocks(&mut self.input, BlockDecodingStrategy::UptoBlocks(1))
            {
                return Err(self.fault(e));
            }
        }
    }
}

/// Compresses what is written into one zstd frame per `lines` flushes (`recording::Writer`
/// flushes once a line); `finish` writes the last, partial frame.
pub struct Encoder<W: Write> {
    out: W,
    pending: Vec<u8>,
    flushes: usize,
    lines: usize,
}

impl<W: Write> Encoder<W> {
    /// A frame every `FRAME_MS` of samples taken every `interval_ms`.
    pub fn new(out: W, interval_ms: u64) -> Self {
        let lines = usize::try_from(FRAME_MS / interval_ms.max(1))
            .unwrap_or(1)
            .max(1);
        Encoder {
            out,
            pending: Vec::new(),
            flushes: 0,
            lines,
        }
    }

    /// The output, after `finish`.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Writes the pending bytes as one frame and flushes the output.
    pub fn finish(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            let mut frame = Vec::with_capacity(self.pending.len() / 4 + 64);
            compress(
                self.pending.as_slice(),
                &mut frame,
                CompressionLevel::Fastest,
            );
            self.out.write_all(&frame)?;
            self.pending.clear();
        }
        self.flushes = 0;
        self.out.flush()
    }
}

impl<W: Write> Write for Encoder<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flushes += 1;
        if self.flushes >= self.lines {
            self.finish()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        Decoder::new(bytes).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn frames_every_few_lines_read_back_as_one_text() {
        let mut enc = Encoder::new(Vec::new(), 4_000);
        assert_eq!(enc.lines, 2);
        let mut text = Vec::new();
        for i in 0..5 {
            let line = format!("{{\"line\": {i}}}\n");
            enc.write_all(line.as_bytes()).unwrap();
            enc.flush().unwrap();
            text.extend_from_slice(line.as_bytes());
        }
        // Two frames are closed; the fifth line waits for `finish`.
        let closed = decode(&enc.out).unwrap();
        assert_eq!(closed, text[..closed.len()]);
        assert_eq!(closed.split(|b| *b == b'\n').count() - 1, 4);
        enc.finish().unwrap();
        assert_eq!(decode(&enc.out).unwrap(), text);
    }

    #[test]
    fn skippable_frames_are_skipped_and_damage_is_an_error() {
        let skippable = vec![0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3];
        let mut enc = Encoder::new(skippable, 1);
        enc.write_all(b"hello\n").unwrap();
        enc.finish().unwrap();
        let file = enc.out;
        assert_eq!(decode(&file).unwrap(), b"hello\n");
        for end in [file.len() - 2, file.len() - 6, 14] {
            let cut = decode(&file[..end]).unwrap_err();
            assert_eq!(cut.kind(), io::ErrorKind::UnexpectedEof, "{end}: {cut}");
        }
        let junk = decode(b"this is not zstd").unwrap_err();
        assert!(
            junk.to_string().starts_with("not a valid zstd stream"),
            "{junk}"
        );
    }
}
