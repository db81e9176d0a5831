//! NCCL's own allocation failures: `NCCL WARN Cuda failure 'out of memory'` (enqueue.cc,
//! include/alloc.h; `Cuda failure 2 'out of memory'` after `Last error:` in PyTorch's error), and
//! the request it failed, `NCCL WARN Failed to CUDA calloc 6291456 bytes`, a line later. NCCL's
//! `host:pid:tid [dev]` prefix tells two processes' failures apart.

use std::sync::LazyLock;

use regex_lite::Regex;

use super::runs::{run, size};
use super::sizes::parse_exact;
use super::{Event, Family, Kind, re};
use crate::oom::failure::{Dialect, Numbers};

static OOM: LazyLock<Regex> = LazyLock::new(|| re(r"Cuda failure (?:\d{1,4} )?'out of memory'"));
static CALLOC: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"NCCL WARN Failed to CUDA (?:c|m)alloc(?:Async)? (?P<n>\d{1,20}|",
        run!(),
        ") bytes"
    ))
});
/// NCCL's line prefix: `host:pid:tid [cudaDev]`.
static WHO: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s*[^\s:]{1,128}:(?P<pid>\d{1,10}):\d{1,10} \[\d{1,4}\]"));

fn key(line: &str) -> String {
    let pid = WHO
        .captures(line)
        .map_or("", |c| c.name("pid").map_or("", |m| m.as_str()));
    format!("nccl-oom:{pid}")
}

pub(super) fn parse(line: &str) -> Option<Event> {
    let (kind, m, (request, request_unreadable)) = if let Some(m) = OOM.find(line) {
        (Kind::Header, m, (None, None))
    } else {
        let c = CALLOC.captures(line)?;
        (Kind::Final, c.get(0)?, size(&c["n"], parse_exact))
    };
    let start = line
        .get(..m.start())
        .map_or(0, |head| head.rfind(']').map_or(0, |i| i + 1));
    Some(Event {
        kind,
        family: Family::Nccl,
        dialect: Dialect::Nccl,
        allocator: None,
        numbers: Numbers {
            request,
            request_unreadable,
            ..Numbers::default()
        },
        start,
        key: Some(key(line)),
        fault: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_out_of_memory() {
        // PKU-YuanGroup/Open-Sora-Plan#386.
        let l = "ins-7df6eojsifuykig9:3018451:3018451 [0] enqueue.cc:1085 NCCL WARN Cuda failure 'out of memory'";
        let e = parse(l).unwrap();
        assert_eq!((e.kind, e.dialect), (Kind::Header, Dialect::Nccl));
        assert_eq!(e.key.as_deref(), Some("nccl-oom:3018451"));
        assert!(
            l[e.start..].trim().starts_with("enqueue.cc:1085 NCCL WARN")
                || l[e.start..].trim().starts_with("NCCL")
        );
        // NVIDIA/nccl#1235: the request follows.
        let c = parse("ng30903:3063028:3066152 [3] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes").unwrap();
        assert_eq!(
            (c.kind, c.numbers.request.map(|s| s.bytes)),
            (Kind::Final, Some(6_291_456))
        );
        assert_eq!(c.key.as_deref(), Some("nccl-oom:3063028"));
        // After PyTorch's `Last error:`.
        assert!(parse("Cuda failure 2 'out of memory'").is_some());
        assert!(parse("Cuda failure 'invalid argument'").is_none());
        assert!(parse("Cuda failure 999 'unknown error'").is_none());
    }
}
