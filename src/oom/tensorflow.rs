//! TensorFlow/XLA BFC allocator: the header of each era, the dump and `Stats:` block after it,
//! XLA's "Allocator memory summary", "OOM when allocating tensor", and cuda_malloc_async failures.

use std::sync::LazyLock;

use regex_lite::Regex;

use super::runs::run;
use super::sizes::{Size, parse_exact, parse_human, tensor_bytes};
use super::{Event, Family, Kind, cap, re};
use crate::oom::failure::{Allocator, Dialect, Numbers, Occupancy};

/// A size, or a run of digits too long to be one (`runs.rs`).
const HSIZE: &str = concat!(r"(?:[\d.]+|", run!(), r") ?[KMGTPE]?i?B");

static HEADER: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"Allocator \((?P<name>[^)]{{1,64}})\) ran out of memory trying to allocate (?P<h>{HSIZE})(?: \(rounded to (?P<rounded>\d+)\))?(?P<nofail> with freed_by_count=\d+)?"
    ))
});
static OP: LazyLock<Regex> = LazyLock::new(|| re(r"requested by op (?P<op>\S{1,200})"));
/// Logged from a JAX build (XLA vendored under `external/`).
static JAX_PATH: LazyLock<Regex> = LazyLock::new(|| re(r"external/(?:xla|tsl|org_tensorflow)/"));
static ORDINAL: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)gpu[_:](\d+)|_(\d+)$"));
static TENSOR: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"OOM when allocating tensor (?:with|of) shape ?\[(?P<shape>[\d,\s]{0,200})\] and type (?P<dtype>\w{1,20})(?: on (?P<dev>\S{1,200}))?(?: by allocator (?P<alloc>\S{1,64}))?|OOM when allocating tensor",
    )
});
static ASYNC: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?P<name>\S{1,64} )?(?:cuMemAllocAsync|cudaMallocAsync) failed to allocate (?P<n>\d+|",
        run!(),
        ")"
    ))
});
static ASYNC_FREE: LazyLock<Regex> =
    LazyLock::new(|| re(r"Free memory/Total memory: (?P<free>\d+)/(?P<total>\d+)"));
static POOL: LazyLock<Regex> = LazyLock::new(|| {
    re(r"Total bytes in pool: (?P<pool>\d+) memory_limit_: (?P<limit>\d+) available bytes: \d+")
});
static STAT: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"^\s*(?P<k>Limit|InUse|MaxInUse|NumAllocs|MaxAllocSize|Reserved|PeakReserved|LargestFreeBlock):\s+(?P<v>\d+|{HSIZE})\s*$"
    ))
});
static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"Allocator memory summary: rounded request (?P<r>{HSIZE}), total free in pool (?P<free>{HSIZE}), largest free chunk usable by \w+ end (?P<largest>{HSIZE}), unallocated bytes {HSIZE}, pool size (?P<pool>{HSIZE}), pool limit (?P<limit>{HSIZE})"
    ))
});
static CHUNK: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"Size: (?P<size>{HSIZE}) \| Requested Size: \S+ \| in_use: 0"
    ))
});
static FREE_CHUNK: LazyLock<Regex> =
    LazyLock::new(|| re(r"Free\s+at [0-9a-fA-F]+ of size (?P<n>\d+)"));
/// The occupancy map: 100 characters of `*`, `x` and `_` after the log prefix.
static OCCUPANCY: LazyLock<Regex> = LazyLock::new(|| re(r"(?:^|\] ?)(?P<map>[*_x]{20,400})\s*$"));
/// Other lines of a dump: they keep its window open.
static DUMP: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"bfc_allocator|cudamallocasync|BFCAllocator dump|Bin \(\d+\):|Bin for |Next region of size|InUse at [0-9a-fA-F]+|Chunks of size|Sum Total of in-use chunks|(?:^|\]) ?Stats:\s*$|Current allocation summary follows|environment variable 'TF_GPU_ALLOCATOR|[*_x]{20,}\s*$|Reported by CUDA|Error name:",
    )
});

