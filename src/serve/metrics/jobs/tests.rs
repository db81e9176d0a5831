//! The job labels and series of `/metrics`, from machines built of scripted samples.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::MAX_JOBS;
use crate::model::{Config, Machine};
use crate::sample::{Framework, ProcessSample, Sample};
use crate::serve::Published;
use crate::serve::metrics::{self, Select};
use crate::snapshot::Snapshot;
use crate::source::scripted::build::{GIB, MIB, gpu, process, ranked};

const T0: u64 = 1_763_812_900_000;
const ALL: Select = Select {
    processes: true,
    cmdline: false,
};

/// `seconds` samples of the processes `at(k)` gives, on two GPUs.
fn machine(seconds: u64, at: impl Fn(u64) -> Vec<ProcessSample>) -> Machine {
    let mut m = Machine::new(Config::new(1000, 600_000));
    m.info = Some(crate::source::scripted::build::machine());
    for k in 0..seconds {
        m.ingest(Sample {
            at_ms: T0 + k * 1000,
            gpus: vec![
                gpu(0, 80 * GIB, 40 * GIB, GIB),
                gpu(1, 80 * GIB, 40 * GIB, GIB),
            ],
            processes: at(k),
            ..Default::default()
        });
    }
    m
}

fn scrape(m: &Machine) -> String {
    let s = Snapshot::of_machine(m, m.now_ms);
    let p = Published::new(s, None, BTreeMap::new(), None);
    metrics::encode(Arc::new(p), Some(0.5), ALL)
}

/// The sample lines of one metric.
fn samples<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| l.strip_prefix(name).is_some_and(|r| r.starts_with('{')))
        .collect()
}

fn torch(pid: u32, gpu_index: u32, bytes: u64) -> ProcessSample {
    let g = gpu(gpu_index, 80 * GIB, 0, 0);
    process(pid, &g, bytes, Framework::Pytorch, "python3 train.py")
}

