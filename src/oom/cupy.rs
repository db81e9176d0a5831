//! CuPy's `OutOfMemoryError`, with and without "limit set to".

use std::sync::LazyLock;

use regex_lite::Regex;

use super::runs::{run, size};
use super::sizes::parse_exact;
use super::{Event, Family, Kind, re};
use crate::oom::failure::{Allocator, Dialect, Numbers};

static OOM: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"Out of memory allocating (?P<n>[\d,]{1,30}|",
        run!(),
        r") bytes(?: \(allocated so far: (?P<t>[\d,]{1,30}) bytes(?:, limit set to: (?P<l>[\d,]{1,30}) bytes)?\))?",
    ))
});

pub(super) fn parse(line: &str) -> Option<Event> {
    let c = OOM.captures(line)?;
    let get = |k: &str| c.name(k).and_then(|m| parse_exact(m.as_str()));
    let (request, request_unreadable) = size(&c["n"], parse_exact);
    Some(Event {
        kind: Kind::Complete,
        family: Family::Cupy,
        dialect: Dialect::Cupy,
        allocator: Some(Allocator::CupyPool),
        numbers: Numbers {
            request,
            request_unreadable,
            pool: get("t"),
            pool_limit: get("l"),
            ..Numbers::default()
        },
        start: c.get(0)?.start(),
        key: Some(c.get(0)?.as_str().to_string()),
        fault: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::sizes::Size;
    use super::*;

    #[test]
    fn with_and_without_limit() {
        let a = parse("cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,073,741,824 bytes (allocated so far: 3,221,225,472 bytes).").unwrap();
        assert_eq!(a.numbers.request, Some(Size::exact(1_073_741_824)));
        assert_eq!(a.numbers.pool, Some(Size::exact(3_221_225_472)));
        assert_eq!(a.numbers.pool_limit, None);
        let b = parse("cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 512 bytes (allocated so far: 1,024 bytes, limit set to: 1,500 bytes).").unwrap();
        assert_eq!(b.numbers.pool_limit, Some(Size::exact(1500)));
        let c = parse("cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 2,048 bytes.")
            .unwrap();
        assert_eq!(c.numbers.pool, None);
    }
}
