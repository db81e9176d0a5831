//! Process faults: exiting between the NVML list and the /proc read, PID reuse, another user's
//! unreadable /proc files, the environment kept to memory settings, exited ones dropped in time.

use std::collections::HashMap;

use gpumon::model::{DEFAULT_KEEP_EXITED_MS, ProcKey};
use gpumon::source::environ::NOT_READABLE;
use gpumon::source::live::{NOT_IN_NAMESPACE, join};
use gpumon::source::procfs::ProcReader;
use gpumon::source::scripted::build::{self, GIB};
use gpumon::source::{GpuReadout, HostReader, Reading};

use super::{all_found, feed, host, listed, live, state};

const T0: u64 = 1_763_800_000_000;

fn keys(st: &gpumon::screen::State, pid: u32) -> Vec<ProcKey> {
    st.machine()
        .processes
        .keys()
        .filter(|k| k.pid == pid)
        .cloned()
        .collect()
}

#[test]
fn a_process_that_exits_between_the_nvml_list_and_the_proc_read_is_not_a_ghost() {
    let g = build::gpu(0, 80 * GIB, 10 * GIB, GIB);
    // NVML lists PID 7 for three ticks; /proc stops having it from tick 2 (it exited after
    // NVML's list was taken). PID 8 is never in /proc: another PID namespace.
    let mut source = live(
        move |tick| {
            let mut processes = vec![listed(8, &g, GIB)];
            if tick < 3 {
                processes.push(listed(7, &g, 2 * GIB));
            }
            Ok(GpuReadout {
                gpus: vec![g.clone()],
                processes,
            })
        },
        |tick, pids: &[u32]| {
            pids.iter()
                .filter(|&&p| p == 7 && tick < 2)
                .map(|&p| (p, host(5000)))
                .collect::<HashMap<_, _>>()
        },
    );
    let mut st = state();
    feed(&mut source, &mut st, T0, 4);
    let seven = keys(&st, 7);
    assert_eq!(seven.len(), 1, "one track, no namespace ghost: {seven:?}");
    let t = &st.machine().processes[&seven[0]];
    assert_eq!(t.key.start_time, Some(5000));
    assert_eq!(
        t.exited_ms,
        Some(T0 + 2000),
        "exited at the tick /proc lost it"
    );
    assert_eq!(
        st.screen.rows.last(),
        Some(&seven[0]),
        "kept on screen as exited, after the running ones"
    );
    let eight = &st.machine().processes[&keys(&st, 8)[0]];
    assert_eq!(eight.sample.user.reason(), Some(NOT_IN_NAMESPACE));
    assert_eq!(
        eight.exited_ms, None,
        "a PID /proc never had is still listed, n/a"
    );
}

#[test]
fn a_reused_pid_starts_a_new_history() {
    let g = build::gpu(0, 80 * GIB, 10 * GIB, GIB);
    let mut source = live(
        move |tick| {
            Ok(GpuReadout {
                processes: vec![listed(7, &g, (1 + tick as u64) * GIB)],
                gpus: vec![g.clone()],
            })
        },
        // The same PID, another process (another start time) from tick 3.
        |tick, _: &[u32]| HashMap::from([(7, host(if tick < 3 { 5000 } else { 9000 }))]),
    );
    let mut st = state();
    feed(&mut source, &mut st, T0, 5);
    let seven = keys(&st, 7);
    assert_eq!(seven.len(), 2, "{seven:?}");
    let old = &st.machine().processes[&seven
        .iter()
        .find(|k| k.start_time == Some(5000))
        .unwrap()
        .clone()];
    let new = &st.machine().processes[&seven
        .iter()
        .find(|k| k.start_time == Some(9000))
        .unwrap()
        .clone()];
    assert_eq!(old.exited_ms, Some(T0 + 3000));
    assert_eq!(old.peak, Some(3 * GIB));
    assert_eq!((new.first_seen_ms, new.history.len()), (T0 + 3000, 2));
    assert_eq!(
        new.peak,
        Some(5 * GIB),
        "not continued from the old process"
    );
    assert_eq!(
        st.screen.rows,
        vec![new.key.clone(), old.key.clone()],
        "the new one, then the old one as exited"
    );
}

