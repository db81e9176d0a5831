//! Tests of the /proc reader on the test process itself and on a process that has exited.

use super::*;

/// VmSize and VmRSS of this process from /proc/self/status, in bytes.
fn status_vm() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb = |key: &str| -> u64 {
        let line = status.lines().find(|l| l.starts_with(key)).unwrap();
        let n: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        n * 1024
    };
    (kb("VmSize:"), kb("VmRSS:"))
}

#[test]
fn own_process_matches_proc_status() {
    let me = std::process::id();
    let mut reader = ProcReader::new().unwrap();
    // Other tests run on threads of this process and can map and unmap thread stacks between
    // the reads: retry until VmSize is the same before, during and after.
    let mut last = None;
    let mut seen = Vec::new();
    for _ in 0..50 {
        let before = status_vm();
        let host = reader.lookup(&[me])[&me].clone();
        let after = status_vm();
        let (vms, rss) = (host.vms.get().unwrap(), host.rss.get().unwrap());
        if before.0 == after.0 && vms == before.0 {
            let (lo, hi) = (before.1.min(after.1), before.1.max(after.1));
            let slack = 4 << 20;
            assert!(
                rss + slack >= lo && rss <= hi + slack,
                "RSS {rss}, VmRSS {lo}..{hi}"
            );
            last = Some(host);
            break;
        }
        seen.push((before.0, vms, after.0));
    }
    let host = last.unwrap_or_else(|| panic!("VMS never matched VmSize: {seen:?}"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let start = host.start_time.get().unwrap();
    assert!(
        start <= now + 1 && start + 24 * 3600 > now,
        "start {start}, now {now}"
    );
    assert!(!host.command.value().unwrap().is_empty());
    assert!(!host.user.value().unwrap().is_empty());
    assert_eq!(host.framework, Reading::Value(Framework::Other));
    assert!(host.settings.value().is_some());
}

#[test]
fn exited_process_is_absent() {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    let me = std::process::id();
    let mut reader = ProcReader::new().unwrap();
    let found = reader.lookup(&[gone, me]);
    assert!(!found.contains_key(&gone));
    assert!(found.contains_key(&me));
}

#[test]
fn lifetime_facts_are_cached_and_evicted() {
    let me = std::process::id();
    let mut reader = ProcReader::new().unwrap();
    reader.lookup(&[me]);
    assert_eq!(reader.lifetimes.len(), 1);
    reader.lookup(&[me, me]);
    assert_eq!(reader.lifetimes.len(), 1);
    assert!(reader.lookup(&[]).is_empty());
    assert!(reader.lifetimes.is_empty());
}

#[test]
fn host_names_this_machine() {
    let (host, kernel) = ProcReader::new().unwrap().host();
    assert!(!host.is_empty());
    assert!(kernel.is_some_and(|k| !k.is_empty()));
}

#[test]
fn start_time_is_boot_time_plus_whole_seconds_since_boot() {
    // Computed here as the Python probe does, from the files themselves.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 1..];
    let ticks: u64 = after_name
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let btime: u64 = std::fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let expected = btime + ticks / 100;
    let me = std::process::id();
    let mut reader = ProcReader::new().unwrap();
    assert_eq!(
        reader.lookup(&[me])[&me].start_time,
        Reading::Value(expected)
    );
    assert_eq!(start_time(me), Some(expected));
}

#[test]
fn a_process_without_arguments_is_named_by_its_comm() {
    // Kernel threads have an empty cmdline; kthreadd is PID 2 where this PID namespace is the
    // host's (skipped elsewhere, as in a container).
    let Ok(comm) = std::fs::read_to_string("/proc/2/comm") else {
        return;
    };
    if !std::fs::read("/proc/2/cmdline").unwrap().is_empty() {
        return;
    }
    let found = ProcReader::new().unwrap().lookup(&[2]);
    assert_eq!(
        found[&2].command,
        Reading::Value(comm.trim_end().to_string())
    );
}

/// The command of `pid` as the reader gives it.
fn command(reader: &mut ProcReader, pid: u32) -> String {
    reader.lookup(&[pid])[&pid].command.value().unwrap().clone()
}

#[test]
fn a_changed_command_line_shows_within_the_refresh_period() {
    // The same process (pid and start time) changes its command line when it execs.
    let mut child = std::process::Command::new("sh")
        .args(["-c", "sleep 0.3; exec sleep 30"])
        .spawn()
        .unwrap();
    let pid = child.id();
    const SH: &str = "sh -c sleep 0.3; exec sleep 30";
    // A reader whose first look saw the shell (the child may not have exec'd sh yet).
    let first = |refresh: Duration| {
        for _ in 0..100 {
            let mut reader = ProcReader::with_refresh(refresh).unwrap();
            if command(&mut reader, pid) == SH {
                return reader;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        panic!("the shell never showed");
    };
    let mut cached = first(Duration::from_secs(3600));
    let mut refreshed = first(Duration::from_millis(200));
    // After the exec (bounded wait): the short period picks it up, the long one still holds
    // the first reading.
    let mut now = String::new();
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        now = command(&mut refreshed, pid);
        if now == "sleep 30" {
            break;
        }
    }
    assert_eq!(now, "sleep 30");
    assert_eq!(command(&mut cached, pid), SH);
    let _ = child.kill();
    let _ = child.wait();
}

/// The first two fields of /proc/PID/statm in bytes (total program size, resident set): the
/// hand-written parser sysinfo replaced, kept here as the reference.
fn statm_bytes(pid: u32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let mut pages = text.split_whitespace().map(|f| f.parse::<u64>().ok());
    let page = rustix::param::page_size() as u64;
    Some((pages.next()?? * page, pages.next()?? * page))
}

#[test]
fn sysinfo_reads_this_machines_processes_as_proc_does_to_the_byte() {
    let pids: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let mut reader = ProcReader::new().unwrap();
    let (mut same, mut compared) = (0, 0);
    for &pid in &pids {
        // A process whose memory did not move between two reads of statm around the lookup.
        let before = statm_bytes(pid);
        let found = reader.lookup(&[pid]);
        let after = statm_bytes(pid);
        let Some(host) = found.get(&pid) else {
            continue;
        };
        // The start time: the same number `start_time` (kill's re-check) and the probe compute.
        if let Some(again) = start_time(pid) {
            assert_eq!(host.start_time.get(), Some(again), "start time of {pid}");
        }
        let (Some(b), Some(a)) = (before, after) else {
            continue;
        };
        if a != b {
            continue;
        }
        compared += 1;
        let got = (host.vms.get().unwrap(), host.rss.get().unwrap());
        assert_eq!(got, b, "VMS and RSS of {pid}");
        same += 1;
    }
    assert!(compared >= 3, "compared {compared} processes");
    assert_eq!(same, compared);
}