fn num(text: &str) -> Option<Size> {
    parse_exact(text).or_else(|| parse_human(text))
}

fn ordinal_of(name: &str) -> Option<u32> {
    let c = ORDINAL.captures(name)?;
    c.get(1).or(c.get(2))?.as_str().parse().ok()
}

/// "Allocator (GPU_0_bfc) ran out of memory trying to allocate …", not the freed_by_count hint.
pub(super) fn header(line: &str) -> Option<Event> {
    let c = HEADER.captures(line)?;
    if c.name("nofail").is_some() || line.contains("not a failure") {
        return None;
    }
    let name = c.name("name").map_or("", |m| m.as_str());
    let rounded = c.name("rounded").and_then(|m| parse_exact(m.as_str()));
    let (human, request_unreadable) = super::runs::size(c.name("h")?.as_str(), parse_human);
    let request = rounded.or(human);
    let numbers = Numbers {
        request,
        request_unreadable: request_unreadable.filter(|_| request.is_none()),
        device: ordinal_of(name),
        op: OP.captures(line).map(|o| cap(&o["op"], 200)),
        ..Numbers::default()
    };
    let dialect = if JAX_PATH.is_match(line) {
        Dialect::Jax
    } else {
        Dialect::Tensorflow
    };
    Some(Event {
        kind: Kind::Header,
        family: Family::Bfc,
        dialect,
        allocator: Some(Allocator::Bfc),
        numbers,
        start: c.get(0)?.start(),
        key: None,
        fault: None,
    })
}

/// "<name> cuMemAllocAsync failed to allocate <n> bytes: …" (TF_GPU_ALLOCATOR=cuda_malloc_async).
pub(super) fn async_header(line: &str) -> Option<Event> {
    let c = ASYNC.captures(line)?;
    let name = c.name("name").map_or("", |m| m.as_str().trim());
    let (request, request_unreadable) = super::runs::size(&c["n"], parse_exact);
    Some(Event {
        kind: Kind::Header,
        family: Family::Async,
        dialect: Dialect::Tensorflow,
        allocator: Some(Allocator::CudaAsync),
        numbers: Numbers {
            request,
            request_unreadable,
            device: ordinal_of(name),
            ..Numbers::default()
        },
        start: c.get(0)?.start(),
        key: None,
        fault: None,
    })
}

/// "OOM when allocating tensor with shape[…] and type T on … by allocator …".
pub(super) fn tensor(line: &str) -> Option<Event> {
    let c = TENSOR.captures(line)?;
    let mut numbers = Numbers::default();
    let mut key = None;
    if let (Some(shape), Some(dtype)) = (c.name("shape"), c.name("dtype")) {
        let shape: String = shape
            .as_str()
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        numbers.request = tensor_bytes(&shape, dtype.as_str()).map(Size::exact);
        let spec = format!("shape[{shape}] {}", dtype.as_str());
        key = Some(spec.clone());
        numbers.tensor = Some(spec);
    }
    numbers.device = c
        .name("dev")
        .or(c.name("alloc"))
        .and_then(|m| ordinal_of(m.as_str()));
    Some(Event {
        kind: Kind::Final,
        family: Family::Bfc,
        dialect: Dialect::Tensorflow,
        allocator: Some(Allocator::Bfc),
        numbers,
        start: c.get(0)?.start(),
        key,
        fault: None,
    })
}

