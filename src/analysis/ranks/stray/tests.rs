//! Ranks on another rank's GPU, through the pipeline: the real `torch.load` figures (rank 1's
//! PID on GPU0 with 774 MiB beside its 1924 MiB on GPU1), 8 ranks on rank 0's GPU in one alert,
//! and silence where two GPUs are used on purpose (ranks that each span the same GPUs, a
//! model split over GPUs no other rank owns, a process of no job) or not yet for long.

use super::EXTRA_CONTEXT;
use crate::analysis::ranks::tests::{JOB, Spec, none, run};
use crate::model::Alert;
use crate::sample::Framework;
use crate::source::scripted::build::{GIB, MIB, gpu};

/// A rank whose device memory is `device` on its own GPU (no in-step noise, not probed).
fn rank(pid: u32, rank: u32, own: u32, device: u64) -> Spec {
    let pool = device - 64 * MIB - 1800 * MIB;
    let mut s = Spec::new(pid, rank, move |_| pool);
    s.gpu = own;
    s.temps = 0;
    s.probed = false;
    s.stale = false;
    s
}

fn strays(alerts: &[Alert]) -> Vec<&Alert> {
    alerts.iter().filter(|a| a.class == EXTRA_CONTEXT).collect()
}

#[test]
fn torch_load_without_map_location_puts_rank_1_on_rank_0_gpu() {
    let mut r1 = rank(1447, 1, 1, 1924 * MIB);
    r1.elsewhere = vec![(0, 774 * MIB, 2)];
    let specs = [rank(1446, 0, 0, 1924 * MIB), r1];
    let (m, alerts) = run(40, 2, 2, &specs, &none);
    let found = strays(&alerts);
    assert_eq!(found.len(), 1, "once per job: {alerts:#?}");
    let a = found[0];
    // Judged once it has held that memory for 20 s.
    assert_eq!(a.at_ms, crate::analysis::test_pools::T0 + 22_000);
    assert_eq!(a.job.as_deref(), Some(JOB));
    assert_eq!(a.pid, None, "about the job, not one process");
    assert_eq!(a.gpu_uuid, Some(gpu(0, 0, 0, 0).uuid));
    assert_eq!(
        a.title,
        "rank 1 (pid 1447) also holds 774.00 MiB on GPU0, rank 0's GPU: a second CUDA context there (torch.load without map_location, or no torch.cuda.set_device before init_process_group)"
    );
    assert!(
        a.evidence.contains(
            &"rank 1 (pid 1447) holds 774.00 MiB on GPU0, rank 0's GPU, beside 1.88 GiB on its own GPU1"
                .to_string()
        ),
        "{:#?}",
        a.evidence
    );
    assert!(a.evidence.iter().any(|e| e.starts_with(
        "rank 0 (pid 1446), whose GPU that is, holds nothing on the straying ranks' GPUs"
    )));
    let remedy = a.remedy.as_deref().unwrap();
    assert!(remedy.contains("torch.cuda.set_device(local_rank) before init_process_group"));
    assert!(remedy.contains("map_location=f\"cuda:{local_rank}\") or map_location=\"cpu\""));
    // The job sees it too: rank 1's memory elsewhere.
    assert_eq!(m.jobs[0].ranks[1].elsewhere.len(), 1);
}

#[test]
fn eight_ranks_on_rank_0_gpu_are_one_alert_naming_each() {
    let specs: Vec<Spec> = (0..8)
        .map(|r| {
            let mut s = rank(600 + r, r, r, 10 * GIB);
            if r > 0 {
                s.elsewhere = vec![(0, (500 + u64::from(r)) * MIB, 0)];
            }
            s
        })
        .collect();
    let (_, alerts) = run(30, 8, 8, &specs, &none);
    let found = strays(&alerts);
    assert_eq!(found.len(), 1, "{alerts:#?}");
    let a = found[0];
    assert!(
        a.title.starts_with(
            "7 ranks (1, 2, 3, 4, 5, 6, 7) also hold 3.45 GiB together on GPU0, rank 0's GPU: "
        ),
        "{}",
        a.title
    );
    let named = a
        .evidence
        .iter()
        .filter(|e| e.contains(" on GPU0, rank 0's GPU, beside "));
    assert_eq!(named.count(), 7, "{:#?}", a.evidence);
    assert!(
        a.evidence
            .iter()
            .any(|e| e.starts_with("rank 7 (pid 607) holds 507.00 MiB on GPU0"))
    );
}

