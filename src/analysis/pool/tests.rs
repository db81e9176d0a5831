//! Probe alerts from scripted sequences of pool figures: each fires on the numbers that make it,
//! and none fires on a healthy pool.

use crate::analysis::test_pools::{Second, T0, jax, probed, run, torch};
use crate::model::{Alert, Config, Event, Level, Machine};
use crate::pipeline;
use crate::sample::{Framework, GpuSample, Pool, ProbeNews, Sample};
use crate::source::scripted::build::{GIB, MIB, gpu, process};

fn classes(alerts: &[Alert]) -> Vec<&str> {
    alerts.iter().map(|a| a.class.as_str()).collect()
}

#[test]
fn a_torch_cache_splitting_into_small_blocks_warns_before_the_oom() {
    let g = gpu(0, 80 * GIB, 20 * GIB, GIB / 2);
    // The verified pattern: stranded bytes climb while the largest free block stays 8 MiB, in a
    // pool capped at 4.5 GiB, so it cannot grow around its holes.
    let frag = |cap: Option<u64>| -> Vec<_> {
        [(200, 2000), (400, 2600), (2304, 4300)]
            .into_iter()
            .map(|(stranded, reserved)| {
                let p = torch(
                    (reserved - stranded) * MIB,
                    reserved * MIB,
                    stranded * MIB,
                    Some(8 * MIB),
                    cap,
                );
                (
                    g.clone(),
                    vec![probed(873, &g, reserved * MIB + 500 * MIB, p)],
                )
            })
            .collect()
    };
    let seq = frag(Some(4608 * MIB));
    let first_two = run(seq[..2].to_vec());
    assert!(classes(&first_two).is_empty(), "{first_two:?}");
    // Without a cap, on a GPU with 59 GiB free, the pool grows around its holes: no risk.
    let uncapped = run(frag(None));
    assert!(classes(&uncapped).is_empty(), "{uncapped:?}");
    let alerts = run(seq);
    assert_eq!(classes(&alerts), vec!["fragmentation-risk"]);
    let a = &alerts[0];
    assert_eq!((a.pid, a.level), (Some(873), Level::Suspected));
    assert!(
        a.title
            .contains("2.25 GiB free in the pool, but its largest free block is 8.00 MiB"),
        "{}",
        a.title
    );
    assert!(
        a.evidence
            .iter()
            .any(|e| e == "stranded in split blocks: 2.25 GiB"),
        "{:?}",
        a.evidence
    );
    assert!(
        a.remedy
            .as_deref()
            .unwrap()
            .contains("expandable_segments:True")
    );
}

#[test]
fn a_healthy_pool_raises_nothing() {
    let g = gpu(0, 80 * GIB, 20 * GIB, 40 * GIB);
    let seq = (0..5).map(|k| {
        let p = torch(
            8 * GIB + k * 200 * MIB,
            10 * GIB,
            100 * MIB,
            Some(GIB),
            None,
        );
        (g.clone(), vec![probed(873, &g, 11 * GIB, p)])
    });
    assert!(run(seq).is_empty());
}

#[test]
fn climbing_allocation_retries_are_a_fragmentation_risk() {
    let g = gpu(0, 80 * GIB, 20 * GIB, 40 * GIB);
    // Capped at 8.5 GiB: the pool cannot grow around its 2.5 GiB of stranded blocks.
    let seq = |retries: &[u64]| -> Vec<_> {
        retries
            .iter()
            .map(|r| {
                let p = Pool {
                    alloc_retries: Some(*r),
                    ..torch(
                        5 * GIB + 512 * MIB,
                        8 * GIB,
                        2 * GIB + 512 * MIB,
                        Some(2 * GIB),
                        Some(8 * GIB + 512 * MIB),
                    )
                };
                (g.clone(), vec![probed(873, &g, 9 * GIB, p)])
            })
            .collect()
    };
    // One flush that succeeded is normal under a cap: no warning.
    let once = run(seq(&[0, 0, 1, 1, 1]));
    assert!(classes(&once).is_empty(), "{once:?}");
    let alerts = run(seq(&[0, 0, 1, 2]));
    assert_eq!(classes(&alerts), vec!["fragmentation-risk"]);
    assert!(
        alerts[0].title.contains(
            "retry 2 times in the last minute, with 2.50 GiB of its pool free but unusable"
        ),
        "{}",
        alerts[0].title
    );
    // Retries with the pool full say the GPU was full, not that the pool fragmented.
    let full = [0u64, 1].into_iter().map(|retries| {
        let p = Pool {
            alloc_retries: Some(retries),
            ..torch(4 * GIB, 4 * GIB + 100 * MIB, 0, Some(0), None)
        };
        (g.clone(), vec![probed(874, &g, 5 * GIB, p)])
    });
    assert!(run(full).is_empty());
}