#[test]
fn another_users_unreadable_proc_files_are_na_with_the_reason() {
    let g = build::gpu(0, 80 * GIB, 10 * GIB, GIB);
    let mut source = live(
        move |_| {
            Ok(GpuReadout {
                processes: vec![listed(7, &g, GIB), listed(8, &g, GIB)],
                gpus: vec![g.clone()],
            })
        },
        |_, _: &[u32]| {
            // /proc/PID/stat and statm are world-readable; maps and environ are not.
            let mut theirs = host(6000);
            theirs.framework = Reading::na("libraries not readable (permission denied)");
            theirs.settings = Reading::na(NOT_READABLE);
            HashMap::from([(7, host(5000)), (8, theirs)])
        },
    );
    let mut st = state();
    feed(&mut source, &mut st, T0, 2);
    let theirs = &st.machine().processes[&keys(&st, 8)[0]];
    assert_eq!(theirs.sample.settings.reason(), Some(NOT_READABLE));
    assert!(
        theirs
            .sample
            .framework
            .reason()
            .unwrap()
            .contains("permission")
    );
    assert_eq!(
        theirs.sample.vms.get(),
        Some(40 * GIB),
        "the readable fields are kept"
    );
    assert_eq!(theirs.key.start_time, Some(6000));
    assert_eq!(st.screen.rows.len(), 2);
}

#[test]
fn a_pid_gone_from_proc_is_absent_not_an_error() {
    // The real /proc reader, asked about a PID that cannot exist, and about this process.
    let mut r = ProcReader::new().unwrap();
    let me = std::process::id();
    let found = r.lookup(&[4_194_304, me]);
    assert!(!found.contains_key(&4_194_304));
    assert!(found[&me].start_time.get().is_some());
}

#[test]
fn only_memory_settings_are_read_from_a_process_environment() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .env("AWS_SECRET_ACCESS_KEY", "hunter2")
        .env("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
        .spawn()
        .unwrap();
    let pid = child.id();
    // Until it has exec'd `sleep`, /proc shows the forked test's own environment.
    for _ in 0..200 {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if cmdline.starts_with(b"sleep\0") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let found = ProcReader::new().unwrap().lookup(&[pid]);
    child.kill().unwrap();
    child.wait().unwrap();
    let g = build::gpu(0, 80 * GIB, 10 * GIB, GIB);
    let row = join(listed(pid, &g, GIB), found.get(&pid).cloned());
    let settings = row.settings.value().unwrap();
    assert_eq!(
        settings["PYTORCH_CUDA_ALLOC_CONF"],
        "expandable_segments:True"
    );
    let stored = serde_json::to_string(&row).unwrap();
    assert!(
        !stored.contains("hunter2") && !stored.contains("AWS_SECRET"),
        "{stored}"
    );
}

#[test]
fn exited_processes_are_dropped_after_the_grace_period() {
    let g = build::gpu(0, 80 * GIB, 10 * GIB, GIB);
    let grace_ticks = DEFAULT_KEEP_EXITED_MS / 1000;
    let mut source = live(
        move |tick| {
            // A new short-lived process every tick: PID 100 + tick, one tick each.
            Ok(GpuReadout {
                processes: vec![listed(100 + tick as u32, &g, GIB)],
                gpus: vec![g.clone()],
            })
        },
        all_found,
    );
    let mut st = state();
    feed(&mut source, &mut st, T0, 3 * grace_ticks);
    assert!(
        st.machine().processes.len() as u64 <= grace_ticks + 2,
        "{} tracks kept",
        st.machine().processes.len()
    );
    assert!(
        st.machine()
            .processes
            .keys()
            .all(|k| k.pid >= 100 + 2 * grace_ticks as u32 - 2)
    );
}