#[test]
fn a_ranks_series_carry_its_job_and_rank_and_the_job_has_its_own_few() {
    // Rank 0 grows 130 MiB/s, rank 1 is flat, pid 900 is no rank.
    let m = machine(15, |k| {
        vec![
            ranked(
                torch(1446, 0, 9 * GIB + k * 130 * MIB),
                "torchrun:ddp",
                0,
                2,
            ),
            ranked(torch(1447, 1, 9 * GIB), "torchrun:ddp", 1, 2),
            torch(900, 1, GIB),
        ]
    });
    let text = scrape(&m);
    let device = samples(&text, "gpumon_process_device_memory_bytes");
    let of = |pid: &str| {
        device
            .iter()
            .find(|l| l.contains(&format!("pid=\"{pid}\"")))
            .copied()
            .unwrap_or_else(|| panic!("no series of pid {pid}: {text}"))
    };
    let rank0 = 9 * GIB + 14 * 130 * MIB;
    let tail = format!(r#"container="",job_id="torchrun:ddp",rank="0"}} {rank0}"#);
    assert!(of("1446").ends_with(&tail), "{}", of("1446"));
    assert!(of("1447").ends_with(r#"job_id="torchrun:ddp",rank="1"} 9663676416"#));
    assert!(of("900").ends_with(r#"container="",job_id="",rank=""} 1073741824"#));
    // Every per-process family carries the same labels.
    assert!(samples(&text, "gpumon_process_virtual_memory_bytes")
        .iter()
        .any(|l| l.contains(r#"pid="1446""#) && l.contains(r#"job_id="torchrun:ddp",rank="0""#)));

    let job = r#"Hostname="gpu-07",job_id="torchrun:ddp""#;
    let one = |name: &str| samples(&text, name).join("\n");
    assert_eq!(one("gpumon_jobs"), r#"gpumon_jobs{Hostname="gpu-07"} 1"#);
    assert_eq!(
        one("gpumon_jobs_omitted"),
        r#"gpumon_jobs_omitted{Hostname="gpu-07"} 0"#
    );
    assert_eq!(
        one("gpumon_job_ranks"),
        format!(r#"gpumon_job_ranks{{{job},launcher="torchrun"}} 2"#)
    );
    assert_eq!(
        one("gpumon_job_world_size"),
        format!("gpumon_job_world_size{{{job}}} 2")
    );
    assert_eq!(
        one("gpumon_job_device_memory_bytes"),
        format!(
            "gpumon_job_device_memory_bytes{{{job}}} {}",
            rank0 + 9 * GIB
        )
    );
    // 11036 MiB over the median (11036 + 9216) / 2 MiB, to three decimals.
    assert_eq!(
        one("gpumon_job_imbalance_ratio"),
        format!(r#"gpumon_job_imbalance_ratio{{{job},rank="0"}} 1.197"#)
    );
    assert_eq!(
        one("gpumon_job_grows_alone"),
        format!(r#"gpumon_job_grows_alone{{{job},rank="0"}} 1"#)
    );
    assert!(text.contains("# UNIT gpumon_job_device_memory_bytes bytes\n"));
}

#[test]
fn a_hundred_jobs_give_series_to_the_largest_few_and_count_the_rest() {
    // 100 one-rank jobs on one host, job n holding n + 1 MiB.
    let m = machine(2, |_| {
        (0..100u32)
            .map(|n| {
                let p = torch(2000 + n, n % 2, u64::from(n + 1) * MIB);
                ranked(p, &format!("slurm:{}.0", 5000 + n), 0, 1)
            })
            .collect()
    });
    let text = scrape(&m);
    assert_eq!(
        samples(&text, "gpumon_jobs").join(""),
        r#"gpumon_jobs{Hostname="gpu-07"} 100"#
    );
    assert_eq!(
        samples(&text, "gpumon_jobs_omitted").join(""),
        format!(
            r#"gpumon_jobs_omitted{{Hostname="gpu-07"}} {}"#,
            100 - MAX_JOBS
        )
    );
    for name in [
        "gpumon_job_ranks",
        "gpumon_job_world_size",
        "gpumon_job_device_memory_bytes",
    ] {
        let lines = samples(&text, name);
        assert_eq!(lines.len(), MAX_JOBS, "{name}");
        // The largest: jobs 99 down to 68.
        assert!(lines.iter().any(|l| l.contains(r#"job_id="slurm:5099.0""#)));
        assert!(
            lines
                .iter()
                .all(|l| !l.contains(r#"job_id="slurm:5000.0""#))
        );
    }
    // A one-rank job has no imbalance (absent is not zero).
    assert!(samples(&text, "gpumon_job_imbalance_ratio").is_empty());
    // Every process keeps its own labels: the cap is on per-job series only.
    assert_eq!(
        samples(&text, "gpumon_process_device_memory_bytes").len(),
        100
    );
}

#[test]
fn a_job_id_is_a_printable_label_of_bounded_length() {
    let id = format!("torchrun:{}\u{1b}[2J\n{}", "r".repeat(40), "z".repeat(300));
    let m = machine(2, |_| vec![ranked(torch(7, 0, GIB), &id, 0, 1)]);
    let text = scrape(&m);
    let line = samples(&text, "gpumon_job_world_size").join("");
    let value = line
        .split("job_id=\"")
        .nth(1)
        .and_then(|v| v.split('"').next())
        .unwrap();
    assert_eq!(
        value.chars().count(),
        crate::sample::job::MAX_JOB_ID,
        "{value}"
    );
    assert!(
        value.starts_with("torchrun:rrrr") && value.ends_with('…'),
        "{value}"
    );
    assert!(
        !value.contains('\u{1b}') && !value.contains("\\n"),
        "{value}"
    );
    // The process's label is the same value, so its series join with the job's.
    assert!(text.contains(&format!(r#"job_id="{value}",rank="0"}}"#)));
}
