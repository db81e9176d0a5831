//! PyTorch CUDA caching-allocator messages: the current wording, 2.1 "capacty", the parenthesised
//! ≤2.0 form, ≤1.4 "cached", and the numberless 0.x THC error.

use std::sync::LazyLock;

use regex_lite::Regex;

use super::runs::run;
use super::sizes::parse_human;
use super::{Event, Family, Kind, re};
use crate::oom::failure::{Allocator, Dialect, Holder, Numbers};

/// A size, or a run of digits too long to be one (`runs.rs`: no size).
const SIZE: &str = concat!(
    r"(?:[\d.]+|",
    run!(),
    r") (?:bytes|KiB|MiB|GiB|TiB|PiB|EiB)"
);
/// A request as printed, readable or not: a size the caller computed wrong prints as
/// `-5.00 GiB`, `1e308 GiB`, `NaN GiB` or `16.00 EiB`, or as digits too many to be read (a
/// collapsed run, its unit perhaps cut off with the line).
const REQ: &str = concat!(
    r"(?:[-+]?(?:[\d.]+(?:[eE][-+]?\d+)?|[Nn]a[Nn]|[Ii]nf(?:inity)?) (?:bytes|KiB|MiB|GiB|TiB|PiB|EiB)|",
    run!(),
    r"(?: (?:bytes|KiB|MiB|GiB|TiB|PiB|EiB))?)"
);
/// A GPU's number (a run too long to be one is read as none).
const DEV: &str = concat!(r"(?:\d+|", run!(), ")");
/// Process entries kept from one message.
const MAX_HOLDERS: usize = 32;

static NEW: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?:(?:CUDA|XPU) out|Out) of memory\. Tried to allocate (?P<req>{REQ})\. (?:GPU|Device) (?P<dev>{DEV}) has a total capac(?:i)?ty of (?P<total>{SIZE}) of which (?P<free>{SIZE}) ?is free\."
    ))
});
static ALLOWED: LazyLock<Regex> = LazyLock::new(|| re(&format!(r"(?P<allowed>{SIZE}) allowed;")));
static ALLOC: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"Of the allocated memory (?P<alloc>{SIZE}) is allocated by PyTorch, (?:with (?P<priv>{SIZE}) allocated in private pools \(e\.g\., CUDA Graphs\), )?and (?P<ru>{SIZE}) is reserved by PyTorch but unallocated"
    ))
});
static PROC: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?:Including non-PyTorch memory, this process|Process (?P<pid>\d+)) has (?P<used>{SIZE}) memory in use"
    ))
});
static OLD: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"Tried to allocate (?P<req>{REQ}) \(GPU (?P<dev>{DEV}); (?P<total>{SIZE}) total capacity; (?P<alloc>{SIZE}) already allocated; (?P<free>{SIZE}) free; (?:(?P<allowed>{SIZE}) allowed; )?(?P<res>{SIZE}) (?P<kind>reserved in total by PyTorch|cached)\)"
    ))
});
/// Whatever survives of a truncated message.
static BARE: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?:(?:CUDA|XPU) out|Out|out) of memory\. Tried to allocate (?P<req>{REQ})(?:\.? \(?(?:GPU|Device) (?P<dev>{DEV}))?"
    ))
});
/// PyTorch's own check on a request of an exabyte or more (`size < one_exa_bytes`).
static EXA: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?:(?:CUDA|XPU) out|Out|out) of memory\. Tried to allocate more than 1EB memory")
});
static THC: LazyLock<Regex> = LazyLock::new(|| re(r"cuda runtime error \(2\) : out of memory"));

fn size(c: &regex_lite::Captures, name: &str) -> Option<super::sizes::Size> {
    c.name(name).and_then(|m| parse_human(m.as_str()))
}

/// The request and, when it was printed but is no readable size, its text.
fn request(c: &regex_lite::Captures) -> (Option<super::sizes::Size>, Option<String>) {
    let Some(text) = c.name("req").map(|m| m.as_str()) else {
        return (None, None);
    };
    match parse_human(text) {
        Some(s) => (Some(s), None),
        None => (None, Some(text.to_string())),
    }
}

fn ordinal(c: &regex_lite::Captures) -> Option<u32> {
    c.name("dev").and_then(|m| m.as_str().parse().ok())
}

