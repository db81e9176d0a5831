//! JAX/XLA (PJRT): "RESOURCE_EXHAUSTED: Out of memory while trying to allocate N bytes" (jax 0.11:
//! "… allocate 1.12GiB with allocator GPU_0_bfc on device 0. [executable_name='…']") and the
//! stream-executor allocator's "Failed to allocate request for …".

use std::sync::LazyLock;

use regex_lite::Regex;

use super::runs::{run, size};
use super::sizes::{parse_exact, parse_human};
use super::{Event, Family, Kind, re};
use crate::oom::failure::{Allocator, Dialect, Numbers};

static OOM: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?:RESOURCE_EXHAUSTED|Resource exhausted): Out of (?P<host>host )?memory while trying to allocate (?:(?P<n>\d+|",
        run!(),
        r") bytes|(?P<h>(?:[\d.]+|",
        run!(),
        r") ?[KMGTPE]?i?B)(?: with allocator \S{1,64})?(?: on device (?P<dev>\d+))?)",
    ))
});
static EXECUTABLE: LazyLock<Regex> =
    LazyLock::new(|| re(r"\[executable_name='(?P<exe>[^']{1,200})'\]"));
static REQUEST: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"Failed to allocate request for \S{1,40} \((?P<n>\d+|",
        run!(),
        r")B\) on device ordinal (?P<dev>\d+)"
    ))
});

pub(super) fn parse(line: &str) -> Option<Event> {
    if let Some(c) = OOM.captures(line) {
        if c.name("host").is_some() {
            return None;
        }
        let (request, request_unreadable) = match (c.name("n"), c.name("h")) {
            (Some(n), _) => size(n.as_str(), parse_exact),
            (None, Some(h)) => size(h.as_str(), parse_human),
            (None, None) => (None, None),
        };
        return Some(Event {
            kind: Kind::Final,
            family: Family::Bfc,
            dialect: Dialect::Jax,
            allocator: Some(Allocator::Bfc),
            numbers: Numbers {
                request,
                request_unreadable,
                device: c.name("dev").and_then(|d| d.as_str().parse().ok()),
                op: EXECUTABLE.captures(line).map(|e| e["exe"].to_string()),
                ..Numbers::default()
            },
            start: c.get(0)?.start(),
            key: None,
            fault: None,
        });
    }
    let c = REQUEST.captures(line)?;
    let (request, request_unreadable) = size(&c["n"], parse_exact);
    Some(Event {
        kind: Kind::Complete,
        family: Family::Xla,
        dialect: Dialect::Jax,
        allocator: Some(Allocator::Platform),
        numbers: Numbers {
            request,
            request_unreadable,
            device: c["dev"].parse().ok(),
            ..Numbers::default()
        },
        start: c.get(0)?.start(),
        key: None,
        fault: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::sizes::Size;
    use super::*;

    #[test]
    fn each_wording() {
        for (l, n) in [
            (
                "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 7406166528 bytes.",
                7_406_166_528,
            ),
            (
                "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 7406166528 bytes.",
                7_406_166_528,
            ),
            (
                "RuntimeError: Resource exhausted: Out of memory while trying to allocate 5520758552 bytes.",
                5_520_758_552,
            ),
            (
                "E0528 12:00:00.000000 1 pjrt_stream_executor_client.cc:2826] Execution of replica 0 failed: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2110783616 bytes.",
                2_110_783_616,
            ),
        ] {
            let e = parse(l).unwrap();
            assert_eq!(e.numbers.request, Some(Size::exact(n)));
            assert_eq!(e.kind, Kind::Final);
        }
        let r = parse("RESOURCE_EXHAUSTED: Failed to allocate request for 154.06GiB (165425291480B) on device ordinal 0").unwrap();
        assert_eq!(r.numbers.request, Some(Size::exact(165_425_291_480)));
        assert_eq!(r.numbers.device, Some(0));
        assert_eq!(r.allocator, Some(Allocator::Platform));
    }

    #[test]
    fn jax_0_11_prints_a_human_size_the_allocator_and_the_device() {
        let e = parse("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.12GiB with allocator GPU_0_bfc on device 3. [executable_name='jit_broadcast_in_dim'] [tf-allocator-allocation-error='']").unwrap();
        assert_eq!(e.numbers.request, parse_human("1.12GiB"));
        assert_eq!(e.numbers.device, Some(3));
        assert_eq!(e.numbers.op.as_deref(), Some("jit_broadcast_in_dim"));
        assert_eq!(e.dialect, Dialect::Jax);
        assert_eq!(e.kind, Kind::Final);
    }

    #[test]
    fn host_memory_is_not_the_gpu() {
        assert!(
            parse("RESOURCE_EXHAUSTED: Out of host memory while trying to allocate 1024 bytes.")
                .is_none()
        );
    }
}