/// Takes the numbers a line of a dump carries; true when the line belongs to a dump.
pub(super) fn absorb(n: &mut Numbers, line: &str) -> bool {
    if let Some(c) = POOL.captures(line) {
        n.pool = parse_exact(&c["pool"]);
        n.pool_limit = parse_exact(&c["limit"]);
    } else if let Some(c) = STAT.captures(line) {
        let v = num(&c["v"]);
        match &c["k"] {
            "Limit" => n.pool_limit = n.pool_limit.or(v),
            "InUse" => n.in_use = v,
            "LargestFreeBlock" => {
                // Older dumps never filled it: 0 means "not known".
                if let Some(v) = v.filter(|v| v.bytes > 0) {
                    n.largest_free = Some(v);
                }
            }
            _ => {}
        }
    } else if let Some(c) = SUMMARY.captures(line) {
        n.request = n.request.or_else(|| parse_human(&c["r"]));
        n.pool_free = parse_human(&c["free"]);
        n.largest_free = parse_human(&c["largest"]);
        n.pool = parse_human(&c["pool"]);
        n.pool_limit = parse_human(&c["limit"]);
    } else if let Some(c) = CHUNK.captures(line) {
        larger(&mut n.largest_free, parse_human(&c["size"]));
    } else if let Some(c) = FREE_CHUNK.captures(line) {
        larger(&mut n.largest_free, parse_exact(&c["n"]));
    } else if let Some(c) = ASYNC_FREE.captures(line) {
        n.free = parse_exact(&c["free"]);
        n.total = parse_exact(&c["total"]);
    } else if let Some(c) = OCCUPANCY.captures(line) {
        n.occupancy = n.occupancy.or_else(|| Occupancy::read(&c["map"]));
    } else {
        return DUMP.is_match(line);
    }
    true
}

