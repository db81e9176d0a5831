//! zstd-compressed recordings (`*.zst`), in pure Rust (ruzstd): a reader of one or more
//! concatenated frames that reads a frame cut off as far as its blocks were decoded, and a writer
//! that closes a frame every few seconds of samples so that a killed `gpumon record` loses at most
//! those.

use std::io::{self, BufRead, Read, Write};

use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
use ruzstd::encoding::{CompressionLevel, compress};

/// A frame is closed at least this often (in recorded time), so a killed `record` loses at most
/// the samples of the last this many milliseconds (or the last sample, for longer intervals).
pub const FRAME_MS: u64 = 5_000;

/// Reads the decompressed bytes of a zstd stream: frames one after another (skippable frames
/// skipped), as `zstd` and `gpumon record` write them.
pub struct Decoder<R> {
    input: R,
    frame: FrameDecoder,
    /// Inside a frame whose end has not been reached.
    open: bool,
    /// The input ended inside a frame: what was decoded is read, then the cut is the error.
    cut: bool,
}

/// A last, empty raw block (and a checksum, read only where the frame has one): it ends a frame
/// cut off between or inside blocks, so that what its whole blocks decoded can be read out
/// (ruzstd keeps a window of the decoded bytes back until the frame ends).
const LAST_BLOCK: [u8; 7] = [1, 0, 0, 0, 0, 0, 0];

impl<R: BufRead> Decoder<R> {
    pub fn new(input: R) -> Self {
        Decoder {
            input,
            frame: FrameDecoder::new(),
            open: false,
            cut: false,
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
                // Cut inside its header: no block of it was decoded.
                Err(_) if self.input.fill_buf().is_ok_and(<[u8]>::is_empty) => {
                    self.cut = true;
                    return Err(cut_off());
                }
                Err(e) => return Err(corrupt(e)),
            }
        }
    }
}

impl<R: BufRead> Decoder<R> {
    /// A frame the input ends in the middle of was cut off, not damaged: it is ended where its
    /// last whole block ended, and read to there.
    fn fault(&mut self, e: FrameDecoderError) -> io::Result<()> {
        if self.input.fill_buf().is_ok_and(<[u8]>::is_empty) {
            self.end_cut_frame()
        } else {
            Err(corrupt(e))
        }
    }

    /// Ends the frame the input was cut in (a failed block left the decoded ones as they were).
    fn end_cut_frame(&mut self) -> io::Result<()> {
        self.cut = true;
        match self
            .frame
            .decode_blocks(&LAST_BLOCK[..], BlockDecodingStrategy::UptoBlocks(1))
        {
            Ok(_) => Ok(()),
            Err(_) => Err(cut_off()),
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
                if self.cut {
                    return Err(cut_off());
                }
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
                self.end_cut_frame()?;
                continue;
            }
            if let Err(e) = self
                .frame
                .decode_blocks(&mut self.input, BlockDecodingStrategy::UptoBlocks(1))
            {
                self.fault(e)?;
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
        let mut enc = Encoder::new(Vec::new(), 2_500);
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

    #[test]
    fn a_frame_cut_off_reads_to_its_last_whole_block_then_says_so() {
        let text: Vec<u8> = (0..40_000)
            .flat_map(|i| format!("{{\"at_ms\": {i}, \"x\": {}}}\n", i * 7919 % 1013).into_bytes())
            .collect();
        let mut one = Vec::new();
        compress(text.as_slice(), &mut one, CompressionLevel::Fastest);
        assert_eq!(decode(&one).unwrap(), text);
        for end in [one.len() / 2, one.len() - 1] {
            let mut got = Vec::new();
            let err = Decoder::new(&one[..end]).read_to_end(&mut got).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{end}: {err}");
            assert!(got.len() > text.len() / 4, "{end}: {} decoded", got.len());
            assert!(text.starts_with(&got), "{end}: a prefix of the text");
        }
    }
}
