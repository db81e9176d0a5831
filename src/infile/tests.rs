//! The one reader over bytes, pipes and files: plain, gzip and zstd read alike, a slow pipe read
//! as far as needed, a cut stream read up to its cut, a file's tail read in place.

use std::io::Write;

use super::*;

const RECORDING: &[u8] = b"{\"schema\":\"gpumon.recording/3\",\"interval_ms\":1000}\n\
{\"at_ms\":5,\"gpus\":[],\"processes\":[]}\n{\"at_ms\":9,\"gpus\":[],\"processes\":[]}\n";

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// Compressed as `gpumon record` writes it: a frame every 5 lines (5 s of 1 s samples).
fn zstd(bytes: &[u8]) -> Vec<u8> {
    let mut enc = zst::Encoder::new(Vec::new(), 1000);
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        enc.write_all(line).unwrap();
        enc.flush().unwrap();
    }
    enc.finish().unwrap();
    enc.into_inner()
}

fn all(input: Input) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    input.reader().read_to_end(&mut out)?;
    Ok(out)
}

/// Hands out one byte a read, as a slow pipe may.
struct Trickle(Cursor<Vec<u8>>);

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(1);
        self.0.read(&mut buf[..n])
    }
}

#[test]
fn plain_gzip_and_zstd_read_alike_and_whole() {
    let mut log = b"step 1\n".repeat(3000);
    log.extend_from_slice(b"torch.OutOfMemoryError: CUDA out of memory.\n");
    for (stored, how) in [
        (log.clone(), Compression::Plain),
        (gzip(&log), Compression::Gzip),
        (zstd(&log), Compression::Zstd),
    ] {
        let input = Input::from_reader("t", Cursor::new(stored)).unwrap();
        assert_eq!((input.kind.clone(), input.compression), (Kind::Log, how));
        assert_eq!(
            all(input).unwrap(),
            log,
            "{how:?}: the first block is read again"
        );
    }
    let input = Input::from_reader("r", Cursor::new(gzip(RECORDING))).unwrap();
    assert_eq!(input.kind, Kind::Recording);
    // Two gzip members one after the other (`cat a.gz b.gz`) are one text.
    let two = [gzip(b"a\n"), gzip(b"b\n")].concat();
    assert_eq!(
        all(Input::from_reader("2", Cursor::new(two)).unwrap()).unwrap(),
        b"a\nb\n"
    );
}

#[test]
fn a_slow_pipe_is_read_as_far_as_needed_then_whole() {
    let input = Input::from_reader("p", Trickle(Cursor::new(RECORDING.to_vec()))).unwrap();
    assert_eq!(input.kind, Kind::Recording);
    assert_eq!(all(input).unwrap(), RECORDING);
    let input = Input::from_reader("e", Trickle(Cursor::new(Vec::new()))).unwrap();
    assert_eq!(input.kind, Kind::Empty);
}

#[test]
fn a_cut_stream_reads_up_to_the_cut_then_says_so() {
    let mut body = RECORDING.repeat(200);
    body.extend_from_slice(b"last\n");
    for stored in [gzip(&body), zstd(&body)] {
        let cut = stored[..stored.len() - 8].to_vec();
        let input = Input::from_reader("c", Cursor::new(cut)).unwrap();
        let mut reader = input.reader();
        let mut got = Vec::new();
        let err = reader.read_to_end(&mut got).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{err}");
        assert!(got.len() > BLOCK && body.starts_with(&got));
    }
    // Damaged from its first bytes: nothing to read, and the reason.
    let err = Input::from_reader("d", Cursor::new(b"\x28\xb5\x2f\xfdjunk".to_vec())).unwrap_err();
    assert!(err.to_string().contains("zstd"), "{err}");
}

#[test]
fn a_file_is_opened_once_and_its_tail_read_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ndjson");
    std::fs::write(&path, RECORDING).unwrap();
    let input = Input::open(&path).unwrap();
    assert_eq!(input.size(), Some(RECORDING.len() as u64));
    assert_eq!(input.last_at_ms(), Some(9));
    assert_eq!(
        all(input).unwrap(),
        RECORDING,
        "the tail read moved nothing"
    );
    let zst = dir.path().join("r.ndjson.zst");
    std::fs::write(&zst, zstd(RECORDING)).unwrap();
    let input = Input::open(&zst).unwrap();
    assert_eq!((input.size(), input.last_at_ms()), (None, None));
    let pipe = Input::from_reader("p", Cursor::new(RECORDING.to_vec())).unwrap();
    assert_eq!(pipe.last_at_ms(), None);
    let err = Input::open(dir.path()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::IsADirectory, "{err}");
}