fn larger(slot: &mut Option<Size>, v: Option<Size>) {
    if let Some(v) = v
        && slot.is_none_or(|s| v.bytes > s.bytes)
    {
        *slot = Some(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_of_each_era() {
        let tf1 = header("Allocator (GPU_0_bfc) ran out of memory trying to allocate 286.00MiB.  Current allocation summary follows.").unwrap();
        assert_eq!(tf1.numbers.request, parse_human("286.00MiB"));
        assert_eq!(tf1.numbers.device, Some(0));
        let tf115 = header("Allocator (GPU_0_bfc) ran out of memory trying to allocate 216.8KiB (rounded to 221952).  Current allocation summary follows.").unwrap();
        assert_eq!(tf115.numbers.request, Some(Size::exact(221_952)));
        let early = header("Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00MiB (rounded to 1048576)requested by op conv4_block2_3_conv/kernel/Regularizer/Square").unwrap();
        assert_eq!(
            early.numbers.op.as_deref(),
            Some("conv4_block2_3_conv/kernel/Regularizer/Square")
        );
        let late = header("W tensorflow/tsl/framework/bfc_allocator.cc:485] Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.07GiB (rounded to 3300000000)requested by op _EagerConst").unwrap();
        assert_eq!(late.numbers.request, Some(Size::exact(3_300_000_000)));
        assert_eq!(late.dialect, Dialect::Tensorflow);
        let xla = header("W external/xla/xla/tsl/framework/bfc_allocator.cc:512] Allocator (GPU_1_bfc) ran out of memory trying to allocate 2.00GiB (rounded to 2147483648) from the high end requested by op ").unwrap();
        assert_eq!(xla.dialect, Dialect::Jax);
        assert_eq!(xla.numbers.device, Some(1));
    }

    #[test]
    fn freed_by_count_is_not_a_failure() {
        assert!(header("W bfc_allocator.cc:243] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.25GiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean that there could be performance gains if more memory were available.").is_none());
    }

    #[test]
    fn dump_lines() {
        let mut n = Numbers::default();
        for l in [
            "I tensorflow/tsl/framework/bfc_allocator.cc:1039] BFCAllocator dump for GPU_0_bfc",
            "I ...:1068]   Size: 1.75GiB | Requested Size: 392.00MiB | in_use: 0 | bin_num: 20, prev:   Size: 786.78MiB | Requested Size: 786.78MiB | in_use: 1 | bin_num: -1",
            "I ...:1068]   Size: 3.03GiB | Requested Size: 488.28MiB | in_use: 0 | bin_num: 20, prev: ...",
            "I ...:1109] Total bytes in pool: 40231108608 memory_limit_: 40231108608 available bytes: 0 curr_region_allocation_bytes_: 80462217216",
            "I ...:1114] Stats: ",
            "Limit:                     40231108608",
            "InUse:                     31785630720",
            "NumAllocs:                    21974606",
            "LargestFreeBlock:                    0",
        ] {
            assert!(absorb(&mut n, l), "{l}");
        }
        assert_eq!(n.pool, Some(Size::exact(40_231_108_608)));
        assert_eq!(n.in_use, Some(Size::exact(31_785_630_720)));
        assert_eq!(n.largest_free, parse_human("3.03GiB"));
        assert!(!absorb(&mut n, "Epoch 3/10"));
        assert!(absorb(
            &mut n,
            "W1122 03:29:27.016873     598 bfc_allocator.cc:609] ******************************____________________"
        ));
        assert_eq!(
            n.occupancy.map(|o| (o.used_pct, o.free_runs)),
            Some((60, 1))
        );
    }

    #[test]
    fn xla_summary_and_human_stats() {
        let mut n = Numbers::default();
        assert!(absorb(
            &mut n,
            "Allocator memory summary: rounded request 2.00GiB, total free in pool 3.10GiB, largest free chunk usable by high end 1.20GiB, unallocated bytes 0B, pool size 37.47GiB, pool limit 37.47GiB"
        ));
        assert!(absorb(&mut n, "InUse:            34.37GiB"));
        assert!(absorb(
            &mut n,
            "Allocator region growth hint: next region allocation target 0B (growth disabled; fixed-size pool; not an attempted allocation). bfc_allocator.cc"
        ));
        assert_eq!(n.pool_free, parse_human("3.10GiB"));
        assert_eq!(n.largest_free, parse_human("1.20GiB"));
        assert_eq!(n.in_use, parse_human("34.37GiB"));
    }

    #[test]
    fn tensor_lines() {
        let e = tensor("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[4,2048,128,128] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc").unwrap();
        assert_eq!(
            e.numbers.request,
            Some(Size::exact(4 * 2048 * 128 * 128 * 4))
        );
        assert_eq!(e.numbers.device, Some(0));
        assert_eq!(e.key.as_deref(), Some("shape[4,2048,128,128] float"));
        let op = tensor("W op_kernel.cc:1830] OP_REQUIRES failed at conv_ops.cc:446 : Resource exhausted: OOM when allocating tensor with shape[8,64,224,224] and type half on /job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc").unwrap();
        assert_eq!(
            op.numbers.request,
            Some(Size::exact(8 * 64 * 224 * 224 * 2))
        );
        assert_eq!(op.numbers.device, Some(1));
        let cut = tensor("Resource exhausted: OOM when allocating tensor with shape[4,20").unwrap();
        assert_eq!(cut.numbers.request, None);
    }

    #[test]
    fn cuda_malloc_async() {
        let e = async_header("E gpu_cudamallocasync_allocator.cc:288] gpu_async_0 cuMemAllocAsync failed to allocate 4294967296 bytes: CUDA error: out of memory (CUDA_ERROR_OUT_OF_MEMORY)").unwrap();
        assert_eq!(e.numbers.request, Some(Size::exact(4_294_967_296)));
        assert_eq!(e.numbers.device, Some(0));
        let mut n = e.numbers;
        assert!(absorb(
            &mut n,
            " Reported by CUDA: Free memory/Total memory: 1073741824/85899345920"
        ));
        assert_eq!(n.free, Some(Size::exact(1_073_741_824)));
        let old = async_header("cudaMallocAsync failed to allocate 1048576").unwrap();
        assert_eq!(old.numbers.request, Some(Size::exact(1_048_576)));
    }
}