#[test]
fn a_jax_pool_near_its_limit_is_named_with_its_numbers() {
    let g = gpu(0, 80 * GIB, 30 * GIB, 40 * GIB);
    let limit = 25_500 * MIB;
    let at = |in_use| (g.clone(), vec![probed(677, &g, limit, jax(in_use, limit))]);
    assert!(run(vec![at(12 * GIB), at(20 * GIB)]).is_empty());
    let alerts = run(vec![at(20 * GIB), at(24 * GIB)]);
    assert_eq!(classes(&alerts), vec!["pool-near-limit"]);
    assert!(
        alerts[0]
            .title
            .contains("at 96% of its limit (24.00 GiB of 24.90 GiB)"),
        "{}",
        alerts[0].title
    );
    assert!(alerts[0].remedy.as_deref().unwrap().contains("XLA"));
}

#[test]
fn cache_one_process_could_release_is_named_when_its_gpu_is_short() {
    let short = gpu(0, 80 * GIB, 79 * GIB + 500 * MIB, 0);
    let roomy = gpu(0, 80 * GIB, 40 * GIB, 0);
    let hog = |g: &GpuSample| {
        probed(
            813,
            g,
            10 * GIB,
            torch(2 * GIB, 10 * GIB, GIB, Some(GIB), None),
        )
    };
    let other = |g: &GpuSample| process(837, g, 30 * GIB, Framework::Jax, "python serve.py");
    let alerts = run(vec![(short.clone(), vec![hog(&short), other(&short)])]);
    assert_eq!(classes(&alerts), vec!["releasable-cache"]);
    let free = crate::oom::sizes::human(short.memory.value().unwrap().free);
    let want =
        format!("pid 813 caches 7.00 GiB it could release while GPU0 has {free} free for pid 837");
    assert_eq!(alerts[0].title, want);
    assert!(run(vec![(roomy.clone(), vec![hog(&roomy), other(&roomy)])]).is_empty());
    assert!(
        run(vec![(short.clone(), vec![hog(&short)])]).is_empty(),
        "alone: nobody is short"
    );
}

#[test]
fn an_oom_the_probe_counted_is_a_failure_even_without_a_log() {
    let g = gpu(0, 80 * GIB, 20 * GIB, 40 * GIB);
    let frag = |ooms| {
        let p = Pool {
            ooms: Some(ooms),
            ..torch(4 * GIB, 9 * GIB, 5 * GIB, Some(6 * MIB), None)
        };
        (g.clone(), vec![probed(873, &g, 9 * GIB, p)])
    };
    let alerts = run(vec![frag(0), frag(1)]);
    let failure: Vec<&Alert> = alerts
        .iter()
        .filter(|a| a.level == Level::Failure)
        .collect();
    assert_eq!(failure.len(), 1, "{alerts:?}");
    assert_eq!(failure[0].class, "fragmentation");
    assert_eq!(failure[0].confidence.as_deref(), Some("likely"));
    assert!(
        failure[0].title.contains("seen by its probe (no log)"),
        "{}",
        failure[0].title
    );
}

/// A job that records allocation history: its OOM count rises in sample 1, and the map of the
/// failure comes with sample `map_in` (never with `None`); the failure alerts, by sample.
fn recorded_oom(map_in: Option<usize>, samples: usize) -> Vec<(u64, Alert)> {
    use crate::sample::pool_map::{AllocRecording, MapOom, MapReason};
    let g = gpu(0, 80 * GIB, 20 * GIB, 40 * GIB);
    let p = |ooms| Pool {
        ooms: Some(ooms),
        ..torch(4 * GIB, 9 * GIB, 5 * GIB, Some(6 * MIB), None)
    };
    let start = 1_763_800_000 + 873;
    let news = |k: usize| {
        let map = (Some(k) == map_in).then(|| {
            let mut map = crate::source::scripted::maps::fragmented(873, &g.uuid, T0 + 900, 64);
            (map.start_time, map.reason) = (start, MapReason::Oom);
            map.oom = Some(MapOom {
                device: 0,
                request: GIB,
                device_allocated: None,
                device_free: None,
            });
            Box::new(map)
        });
        let recording = AllocRecording {
            on: true,
            max_entries: 100_000,
            stacks: "python".into(),
            since_ms: Some(T0),
            reason: None,
        };
        vec![ProbeNews {
            pid: 873,
            start_time: start,
            answer: None,
            recording: Some(recording),
            map,
            end: None,
            main_where: None,
        }]
    };
    let samples = (0..samples).map(|k| {
        let job = vec![probed(873, &g, 9 * GIB, p(u64::from(k > 0)))];
        Second {
            probes: news(k),
            ..(g.clone(), job).into()
        }
    });
    run(samples)
        .into_iter()
        .filter(|a| a.level == Level::Failure)
        .map(|a| ((a.at_ms - T0) / 1000, a))
        .collect()
}

#[test]
fn an_oom_counted_while_the_job_records_history_waits_for_the_map_of_the_failure() {
    // PyTorch's observer wrote the map for 6 s on an H100 before the job saw its error: the
    // count rose first. Judged once the map came, with it in the evidence; one alert.
    let failures = recorded_oom(Some(7), 12);
    assert_eq!(failures.len(), 1, "{failures:?}");
    let (at, a) = &failures[0];
    assert_eq!((*at, a.class.as_str()), (7, "fragmentation"));
    assert!(
        a.evidence[0].starts_with("at the failure: "),
        "{:?}",
        a.evidence
    );
    // No map within 30 s: judged then, on the pool's figures alone.
    let failures = recorded_oom(None, 40);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].0, 31);
    assert!(!failures[0].1.evidence[0].starts_with("at the failure"));
}

