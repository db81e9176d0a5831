//! `gpumon diff` tells one story (issue 35): a device change with the pool's change beside it is
//! the pool, not "per-process overhead"; processes are matched by framework, command and order,
//! so two identical commands on one side match two on the other; OOMs and exited processes on
//! one side are said, with the process they ended.

use gpumon::model::{Config, Event, Machine};
use gpumon::pipeline;
use gpumon::sample::{Framework, Sample};
use gpumon::snapshot::Snapshot;
use gpumon::snapshot::diff::{Difference, Topic, diff, render_text};
use gpumon::source::replay::{ReplaySource, demo};
use gpumon::source::scripted::build::{GIB, gpu, machine, process};

/// The demo replayed through the pipeline for its first `n` samples, as `serve --demo`'s
/// `/snapshot` would have it then.
fn demo_at(n: usize) -> Snapshot {
    let mut source = ReplaySource::read("demo", demo()).unwrap();
    let mut m = Machine::new(Config::new(source.header().interval_ms, 600_000));
    pipeline::apply(&mut m, Event::Started(source.header().machine.clone()));
    for s in source.samples().take(n) {
        pipeline::apply(&mut m, Event::Sample(s.unwrap()));
    }
    let at = m.last_sample_ms.unwrap();
    Snapshot::of_machine(&m, at)
}

fn about<'a>(d: &'a [Difference], topic: Topic, subject: &str) -> Vec<&'a Difference> {
    d.iter()
        .filter(|x| x.topic == topic && x.subject.contains(subject))
        .collect()
}

#[test]
fn a_device_change_with_the_pools_beside_it_is_the_pool() {
    // 53 s apart, as the two `/snapshot`s of `serve --demo`.
    let (a, b) = (demo_at(22), demo_at(75));
    let d = diff(&a, &b);
    let grow = about(&d.differences, Topic::DeviceMemory, "torch_frag.py grow");
    assert_eq!(grow.len(), 1, "{}", render_text(&d));
    let effect = &grow[0].effect;
    assert!(
        effect.starts_with("The framework's pool explains it: its pool holds +"),
        "{effect}"
    );
    assert!(
        effect.contains("what it allocated moved by the same"),
        "{effect}"
    );
    assert!(!effect.contains("per-process overhead"), "{effect}");
}

/// One GPU; a process per (pid, device memory, command).
fn machine_with(procs: &[(u32, u64, &str)]) -> Snapshot {
    let g = gpu(0, 80 * GIB, 20 * GIB, 512 << 20);
    let processes = procs
        .iter()
        .map(|(pid, mem, cmd)| {
            let mut p = process(*pid, &g, *mem, Framework::Pytorch, cmd);
            p.start_time = gpumon::sample::Reading::Value(u64::from(*pid));
            p
        })
        .collect();
    let mut m = Machine::new(Config::new(1000, 60_000));
    pipeline::apply(&mut m, Event::Started(machine()));
    pipeline::apply(
        &mut m,
        Event::Sample(Sample {
            at_ms: 1_795_000_000_000,
            gpus: vec![g],
            processes,
            ..Default::default()
        }),
    );
    Snapshot::of_machine(&m, 1_795_000_000_000)
}

#[test]
fn identical_commands_are_matched_in_order() {
    let one = machine_with(&[(10, 4 * GIB, "python train.py")]);
    let two = machine_with(&[
        (20, 4 * GIB, "python train.py"),
        (21, 4 * GIB, "python train.py"),
    ]);
    let d = diff(&one, &two);
    let alone = about(&d.differences, Topic::ProcessOnOneSide, "train.py");
    assert_eq!(alone.len(), 1, "{}", render_text(&d));
    assert_eq!(
        alone[0].b, "pid 21 on GPU 0, 4G",
        "the later one has no partner"
    );
    assert!(
        alone[0]
            .effect
            .starts_with("B runs 2 processes with this framework and command line, A runs 1;"),
        "{}",
        alone[0].effect
    );
    let d = diff(&two, &two.clone());
    assert!(d.differences.is_empty(), "{}", render_text(&d));
    let other = machine_with(&[
        (30, 4 * GIB, "python train.py"),
        (31, 4 * GIB, "python train.py"),
    ]);
    let d = diff(&two, &other);
    assert!(
        d.differences.is_empty(),
        "two match two: {}",
        render_text(&d)
    );
}

#[test]
fn an_oom_and_the_process_it_ended_are_said() {
    // Before and after the demo's `torch_frag.py fill` hits its OOM (sample 72) and exits.
    let (a, b) = (demo_at(70), demo_at(82));
    let d = diff(&a, &b);
    let text = render_text(&d);
    let exited = about(&d.differences, Topic::ProcessExited, "torch_frag.py fill");
    assert_eq!(exited.len(), 1, "{text}");
    assert!(
        exited[0].b.contains("exited at ") && exited[0].b.contains("after its OOM at"),
        "{}",
        exited[0].b
    );
    assert!(
        about(
            &d.differences,
            Topic::ProcessOnOneSide,
            "torch_frag.py fill"
        )
        .is_empty(),
        "{text}"
    );
    let oom = about(&d.differences, Topic::Failure, "torch_frag.py fill");
    assert_eq!(oom.len(), 1, "{text}");
    assert_eq!(oom[0].a, "none");
    assert!(oom[0].effect.contains("exited at"), "{}", oom[0].effect);
    // The same failure on both sides (a later moment of one machine) is no difference.
    let later = diff(&b, &demo_at(84));
    assert!(
        about(&later.differences, Topic::Failure, "").is_empty(),
        "{}",
        render_text(&later)
    );
}
