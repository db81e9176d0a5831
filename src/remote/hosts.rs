//! The remote hosts to show: `--remote URL`, `--hosts FILE` (one `URL` or `name=URL` a line,
//! `#` comments) and `--token-file`; every fault one line naming the file and line.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A hosts or token file larger than this is refused.
const MAX_FILE: u64 = 1 << 20;
/// Longest accepted host name.
const MAX_NAME: usize = 64;

/// One remote `gpumon serve`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// Shown in the overview: the file's name, else `host:port` of the URL.
    pub name: String,
    /// The server's base URL (`http://gpu-07:9477`), without a trailing `/`.
    pub url: String,
}

/// Why the hosts could not be had.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: larger than {} KiB", path.display(), MAX_FILE >> 10)]
    TooLarge { path: PathBuf },
    #[error("{}: line {line}: {what}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        what: String,
    },
    /// What the file holds is not what it should (not text, not a token).
    #[error("{}: {what}", path.display())]
    Content { path: PathBuf, what: String },
}

impl Host {
    /// A host from a URL, named by its `host:port`.
    pub fn from_url(text: &str) -> Result<Host, String> {
        let url = check_url(text)?;
        let name = url
            .split_once("://")
            .map_or("", |(_, rest)| rest)
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        Ok(Host { name, url })
    }
}

/// A base URL: `http://` or `https://` with an authority, nothing a header could not carry.
pub fn check_url(text: &str) -> Result<String, String> {
    let text = text.trim();
    let Some(rest) = text
        .strip_prefix("http://")
        .or_else(|| text.strip_prefix("https://"))
    else {
        return Err(format!("{text:?} is not an http:// or https:// URL"));
    };
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("{text:?} names no host"));
    }
    let uri: ureq::http::Uri = text
        .parse()
        .map_err(|e| format!("{text:?} is not a URL ({e})"))?;
    if uri.host().is_none_or(str::is_empty) {
        return Err(format!("{text:?} names no host"));
    }
    let authority = uri.authority().map_or("", |a| a.as_str());
    let port = authority.rsplit_once(']').map_or(authority, |(_, p)| p);
    if port.contains(':') && uri.port_u16().is_none() {
        return Err(format!(
            "{text:?}: the port is not a number from 1 to 65535"
        ));
    }
    if uri.query().is_some() {
        return Err(format!("{text:?}: a base URL has no query"));
    }
    Ok(text.trim_end_matches('/').to_string())
}

/// Parses a hosts file's text; `path` only names it in errors.
pub fn parse_hosts(path: &Path, text: &str) -> Result<Vec<Host>, HostsError> {
    let mut hosts = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let fault = |what: String| HostsError::Line {
            path: path.to_path_buf(),
            line,
            what,
        };
        let text = raw.split('#').next().unwrap_or_default().trim();
        if text.is_empty() {
            continue;
        }
        // `name=URL`; an `=` after the scheme is the URL's own.
        let host = match text.split_once('=').filter(|(n, _)| !n.contains("://")) {
            Some((name, url)) => {
                let name = name.trim();
                if name.is_empty() || name.chars().count() > MAX_NAME {
                    return Err(fault(format!(
                        "a name must have 1 to {MAX_NAME} characters"
                    )));
                }
                if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    return Err(fault(format!("name {name:?} has a space in it")));
                }
                Host {
                    name: name.to_string(),
                    url: check_url(url).map_err(fault)?,
                }
            }
            None if text.contains(char::is_whitespace) => {
                return Err(fault(format!(
                    "{text:?}: one URL or name=URL a line, nothing else"
                )));
            }
            None => Host::from_url(text).map_err(fault)?,
        };
        for key in [&host.url, &host.name] {
            if let Some(first) = seen.insert(key.clone(), line) {
                return Err(fault(format!("{key} is already on line {first}")));
            }
        }
        hosts.push(host);
    }
    if hosts.is_empty() {
        return Err(HostsError::Line {
            path: path.to_path_buf(),
            line: 0,
            what: "no host in it".into(),
        });
    }
    Ok(hosts)
}

/// Reads at most `MAX_FILE` bytes of a small text file.
fn read_small(path: &Path) -> Result<String, HostsError> {
    let io = |source| HostsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(HostsError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    String::from_utf8(bytes).map_err(|_| HostsError::Content {
        path: path.to_path_buf(),
        what: "not UTF-8 text".into(),
    })
}

/// Reads and parses a hosts file.
pub fn read_hosts(path: &Path) -> Result<Vec<Host>, HostsError> {
    parse_hosts(path, &read_small(path)?)
}

/// Reads a bearer token: one line of visible ASCII (surrounding whitespace is dropped).
pub fn read_token(path: &Path) -> Result<String, HostsError> {
    let token = read_small(path)?.trim().to_string();
    let what = if token.is_empty() {
        "empty; it should hold the token"
    } else if !token.chars().all(|c| c.is_ascii_graphic()) {
        "the token must be one word of visible ASCII"
    } else {
        return Ok(token);
    };
    Err(HostsError::Content {
        path: path.to_path_buf(),
        what: what.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        let e = parse_hosts(Path::new("hosts"), text)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("hosts: ") && !e.contains('\n'), "{e}");
        e
    }

    #[test]
    fn urls_names_and_comments() {
        let text = "# the lab\nhttp://gpu-07:9477\n\n  a100=http://10.0.0.5:9477/  # spare\nhttps://gpu-08:9477\n";
        let hosts = parse_hosts(Path::new("hosts"), text).unwrap();
        assert_eq!(
            hosts,
            vec![
                Host {
                    name: "gpu-07:9477".into(),
                    url: "http://gpu-07:9477".into()
                },
                Host {
                    name: "a100".into(),
                    url: "http://10.0.0.5:9477".into()
                },
                Host {
                    name: "gpu-08:9477".into(),
                    url: "https://gpu-08:9477".into()
                },
            ]
        );
    }

    #[test]
    fn bad_lines_say_which_and_why() {
        assert!(
            err("gpu-07:9477").contains("line 1: \"gpu-07:9477\" is not an http:// or https://")
        );
        assert!(err("http://a:1\nftp://b:2").contains("line 2: \"ftp://b:2\" is not an http"));
        assert!(err("http://a:1 http://b:1").contains("one URL or name=URL a line"));
        assert!(err("=http://a:1").contains("line 1: a name must have"));
        assert!(err("a b=http://a:1").contains("has a space"));
        assert!(
            err("x=http://a:1\ny=http://a:1").contains("line 2: http://a:1 is already on line 1")
        );
        assert!(err("x=http://a:1\nx=http://b:1").contains("line 2: x is already on line 1"));
        assert!(err("http://").contains("names no host"));
        assert!(err("http://a:1/?q=1").contains("no query"));
        assert!(err("http://a b:1").contains("one URL or name=URL"));
        assert!(err("x=http://a:99999").contains("port is not a number"));
        assert!(err("# only a comment\n\n").contains("no host in it"));
    }

    #[test]
    fn tokens_are_one_visible_word() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        for (text, ok) in [
            ("s3cret\n", true),
            ("\n", false),
            ("a b", false),
            ("é", false),
        ] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(read_token(&path).is_ok(), ok, "{text:?}");
        }
        assert!(read_token(&path.with_extension("none")).is_err());
    }
}
