//! An OOM at the end of a leak is named a leak with the leak remedy, from NVML's device memory
//! alone when the process runs without the probe; one large request after flat memory is not.

use crate::analysis::test_pools::{Second, T0, run};
use crate::model::{Alert, Level};
use crate::oom::parse_all;
use crate::sample::Framework;
use crate::source::scripted::build::{GIB, MIB, gpu, process};

/// An unprobed PyTorch job (pid 430) alone on an 80 GiB GPU whose device memory follows
/// `held(second)` for `secs` seconds, failing at the last one with `oom`.
fn unprobed(secs: u64, held: impl Fn(u64) -> u64, oom: &str) -> Alert {
    run((0..secs).map(|k| {
        let h = held(k);
        let g = gpu(0, 80 * GIB, (h + 300 * MIB).min(80 * GIB), 0);
        let p = process(430, &g, h, Framework::Pytorch, "python3 train.py");
        let at = T0 + k * 1000;
        let failures = if k + 1 == secs {
            vec![
                parse_all(oom.as_bytes())
                    .remove(0)
                    .into_failure(at, "train.out", Some(430)),
            ]
        } else {
            Vec::new()
        };
        Second {
            failures,
            ..(g, vec![p]).into()
        }
    }))
    .into_iter()
    .rfind(|a| a.level == Level::Failure)
    .expect("a failure alert")
}

const FULL: &str = "CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 212.00 MiB is free. Of the allocated memory 77.50 GiB is allocated by PyTorch, and 10.00 MiB is reserved by PyTorch but unallocated.";

#[test]
fn an_unprobed_leak_to_a_full_gpu_is_named_a_leak_with_the_leak_remedy() {
    // 1 GiB more every step (a step a second), never released, until the GPU is full.
    let a = unprobed(76, |k| 2 * GIB + k * GIB, FULL);
    assert_eq!(a.class, "device-full");
    assert!(
        a.title
            .starts_with("pid 430 PyTorch OOM: device-full after a leak"),
        "{}",
        a.title
    );
    assert!(
        a.evidence[0].starts_with("a leak: its device memory (NVML; no allocator probe) rose from"),
        "{:?}",
        a.evidence
    );
    let remedy = a.remedy.as_deref().unwrap();
    assert!(
        remedy.starts_with("Find what keeps memory alive from step to step in pid 430"),
        "{remedy}"
    );
    assert!(!remedy.contains("Reduce the batch"), "{remedy}");
}

#[test]
fn one_large_request_after_flat_memory_is_not_a_leak() {
    // 40 GiB held for a minute, then a request the GPU cannot give.
    let oom = "CUDA out of memory. Tried to allocate 60.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 38.00 GiB is free. Of the allocated memory 39.50 GiB is allocated by PyTorch, and 10.00 MiB is reserved by PyTorch but unallocated.";
    let a = unprobed(
        70,
        |k| if k < 3 { (k + 1) * 10 * GIB } else { 40 * GIB },
        oom,
    );
    assert_eq!(a.class, "device-full");
    assert!(!a.title.contains("leak"), "{}", a.title);
    assert!(
        a.remedy.as_deref().unwrap().starts_with("Reduce the batch"),
        "{:?}",
        a.remedy
    );
    // A warm-up that climbed and then plateaued a minute before the failure: no leak either.
    let a = unprobed(130, |k| (4 + k.min(30)) * GIB, oom);
    assert!(!a.title.contains("leak"), "{}", a.title);
}

/// A leak that fragments, from the real figures: a GPT-2 (batch 8x512) whose helper keeps
/// `logits[:, -8:, :].clone()` every step, 13 MB a step at 15 steps a second, under a 16 GiB cap;
/// the kept slices sit between activation blocks and strand the segments around them, 2.12 GiB
/// at the failure, a 786 MiB request (one step's logits); its block map at the OOM names the
/// keeping line, 7.99 GiB in 667 blocks. Readings as the probe reads a busy loop: two in three at
/// the sync point between steps, one anywhere inside a step (up to 4.5 GB of temporaries).
mod leak_that_fragments {
    use crate::analysis::test_pools::{Second, T0, probed, run, torch};
    use crate::model::{Alert, Level};
    use crate::oom::parse_all;
    use crate::sample::pool_map::{MapOom, MapReason};
    use crate::sample::{Pool, PoolMap, ProbeNews};
    use crate::source::scripted::build::{GIB, MIB, gpu};
    use crate::source::scripted::maps::{fragmented, site};

    const PID: u32 = 4711;
    const MB: u64 = 1_000_000;
    const CAP: u64 = 16 * GIB;
    /// The seconds from its first step to the failure (667 steps at 15 a second).
    const SECS: u64 = 45;
    const OOM: &str = "CUDA out of memory. Tried to allocate 786.00 MiB. GPU 0 has a total capacity of 79.18 GiB of which 62.90 GiB is free. Including non-PyTorch memory, this process has 16.27 GiB memory in use. 16.00 GiB allowed; Of the allocated memory 13.61 GiB is allocated by PyTorch, and 2.12 GiB is reserved by PyTorch but unallocated.";

    fn noise(k: u64) -> u64 {
        (k.wrapping_mul(2_654_435_761) >> 7) % 1000
    }

    /// Allocated at second `k`: the floor (weights, AdamW's state, the kept slices) and, one
    /// reading in three, part of a step's temporaries; else the logits held at the sync point.
    fn allocated(k: u64, leak_per_s: u64) -> u64 {
        let floor = 1_000 * MB + k * leak_per_s;
        if noise(k) < 333 {
            floor + 4_500 * MB * noise(k + 17) / 1000
        } else {
            floor + 8 * 512 * 50_257 * 4
        }
    }

