//! gzip read the way `zcat` reads it: member after member (`cat a.gz b.gz`), and whatever follows
//! the last member that is not one (a preallocated or copied log's zeros, garbage) ends the text
//! instead of failing it: zeros silently, anything else said once on stderr, as gzip warns
//! "trailing garbage ignored". What the members held is kept either way.

use std::io::{self, BufRead, Read};

use flate2::bufread::GzDecoder;

/// The decompressed text of a gzip input.
pub struct Members<R: BufRead> {
    name: String,
    member: Option<GzDecoder<R>>,
    /// Between members: the input, at the next member or the end.
    between: Option<R>,
}

impl<R: BufRead> Members<R> {
    pub fn new(name: &str, input: R) -> Self {
        Members {
            name: name.to_string(),
            member: Some(GzDecoder::new(input)),
            between: None,
        }
    }
}

impl<R: BufRead> Read for Members<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if let Some(member) = &mut self.member {
                let n = member.read(buf)?;
                if n > 0 || buf.is_empty() {
                    return Ok(n);
                }
                self.between = self.member.take().map(GzDecoder::into_inner);
            }
            let Some(mut input) = self.between.take() else {
                return Ok(0);
            };
            let next = input.fill_buf()?;
            if next.is_empty() {
                return Ok(0);
            }
            if next.starts_with(&[0x1f, 0x8b]) || next == [0x1f] {
                self.member = Some(GzDecoder::new(input));
                continue;
            }
            // Not a member: the text ends here (and `between` stays empty: nothing more).
            if next.iter().any(|b| *b != 0) {
                crate::say!(
                    "gpumon: {}: the gzip stream is followed by data that is not gzip: ignored \
                     after the end of the stream, as zcat does",
                    self.name
                );
            }
            return Ok(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap()
    }

    fn text(stored: &[u8]) -> io::Result<String> {
        let mut out = String::new();
        Members::new("t.gz", stored).read_to_string(&mut out)?;
        Ok(out)
    }

    #[test]
    fn members_then_zeros_or_garbage_read_as_zcat_reads_them() {
        let two = [gzip(b"a\n"), gzip(b"b\n")].concat();
        assert_eq!(text(&two).unwrap(), "a\nb\n");
        let zeros = [two.clone(), vec![0; 100_000]].concat();
        assert_eq!(text(&zeros).unwrap(), "a\nb\n");
        let garbage = [two, b"\x00\x00garbage".to_vec()].concat();
        assert_eq!(text(&garbage).unwrap(), "a\nb\n");
        // A damaged member is still a fault.
        let mut bad = gzip(b"some text\n");
        let at = bad.len() / 2;
        bad[at] ^= 0xff;
        assert!(text(&bad).is_err());
    }
}
