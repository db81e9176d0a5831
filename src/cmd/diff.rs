//! `gpumon diff A B`: each side a snapshot, a recording (replayed through the pipeline as
//! `snapshot --replay` does: the state at its last sample), both read through `given` (a pipe,
//! `-`, gzip or zstd), or the `http(s)://` URL of a `gpumon serve`, whose `/snapshot` is read now
//! with the remote hosts' client (bounded time and size, the bearer token of `--token-file`) and
//! checked as a file is; then the two are compared.

use std::path::Path;
use std::process::ExitCode;

use super::given::{self, Wants};
use super::{Fail, files, print_out};
use crate::cli::{ClientTlsArgs, Format};
use crate::infile::Kind;
use crate::remote::{Client, hosts};
use crate::snapshot::{self, Snapshot, SnapshotError};
use crate::source::replay::ReplaySource;

/// Where one side's snapshot comes from.
#[derive(Debug, PartialEq, Eq)]
enum Side<'a> {
    File(&'a Path),
    /// A server's base URL, checked, without a trailing `/`.
    Server(String),
}

/// What an argument names: a path that exists is a file whatever its name; else `scheme://…` is
/// a server (`http://` or `https://`, anything else a usage error), and the rest are files.
fn side(arg: &Path) -> Result<Side<'_>, Fail> {
    if arg.exists() {
        return Ok(Side::File(arg));
    }
    match arg.to_str() {
        Some(text) if text.contains("://") => hosts::check_url(text)
            .map(Side::Server)
            .map_err(Fail::usage),
        _ => Ok(Side::File(arg)),
    }
}

/// `host:port`, which is not a file here and not a URL either: the error says how to name it.
fn looks_like_an_address(arg: &Path) -> Option<&str> {
    let text = arg.to_str()?;
    let (host, port) = text.rsplit_once(':')?;
    let host_ok = !host.is_empty() && !host.contains('/');
    (host_ok && port.parse::<u16>().is_ok_and(|p| p > 0)).then_some(text)
}

/// One side's snapshot, and whether it is a recording's end.
fn load(side: &Side<'_>, client: &Client) -> Result<(Snapshot, bool), Fail> {
    match side {
        Side::File(path) => from_file(path).map_err(|e| {
            let hint = looks_like_an_address(path)
                .map(|a| format!(" (a server is named by its URL: http://{a})"))
                .unwrap_or_default();
            Fail::usage(format!("{e}{hint}"))
        }),
        Side::Server(url) => client
            .snapshot(url)
            .map(|s| (s, false))
            .map_err(|e| Fail::runtime(format!("{url}: {e}"))),
    }
}

/// A snapshot file, or the state at a recording's last sample.
fn from_file(path: &Path) -> Result<(Snapshot, bool), String> {
    let input = given::open(path)?;
    // Too large to be a snapshot, whatever its first bytes: refused unread.
    if let Some(size) = input.size().filter(|s| *s > snapshot::MAX_BYTES) {
        let path = path.to_path_buf();
        return Err(SnapshotError::TooLarge { path, size }.to_string());
    }
    given::check(&input, Wants::SnapshotOrRecording)?;
    if input.kind != Kind::Recording {
        let snap = snapshot::read_from(path, input.reader()).map_err(|e| e.to_string())?;
        return Ok((snap, false));
    }
    let name = input.name.clone();
    let mut source = ReplaySource::read(&name, input.reader()).map_err(|e| e.to_string())?;
    let machine = files::replay_recording(&mut source, |_, _| {}).map_err(|e| e.to_string())?;
    let Some(at) = machine.last_sample_ms else {
        return Err(format!(
            "{name}: a recording without samples, nothing to compare"
        ));
    };
    Ok((snapshot::Snapshot::of_machine(&machine, at), true))
}

pub(super) fn diff(
    a: &Path,
    b: &Path,
    format: Format,
    token_file: Option<&Path>,
    tls: &ClientTlsArgs,
) -> Result<ExitCode, Fail> {
    let (side_a, side_b) = (side(a)?, side(b)?);
    let any_server = [&side_a, &side_b]
        .iter()
        .any(|s| matches!(s, Side::Server(_)));
    // The token is read as fleet mode reads it, and only when a side is a server.
    let token = match token_file {
        Some(path) if any_server => {
            Some(hosts::read_token(path).map_err(|e| Fail::usage(format!("--token-file {e}")))?)
        }
        _ => None,
    };
    let client = if any_server {
        Client::with_trust(token, &super::fleet::trust(tls)?)
    } else {
        Client::new(token)
    };
    // Both sides at once: two servers are read at nearly the same moment, and a slow one costs
    // its time allowance once, not twice.
    let (sa, sb) = std::thread::scope(|s| {
        let b = s.spawn(|| load(&side_b, &client));
        let a = load(&side_a, &client);
        let b = b
            .join()
            .unwrap_or_else(|_| Err(Fail::runtime("reading B failed")));
        (a, b)
    });
    let ((sa, a_replayed), (sb, b_replayed)) = (sa?, sb?);
    let d = snapshot::diff::diff(&sa, &sb);
    let what = |replayed: bool| {
        if replayed {
            " (a recording, replayed to its last sample)"
        } else {
            ""
        }
    };
    let text = match format {
        Format::Text => format!(
            "A: {}{}\nB: {}{}\n{}",
            a.display(),
            what(a_replayed),
            b.display(),
            what(b_replayed),
            snapshot::diff::render_text(&d)
        ),
        Format::Json => snapshot::diff::render_json(&d),
    };
    print_out(&text, format)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(arg: &str) -> String {
        match side(Path::new(arg)) {
            Err(f) => {
                assert_eq!(f.code, 2, "{arg}: {}", f.message);
                f.message
            }
            Ok(s) => panic!("{arg}: {s:?}"),
        }
    }

    #[test]
    fn urls_files_and_what_is_refused() {
        assert_eq!(
            side(Path::new("http://gpu-a:9477/")).ok(),
            Some(Side::Server("http://gpu-a:9477".into()))
        );
        let file = "tests/fixtures/snapshots/h100-jax-prealloc.json";
        assert_eq!(
            side(Path::new(file)).ok(),
            Some(Side::File(Path::new(file)))
        );
        // Not there and not a URL: a file, whose read names it.
        assert_eq!(
            side(Path::new("gpu-a:9477")).ok(),
            Some(Side::File(Path::new("gpu-a:9477")))
        );
        assert_eq!(
            side(Path::new("https://gpu-a:9477")).ok(),
            Some(Side::Server("https://gpu-a:9477".into()))
        );
        assert!(usage("ftp://gpu-a").contains("is not an http:// or https:// URL"));
        assert!(usage("http://gpu-a:99999").contains("port is not a number"));
        assert!(usage("http://").contains("names no host"));
    }

    #[test]
    fn an_address_without_its_scheme_gets_a_hint() {
        assert_eq!(
            looks_like_an_address(Path::new("gpu-a:9477")),
            Some("gpu-a:9477")
        );
        for not in ["a.json", "dir/x:1", ":9477", "gpu-a:0", "gpu-a:http"] {
            assert_eq!(looks_like_an_address(Path::new(not)), None, "{not}");
        }
    }
}
