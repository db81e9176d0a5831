//! A distributed job's failure live, end to end: a torchrun job's two ranks share one log; rank
//! 0's OOM (its `[rank0]:` line, no pid) becomes ONE alert joined to rank 0's pid, and rank 1's
//! watchdog abort 100 s later amends that alert. The same samples written as a recording and
//! replayed by `gpumon explain` carry the job's alert as it ended.

#[path = "common/replay.rs"]
mod replay;

use assert_cmd::Command;
use gpumon::model::{Alert, Config, Event, Level, Machine};
use gpumon::oom::parse_all;
use gpumon::pipeline;
use gpumon::recording::{Header, Writer};
use gpumon::sample::{Framework, ProcessSample, Reading, Sample};
use gpumon::source::scripted::build::{GIB, gpu, machine, process, ranked};
use replay::replay_alerts;

const T0: u64 = 1_763_812_900_000;
const JOB: &str = "torchrun:ddp-gpt2";
const LOG: &str = "/srv/log/train.log";

fn line(name: &str, pattern: &str) -> String {
    let text = std::fs::read_to_string(format!("tests/fixtures/dist/{name}")).unwrap();
    text.lines()
        .find(|l| l.contains(pattern))
        .unwrap()
        .to_string()
}

/// The torchrun job's samples: both ranks, rank 0's OOM at 2 s, rank 0 gone, rank 1's watchdog
/// 100 s later, then rank 1 gone and torchrun's summary.
fn samples() -> Vec<Sample> {
    let gpus = vec![gpu(0, 80 * GIB, 15 * GIB, 0), gpu(1, 80 * GIB, 10 * GIB, 0)];
    let rank = |pid: u32, r: u32| -> ProcessSample {
        let mut p = ranked(
            process(
                pid,
                &gpus[r as usize],
                14 * GIB,
                Framework::Pytorch,
                "python ddp_gpt2.py",
            ),
            JOB,
            r,
            2,
        );
        p.log = Reading::Value(vec![LOG.into()]);
        p
    };
    let oom = line("torchrun-two-ranks.log", "[rank0]: torch.OutOfMemoryError");
    let watchdog = line("two-ranks/rank1.log", "[Rank 1] Watchdog caught");
    let summary = std::fs::read_to_string("tests/fixtures/dist/torchrun-two-ranks.log").unwrap();
    let summary: String = summary
        .lines()
        .skip_while(|l| !l.starts_with("W1121 06:05:05"))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut out = Vec::new();
    for s in 0..106u64 {
        let at = T0 + s * 1000;
        let processes = match s {
            0..=2 => vec![rank(1446, 0), rank(1447, 1)],
            3..=103 => vec![rank(1447, 1)],
            _ => Vec::new(),
        };
        let text = match s {
            2 => oom.clone(),
            103 => watchdog.clone(),
            104 => summary.clone(),
            _ => String::new(),
        };
        let failures = parse_all(text.as_bytes())
            .into_iter()
            .map(|p| p.into_failure(at, LOG, None))
            .collect();
        out.push(Sample {
            at_ms: at,
            gpus: gpus.clone(),
            processes,
            failures,
            ..Default::default()
        });
    }
    out
}

fn failures(m: &Machine) -> Vec<&Alert> {
    m.alerts
        .iter()
        .filter(|a| a.level == Level::Failure)
        .collect()
}

#[test]
fn one_alert_joined_to_rank_0_and_amended_by_rank_1s_watchdog() {
    let mut m = Machine::new(Config::new(1000, 600_000));
    pipeline::apply(&mut m, Event::Started(machine()));
    for (s, sample) in samples().into_iter().enumerate() {
        pipeline::apply(&mut m, Event::Sample(sample));
        let f = failures(&m);
        if s == 2 {
            assert_eq!(f.len(), 1, "{f:#?}");
            assert_eq!((f[0].pid, f[0].job.as_deref()), (Some(1446), Some(JOB)));
            assert_eq!(f[0].class, "pool-limit");
            assert!(
                f[0].title
                    .starts_with("rank 0: pid 1446 PyTorch OOM: pool-limit"),
                "{}",
                f[0].title
            );
        }
    }
    let f = failures(&m);
    assert_eq!(f.len(), 1, "one alert for the job: {f:#?}");
    let a = f[0];
    assert_eq!(
        (a.pid, a.at_ms, a.class.as_str()),
        (Some(1446), T0 + 2000, "pool-limit")
    );
    assert!(
        a.title
            .starts_with("rank 0 failed first, 1 rank followed: pid 1446 PyTorch OOM: pool-limit"),
        "{}",
        a.title
    );
    // torchrun's summary, read after both ranks were gone, confirms the root cause.
    assert!(
        a.evidence
            .iter()
            .any(|e| e.starts_with("rank 0 is torchrun's root cause (first observed failure)")),
        "{:#?}",
        a.evidence
    );
    let watchdog = a
        .evidence
        .iter()
        .find(|e| e.starts_with("rank 1 aborted by NCCL's watchdog"))
        .unwrap_or_else(|| panic!("{:#?}", a.evidence));
    assert!(
        watchdog
            .contains("waiting on ALLREDUCE #3067 (timeout 40s): a consequence of rank 0's OOM at")
    );
    assert_eq!(
        a.evidence
            .iter()
            .filter(|e| e.starts_with("rank 1 "))
            .count(),
        1,
        "rank 1 once, its most telling event: {:#?}",
        a.evidence
    );
    assert!(
        !m.alerts
            .iter()
            .any(|x| x.class == "exit-at-limit" || x.class == "exit-no-log")
    );
}

#[test]
fn explain_of_the_recording_carries_the_job_alert() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ddp.ndjson");
    let file = std::fs::File::create(&path).unwrap();
    let mut w = Writer::new(file, &Header::new(machine(), 1000)).unwrap();
    for s in samples() {
        w.sample(&s).unwrap();
    }
    drop(w);
    let alerts = replay_alerts(&path);
    let failures: Vec<&serde_json::Value> =
        alerts.iter().filter(|a| a["level"] == "failure").collect();
    assert_eq!(failures.len(), 1, "{alerts:#?}");
    let a = failures[0];
    assert_eq!(
        (a["pid"].as_u64(), a["job"].as_str()),
        (Some(1446), Some(JOB))
    );
    let title = a["title"].as_str().unwrap();
    assert!(
        title.starts_with("rank 0 failed first, 1 rank followed"),
        "{title}"
    );
    let text = Command::cargo_bin("gpumon")
        .unwrap()
        .env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
        .arg("explain")
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("rank 1 aborted by NCCL's watchdog"), "{text}");
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "{l}");
    }
}