pub(super) fn parse(line: &str) -> Option<Event> {
    let (start, numbers) = if let Some(c) = NEW.captures(line) {
        let (request, request_unreadable) = request(&c);
        let mut n = Numbers {
            request,
            request_unreadable,
            device: ordinal(&c),
            total: size(&c, "total"),
            free: size(&c, "free"),
            allowed: ALLOWED.captures(line).and_then(|a| size(&a, "allowed")),
            ..Numbers::default()
        };
        if let Some(a) = ALLOC.captures(line) {
            n.allocated = size(&a, "alloc");
            n.private_pools = size(&a, "priv");
            n.cached = size(&a, "ru");
        }
        n.holders = PROC
            .captures_iter(line)
            .take(MAX_HOLDERS)
            .filter_map(|p| {
                Some(Holder {
                    pid: p.name("pid").and_then(|m| m.as_str().parse().ok()),
                    used: size(&p, "used")?,
                })
            })
            .collect();
        (c.get(0)?.start(), n)
    } else if let Some(c) = OLD.captures(line) {
        // "<n> cached" (≤1.4) is already the cache's unallocated part (cached − allocated):
        // allocated + cached + free add up to the GPU in real logs.
        let res = size(&c, "res");
        let old_cache = c.name("kind").is_some_and(|k| k.as_str() == "cached");
        let (cached, reserved) = if old_cache { (res, None) } else { (None, res) };
        let (request, request_unreadable) = request(&c);
        let n = Numbers {
            request,
            request_unreadable,
            device: ordinal(&c),
            total: size(&c, "total"),
            free: size(&c, "free"),
            allocated: size(&c, "alloc"),
            cached,
            reserved,
            allowed: size(&c, "allowed"),
            ..Numbers::default()
        };
        (start_of_phrase(line, c.get(0)?.start()), n)
    } else if let Some(m) = EXA.find(line) {
        // An exabyte or more: no size a program means, as a negative one is not.
        let n = Numbers {
            request_unreadable: Some("more than 1EB".into()),
            ..Numbers::default()
        };
        (m.start(), n)
    } else if let Some(c) = BARE.captures(line) {
        let (request, request_unreadable) = request(&c);
        let n = Numbers {
            request,
            request_unreadable,
            device: ordinal(&c),
            ..Numbers::default()
        };
        (c.get(0)?.start(), n)
    } else {
        (THC.find(line)?.start(), Numbers::default())
    };
    Some(Event {
        kind: Kind::Complete,
        family: Family::Pytorch,
        dialect: Dialect::Pytorch,
        allocator: Some(Allocator::Caching),
        numbers,
        start,
        key: Some(line.get(start..).unwrap_or_default().trim().to_string()),
        fault: None,
    })
}

/// Moves back to "CUDA out of memory." before "Tried to allocate" in the old wording.
fn start_of_phrase(line: &str, at: usize) -> usize {
    line.get(..at)
        .and_then(|head| head.rfind("out of memory"))
        .map_or(at, |i| {
            line.get(..i)
                .and_then(|h| h.strip_suffix("CUDA "))
                .map_or(i, str::len)
        })
}

#[cfg(test)]
mod tests {
    use super::super::sizes::{Size, parse_human};
    use super::*;

    fn gib(s: &str) -> Option<Size> {
        parse_human(s)
    }

    const CURRENT: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 19.68 GiB. GPU 0 has a total capacity of 23.68 GiB of which 11.88 GiB is free. Including non-PyTorch memory, this process has 11.79 GiB memory in use. Of the allocated memory 11.44 GiB is allocated by PyTorch, and 43.59 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";

    #[test]
    fn current_wording() {
        let e = parse(CURRENT).unwrap();
        let n = e.numbers;
        assert_eq!(n.request, gib("19.68 GiB"));
        assert_eq!(n.device, Some(0));
        assert_eq!(n.total, gib("23.68 GiB"));
        assert_eq!(n.free, gib("11.88 GiB"));
        assert_eq!(n.allocated, gib("11.44 GiB"));
        assert_eq!(n.cached, gib("43.59 MiB"));
        assert_eq!(
            n.holders,
            vec![Holder {
                pid: None,
                used: gib("11.79 GiB").unwrap()
            }]
        );
        assert!(CURRENT[e.start..].starts_with("CUDA out of memory"));
    }

    #[test]
    fn capacty_typo_with_other_process() {
        let l = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 496.00 MiB. GPU 0 has a total capacty of 14.75 GiB of which 235.06 MiB is free. Process 20398 has 14.52 GiB memory in use. Of the allocated memory 14.06 GiB is allocated by PyTorch, and 330.42 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF";
        let n = parse(l).unwrap().numbers;
        assert_eq!(n.request, gib("496.00 MiB"));
        assert_eq!(n.free, gib("235.06 MiB"));
        assert_eq!(n.holders[0].pid, Some(20398));
        assert_eq!(n.cached, gib("330.42 MiB"));
    }