#[test]
fn a_probed_process_that_exits_at_its_limit_is_suspected_not_failed() {
    let g = gpu(0, 80 * GIB, 30 * GIB, 40 * GIB);
    let limit = 25 * GIB;
    let alive = (
        g.clone(),
        vec![probed(677, &g, limit, jax(limit - 100 * MIB, limit))],
    );
    let gone = (g.clone(), vec![]);
    let alerts = run(vec![alive, gone.clone(), gone.clone(), gone.clone()]);
    // Its log may still say why in the seconds after its exit: nothing yet.
    assert!(!classes(&alerts).contains(&"exit-at-limit"), "{alerts:?}");
    let alive = (
        g.clone(),
        vec![probed(677, &g, limit, jax(limit - 100 * MIB, limit))],
    );
    let alerts = run(vec![alive, gone.clone(), gone.clone(), gone.clone(), gone]);
    // Whether it died of an OOM is not known: suspected, never a failure.
    assert!(
        alerts.iter().all(|a| a.level != Level::Failure),
        "{alerts:?}"
    );
    let exit: Vec<&Alert> = alerts
        .iter()
        .filter(|a| a.class == "exit-at-limit")
        .collect();
    assert_eq!(exit.len(), 1, "{alerts:?}");
    assert_eq!(exit[0].level, Level::Suspected);
    let want = "exited with its jax pool at its limit: if it died of an OOM, pool-limit (likely; no log seen)";
    assert!(exit[0].title.contains(want), "{}", exit[0].title);
    assert_eq!(exit[0].at_ms, T0 + 4000);
}

#[test]
fn a_process_whose_log_says_its_oom_after_its_exit_is_one_failure() {
    // jax 0.11.2 on an H100: the process was gone a second before its OOM line was read.
    let g = gpu(0, 80 * GIB, 30 * GIB, 40 * GIB);
    let limit = 25 * GIB;
    let alive = || {
        Second::from((
            g.clone(),
            vec![probed(677, &g, limit, jax(limit - 100 * MIB, limit))],
        ))
    };
    let gone = || Second::from((g.clone(), vec![]));
    let line = "W1126 09:40:04.618513    677 bfc_allocator.cc:598] Allocator (GPU_0_bfc) ran out of memory trying to allocate 256.00MiB (rounded to 268435456) from the lower end requested by op";
    let mut logged = gone();
    logged.failures = crate::oom::parse_all(line.as_bytes())
        .into_iter()
        .map(|p| p.into_failure(T0 + 2000, "/srv/log/jax.log", Some(677)))
        .collect();
    let alerts = run(vec![alive(), gone(), logged, gone(), gone(), gone()]);
    assert!(!classes(&alerts).contains(&"exit-at-limit"), "{alerts:?}");
    let failures: Vec<&Alert> = alerts
        .iter()
        .filter(|a| a.level == Level::Failure)
        .collect();
    assert_eq!(failures.len(), 1, "{alerts:?}");
    assert_eq!((failures[0].pid, failures[0].at_ms), (Some(677), T0 + 2000));
}

#[test]
fn a_notice_from_the_source_is_said_once_as_a_notice() {
    let mut m = Machine::new(Config::new(1000, 600_000));
    let s = Sample {
        at_ms: T0,
        gpus: vec![],
        notices: vec!["probe file /tmp/gpumon-0/probe/9.json ignored: oversized".into()],
        ..Default::default()
    };
    pipeline::apply(&mut m, Event::Sample(s));
    assert_eq!(m.alerts.len(), 1);
    assert_eq!(m.alerts[0].level, Level::Notice);
    assert!(m.alerts[0].title.contains("oversized"));
}

/// A leak under its cap on a GPU with room: one `leak` warning naming the cap, and no GPU-wide
/// "full in …" (the cap binds first: the process can never fill the GPU), as on the corpus's
/// capped GPT-2 leak.
#[test]
fn a_capped_leak_warns_of_its_cap_not_of_a_full_gpu() {
    let cap = 12 * GIB;
    let seq = (0..40u64).map(|k| {
        let allocated = GIB + k * 200 * MIB;
        let device = allocated + GIB;
        let g = gpu(0, 80 * GIB, device, GIB / 2);
        let p = torch(
            allocated,
            allocated + 100 * MIB,
            50 * MIB,
            Some(64 * MIB),
            Some(cap),
        );
        (g.clone(), vec![probed(873, &g, device, p)])
    });
    let alerts = run(seq);
    assert_eq!(classes(&alerts), vec!["leak"], "{alerts:?}");
    assert!(
        alerts[0].title.contains("12.00 GiB cap"),
        "{}",
        alerts[0].title
    );
}
