//! The bearer token of `--token-file`: read once at start, compared in constant time.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use subtle::ConstantTimeEq;

/// Longest token file read (a token is a line, not a document).
const MAX_TOKEN_BYTES: u64 = 4096;

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: readable by every user (mode {mode:o}); `chmod o-r` it first", path.display())]
    WorldReadable { path: PathBuf, mode: u32 },
    #[error("{}: empty token", path.display())]
    Empty { path: PathBuf },
    #[error("{}: a token is one line of printable ASCII of at most {MAX_TOKEN_BYTES} bytes", path.display())]
    Malformed { path: PathBuf },
}

/// The secret a client must send as `Authorization: Bearer <token>`.
pub struct Token(Vec<u8>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// Reads the file once; refuses one that every user may read, or that holds no usable token.
    pub fn read(path: &Path) -> Result<Token, TokenError> {
        let io = |source| TokenError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let mode = file.metadata().map_err(io)?.permissions().mode();
        if mode & 0o004 != 0 {
            return Err(TokenError::WorldReadable {
                path: path.to_path_buf(),
                mode: mode & 0o7777,
            });
        }
        let mut bytes = Vec::new();
        file.take(MAX_TOKEN_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        let text = std::str::from_utf8(&bytes).map(str::trim);
        match text {
            Ok("") => Err(TokenError::Empty {
                path: path.to_path_buf(),
            }),
            Ok(t)
                if bytes.len() as u64 <= MAX_TOKEN_BYTES
                    && t.bytes().all(|b| b.is_ascii_graphic()) =>
            {
                Ok(Token(t.as_bytes().to_vec()))
            }
            _ => Err(TokenError::Malformed {
                path: path.to_path_buf(),
            }),
        }
    }

    /// Whether an `Authorization` header value carries this token (scheme case-insensitive).
    pub fn allows(&self, header: Option<&[u8]>) -> bool {
        let Some(value) = header else { return false };
        let Some((scheme, given)) = value.split_at_checked(7) else {
            return false;
        };
        scheme.eq_ignore_ascii_case(b"bearer ") && bool::from(given.ct_eq(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(mode: u32, text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        std::fs::set_permissions(f.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        f
    }

    #[test]
    fn a_private_token_is_read_trimmed_and_checked() {
        let f = file(0o600, "  s3cret-token\n");
        let t = Token::read(f.path()).unwrap();
        assert!(t.allows(Some(b"Bearer s3cret-token")));
        assert!(t.allows(Some(b"bearer s3cret-token")));
        for bad in [
            &b"Bearer s3cret"[..],
            b"Bearer s3cret-token2",
            b"Basic s3cret-token",
            b"",
            b"Bearer",
        ] {
            assert!(!t.allows(Some(bad)), "{}", String::from_utf8_lossy(bad));
        }
        assert!(!t.allows(None));
    }

    #[test]
    fn unsafe_or_unusable_files_are_refused() {
        let world = file(0o644, "tok");
        assert!(matches!(
            Token::read(world.path()),
            Err(TokenError::WorldReadable { .. })
        ));
        let empty = file(0o600, " \n");
        assert!(matches!(
            Token::read(empty.path()),
            Err(TokenError::Empty { .. })
        ));
        let two = file(0o600, "a b");
        assert!(matches!(
            Token::read(two.path()),
            Err(TokenError::Malformed { .. })
        ));
        let big = file(0o600, &"x".repeat(5000));
        assert!(matches!(
            Token::read(big.path()),
            Err(TokenError::Malformed { .. })
        ));
        let missing = Token::read(Path::new("/nonexistent/gpumon-token"));
        assert!(matches!(missing, Err(TokenError::Io { .. })));
    }
}