    fn pool(k: u64, leak_per_s: u64, stranded_per_s: u64) -> Pool {
        let stranded = 200 * MB + k * stranded_per_s;
        let held = 1_000 * MB + k * leak_per_s + 4_500 * MB + stranded;
        Pool {
            at_ms: T0 + k * 1000,
            ..torch(
                allocated(k, leak_per_s),
                held.max(allocated(k, leak_per_s) + stranded),
                stranded,
                Some(160 * MIB),
                Some(CAP),
            )
        }
    }

    /// The job's map at second `k`: the keeping line holds what was kept so far.
    fn map(k: u64, uuid: &str) -> PoolMap {
        let mut m = fragmented(PID, uuid, T0 + k * 1000, 64);
        m.start_time = 1_763_800_000 + u64::from(PID);
        let blocks = k * 667 / SECS;
        m.frameworks[0].devices[0].sites.as_mut().unwrap()[0] = site(
            "/home/ana/gpt2/keepers.py",
            11,
            "remember",
            blocks,
            799 * GIB / 100 * blocks / 667,
        );
        m
    }

    fn news(m: PoolMap) -> ProbeNews {
        ProbeNews {
            pid: PID,
            start_time: m.start_time,
            answer: None,
            recording: None,
            map: Some(Box::new(m)),
            end: None,
            main_where: None,
        }
    }

    /// The run's alerts: a leak of `leak_per_s` (13 MB x 15 steps) stranding `stranded_per_s`.
    fn alerts(leak_per_s: u64, stranded_per_s: u64, with_maps: bool) -> Vec<Alert> {
        run((0..=SECS).map(|k| {
            let p = pool(k, leak_per_s, stranded_per_s);
            let held = p.reserved.unwrap() + 512 * MIB;
            let g = gpu(0, 80 * GIB, held + GIB, 0);
            let mut second: Second = (g.clone(), vec![probed(PID, &g, held, p)]).into();
            second.processes[0].start_time =
                crate::sample::Reading::Value(1_763_800_000 + u64::from(PID));
            if with_maps && k == 25 {
                let mut m = map(k, &g.uuid);
                m.reason = MapReason::Alert;
                second.probes = vec![news(m)];
            }
            if k == SECS {
                if with_maps {
                    let mut m = map(k, &g.uuid);
                    m.reason = MapReason::Oom;
                    m.oom = Some(MapOom {
                        device: 0,
                        request: 786 * MIB,
                        device_allocated: None,
                        device_free: None,
                    });
                    second.probes = vec![news(m)];
                }
                second.failures = vec![parse_all(OOM.as_bytes()).remove(0).into_failure(
                    T0 + k * 1000,
                    "train.log",
                    Some(PID),
                )];
            }
            second
        }))
    }

    #[test]
    fn the_oom_is_a_leak_first_with_fragmentation_second_and_the_kept_line_as_remedy() {
        let all = alerts(195 * MB, 47 * MB, true);
        let f = all.iter().rfind(|a| a.level == Level::Failure).unwrap();
        assert_eq!(f.class, "leak", "{f:#?}");
        assert!(
            f.title.starts_with("pid 4711 PyTorch OOM: leak, +1")
                && f.title.contains(" kept from step to step; then fragmentation: asked 786.00 MiB, 2.12 GiB stranded in the cache (expandable segments would have bought about 1"),
            "{}",
            f.title
        );
        assert!(
            f.evidence[0].starts_with("a leak: the floor of its allocated memory"),
            "{:#?}",
            f.evidence
        );
        assert!(
            f.evidence[1].starts_with(
                "fragmentation second: the blocks it keeps split the pool, 2.12 GiB stranded"
            ),
            "{:#?}",
            f.evidence
        );
        let remedy = f.remedy.as_deref().unwrap();
        assert!(
            remedy.starts_with("Find what keeps memory alive from step to step in pid 4711, starting at gpt2/keepers.py:11 remember (7.99 GiB, 667 blocks)"),
            "{remedy}"
        );
        assert!(
            remedy.ends_with("would only buy about 1") || remedy.contains("would only buy about 1"),
            "{remedy}"
        );
        // The warning before it: a leak, never fragmentation-risk, well ahead of the failure.
        let warned: Vec<&Alert> = all.iter().filter(|a| a.level == Level::Suspected).collect();
        assert!(
            warned.iter().all(|a| a.class != "fragmentation-risk"),
            "{warned:#?}"
        );
        let leak = warned
            .iter()
            .find(|a| a.class == "leak")
            .expect("a leak warning");
        assert!(
            f.at_ms - leak.at_ms >= 25_000,
            "warned {} s ahead",
            (f.at_ms - leak.at_ms) / 1000
        );
    }

    #[test]
    fn without_maps_the_remedy_says_where_to_look() {
        let all = alerts(195 * MB, 47 * MB, false);
        let f = all.iter().rfind(|a| a.level == Level::Failure).unwrap();
        assert_eq!(f.class, "leak");
        assert!(
            f.remedy.as_deref().unwrap().starts_with("Find what keeps memory alive from step to step in pid 4711: outputs or losses kept in a list"),
            "{:?}",
            f.remedy
        );
    }

    #[test]
    fn the_same_failure_over_a_flat_floor_is_fragmentation() {
        // Nothing kept: the floor stays where it is, only the stranded part grows.
        let all = alerts(0, 47 * MB, false);
        let f = all.iter().rfind(|a| a.level == Level::Failure).unwrap();
        assert_eq!(f.class, "fragmentation", "{f:#?}");
        assert!(
            f.remedy
                .as_deref()
                .unwrap()
                .starts_with("Set PYTORCH_ALLOC_CONF=expandable_segments:True")
        );
        assert!(all.iter().all(|a| a.class != "leak"), "{all:#?}");
    }
}