#[test]
fn ranks_that_each_span_the_same_gpus_are_a_layout_not_a_stray() {
    // Each rank holds 6 GiB on its own GPU and 4 GiB on the other's, rank 0's second GPU first
    // seen 5 s after rank 1's (they start a few seconds apart).
    let mut r0 = rank(700, 0, 0, 6 * GIB);
    r0.elsewhere = vec![(1, 4 * GIB, 5)];
    let mut r1 = rank(701, 1, 1, 6 * GIB);
    r1.elsewhere = vec![(0, 4 * GIB, 0)];
    let (_, alerts) = run(60, 2, 2, &[r0, r1], &none);
    assert!(strays(&alerts).is_empty(), "{alerts:#?}");
}

#[test]
fn a_model_split_over_gpus_no_other_rank_owns_is_not_a_stray() {
    // Two ranks, each its model over two GPUs: rank 0 on GPU0 and GPU1, rank 1 on GPU2 and GPU3.
    let mut r0 = rank(800, 0, 0, 20 * GIB);
    r0.elsewhere = vec![(1, 18 * GIB, 0)];
    let mut r1 = rank(801, 1, 2, 20 * GIB);
    r1.elsewhere = vec![(3, 18 * GIB, 0)];
    let (_, alerts) = run(40, 2, 4, &[r0, r1], &none);
    assert!(strays(&alerts).is_empty(), "{alerts:#?}");
}

#[test]
fn a_process_of_no_job_on_two_gpus_is_not_a_stray() {
    use crate::analysis::test_pools::T0;
    use crate::model::{Config, Event, Machine};
    use crate::pipeline;
    use crate::sample::Sample;
    use crate::source::scripted::build::{machine, process};
    // A model-parallel process on GPU0 and GPU1 beside a 2-rank job on GPU0 and GPU1.
    let mut m = Machine::new(Config::new(1000, 600_000));
    pipeline::apply(&mut m, Event::Started(machine()));
    for k in 0..40 {
        let (gpus, mut processes) = crate::analysis::ranks::tests::second(
            k,
            2,
            2,
            &[rank(900, 0, 0, 10 * GIB), rank(901, 1, 1, 10 * GIB)],
        );
        for g in &gpus {
            processes.push(process(
                950,
                g,
                20 * GIB,
                Framework::Pytorch,
                "python3 serve.py",
            ));
        }
        let s = Sample {
            at_ms: T0 + k * 1000,
            gpus,
            processes,
            ..Default::default()
        };
        pipeline::apply(&mut m, Event::Sample(s));
    }
    assert!(
        m.alerts.iter().all(|a| a.class != EXTRA_CONTEXT),
        "{:#?}",
        m.alerts
    );
}

#[test]
fn not_before_it_has_held_that_memory_for_20_s_nor_without_a_figure() {
    let mut r1 = rank(1447, 1, 1, 1924 * MIB);
    r1.elsewhere = vec![(0, 774 * MIB, 10)];
    let specs = [rank(1446, 0, 0, 1924 * MIB), r1];
    let (_, alerts) = run(29, 2, 2, &specs, &none);
    assert!(strays(&alerts).is_empty(), "{alerts:#?}");
    // NVML listed it there without its memory: absent is not zero, and no figure is no claim.
    let mut r1 = rank(1447, 1, 1, 1924 * MIB);
    r1.elsewhere = vec![(0, 0, 0)];
    let specs = [rank(1446, 0, 0, 1924 * MIB), r1];
    let (_, alerts) = run(40, 2, 2, &specs, &none);
    assert!(strays(&alerts).is_empty(), "{alerts:#?}");
}

#[test]
fn ranks_of_another_framework_get_the_device_selection_remedy() {
    let mut r0 = rank(1000, 0, 0, 10 * GIB);
    let mut r1 = rank(1001, 1, 1, 10 * GIB);
    r1.elsewhere = vec![(0, 600 * MIB, 0)];
    r0.framework = Framework::Jax;
    r1.framework = Framework::Jax;
    let (_, alerts) = run(30, 2, 2, &[r0, r1], &none);
    let found = strays(&alerts);
    assert_eq!(found.len(), 1, "{alerts:#?}");
    let remedy = found[0].remedy.as_deref().unwrap();
    assert!(remedy.contains("CUDA_VISIBLE_DEVICES"), "{remedy}");
    assert!(!remedy.contains("torch"), "{remedy}");
}