    #[test]
    fn private_pools_allowed_and_xpu() {
        let l = "Out of memory. Tried to allocate 2.00 GiB. Device 1 has a total capacity of 79.10 GiB of which 1.50 GiB is free. Process 7 has 70.00 GiB memory in use. 40.00 GiB allowed; Of the allocated memory 38.00 GiB is allocated by PyTorch, with 4.00 GiB allocated in private pools (e.g., CUDA Graphs), and 1.00 GiB is reserved by PyTorch but unallocated.";
        let n = parse(l).unwrap().numbers;
        assert_eq!(n.device, Some(1));
        assert_eq!(n.allowed, gib("40.00 GiB"));
        assert_eq!(n.private_pools, gib("4.00 GiB"));
        assert_eq!(n.cached, gib("1.00 GiB"));
        let x = "XPU out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 1.00 GiB of which 0 bytes is free. Of the allocated memory";
        assert_eq!(parse(x).unwrap().numbers.free, Some(Size::exact(0)));
    }

    #[test]
    fn parenthesised_and_cached_forms() {
        let l = "RuntimeError: CUDA out of memory. Tried to allocate 5.74 GiB (GPU 0; 5.50 GiB total capacity; 588.00 MiB already allocated; 4.13 GiB free; 588.00 MiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF";
        let e = parse(l).unwrap();
        assert_eq!(e.numbers.reserved, gib("588.00 MiB"));
        assert_eq!(e.numbers.allocated, gib("588.00 MiB"));
        assert!(l[e.start..].starts_with("CUDA out of memory"));
        let c = "RuntimeError: CUDA out of memory. Tried to allocate 2.56 GiB (GPU 0; 15.90 GiB total capacity; 10.38 GiB already allocated; 1.83 GiB free; 2.99 GiB cached)";
        let n = parse(c).unwrap().numbers;
        assert_eq!(n.cached, gib("2.99 GiB"));
        assert_eq!(n.reserved, None);
        assert_eq!(n.free, gib("1.83 GiB"));
        let a = "CUDA out of memory. Tried to allocate 1.00 GiB (GPU 0; 8.00 GiB total capacity; 5.00 GiB already allocated; 1.50 GiB free; 6.00 GiB allowed; 6.00 GiB reserved in total by PyTorch)";
        assert_eq!(parse(a).unwrap().numbers.allowed, gib("6.00 GiB"));
    }

    #[test]
    fn numberless_and_truncated() {
        let thc = "RuntimeError: cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/generic/THCStorage.cu:58";
        assert!(parse(thc).unwrap().numbers.is_empty());
        let cut = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 19.68 GiB. GPU 0 has a tot";
        let n = parse(cut).unwrap().numbers;
        assert_eq!(n.request, gib("19.68 GiB"));
        assert_eq!(n.device, Some(0));
        assert!(parse("CUDA out of memory. Tried to allocate").is_none());
        assert!(parse("If reserved but unallocated memory is large try setting").is_none());
    }

    /// Issue 40: PyTorch's exabyte check is found, and a request no program means (negative,
    /// past 16 EiB, not a number) is kept as printed instead of read as no request.
    #[test]
    fn unreadable_requests_and_the_exabyte_check() {
        let exa =
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory.";
        let n = parse(exa).unwrap().numbers;
        assert_eq!(n.request_unreadable.as_deref(), Some("more than 1EB"));
        for req in ["-5.00 GiB", "1e308 GiB", "NaN GiB", "16.00 EiB", "inf GiB"] {
            let line = format!(
                "CUDA out of memory. Tried to allocate {req}. GPU 0 has a total capacity of 79.19 GiB of which 1.00 GiB is free."
            );
            let n = parse(&line).unwrap().numbers;
            assert_eq!(n.request, None, "{req}");
            assert_eq!(n.request_unreadable.as_deref(), Some(req));
            assert_eq!(n.total, gib("79.19 GiB"), "the rest is read");
        }
        let big = "CUDA out of memory. Tried to allocate 15.00 EiB. GPU 0 has a total capacity of 79.19 GiB of which 1.00 GiB is free.";
        assert_eq!(parse(big).unwrap().numbers.request, gib("15.00 EiB"));
    }
}
