//! The kernel's own record of Xid errors, read live from /dev/kmsg where the user may read it
//! (non-blocking, at most `MAX_RECORDS` records a poll, each line capped): the NVIDIA driver's
//! `NVRM: Xid (PCI:…): N, pid=…, name=…` records of the last `BACKLOG_MS` and every new one. A
//! kernel log the user may not read (`kernel.dmesg_restrict`, a container) is said once.

use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::Duration;

use crate::oom::xid::parse_kernel_line;
use crate::sample::GpuEvent;
use crate::sample::health::{EventOrigin, GpuEventKind};
use crate::source::events::{EventSource, Report, Sink};

/// Records read in one poll at most; the rest wait for the next poll.
pub const MAX_RECORDS: usize = 256;
/// Xids already in the kernel's buffer at start are reported back this far.
pub const BACKLOG_MS: u64 = 60 * 60_000;
/// Bytes of one record read (the kernel's records are shorter; a longer one is cut).
const RECORD: usize = 8 * 1024;
const POLL: Duration = Duration::from_millis(500);

/// The kernel log at `path` (/dev/kmsg).
pub struct KmsgEvents {
    pub path: PathBuf,
}

impl EventSource for KmsgEvents {
    fn name(&self) -> &'static str {
        "gpumon-kmsg"
    }

    fn run(self: Box<Self>, sink: &Sink) {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(&self.path);
        let mut file = match file {
            Ok(f) => f,
            Err(e) => {
                let why = match e.kind() {
                    ErrorKind::PermissionDenied => {
                        "permission denied (kernel.dmesg_restrict; run as root or give CAP_SYSLOG)"
                            .to_string()
                    }
                    _ => e.to_string(),
                };
                sink.send(Report::Notice(format!(
                    "the kernel log ({}) is not readable: {why}; Xids are heard from NVML only",
                    self.path.display()
                )));
                return;
            }
        };
        let mut buf = vec![0u8; RECORD];
        while !sink.stopped() {
            let (now_ms, uptime_ms) = (crate::clock::unix_ms(), uptime_ms());
            for _ in 0..MAX_RECORDS {
                match file.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if let Some(e) = record(&buf[..n], now_ms, uptime_ms)
                            && !sink.send(Report::Event(e))
                        {
                            return;
                        }
                    }
                    // Records overwritten before they were read: go on with the next.
                    Err(e) if e.kind() == ErrorKind::BrokenPipe => {}
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => {
                        sink.send(Report::Notice(format!(
                            "the kernel log ({}) stopped being readable: {e}",
                            self.path.display()
                        )));
                        return;
                    }
                }
            }
            std::thread::sleep(POLL);
        }
    }
}

/// Milliseconds since boot (/proc/uptime); `None` where it cannot be read.
fn uptime_ms() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/uptime").ok()?;
    let secs: f64 = text.split_whitespace().next()?.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then_some((secs * 1000.0) as u64)
}

/// The Xid event of one /dev/kmsg record (`PRI,SEQ,USEC,FLAGS;MESSAGE`), timed by the record's
/// microseconds since boot where the uptime is known (else heard now); `None` for any other
/// record, and for one older than `BACKLOG_MS`.
pub fn record(raw: &[u8], now_ms: u64, uptime_ms: Option<u64>) -> Option<GpuEvent> {
    let text = String::from_utf8_lossy(raw);
    let (head, message) = text.split_once(';')?;
    let message = message.lines().next().unwrap_or_default();
    let x = parse_kernel_line(&crate::oom::clean(message.as_bytes()))?;
    let usec: Option<u64> = head.split(',').nth(2).and_then(|u| u.parse().ok());
    let at_ms = match (usec, uptime_ms) {
        (Some(us), Some(up)) if us / 1000 <= up => now_ms.checked_sub(up - us / 1000)?,
        _ => now_ms,
    };
    if now_ms.saturating_sub(at_ms) > BACKLOG_MS {
        return None;
    }
    Some(GpuEvent {
        at_ms,
        gpu_uuid: None,
        pci: Some(x.pci),
        kind: GpuEventKind::Xid { code: Some(x.code) },
        pid: x.pid,
        process: x.name,
        origin: EventOrigin::Kernel,
        detail: x.detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::events::EventFeed;

    #[test]
    fn an_xid_record_timed_by_the_boot_clock() {
        let raw = b"4,1873,5000000000,-;NVRM: Xid (PCI:0000:00:06): 31, pid=514, name=python3, channel 0x0000000a\n SUBSYSTEM=pci\n";
        // Read at uptime 5 010 s: the record is 10 s old.
        let e = record(raw, 1_000_000_000, Some(5_010_000)).unwrap();
        assert_eq!(e.at_ms, 1_000_000_000 - 10_000);
        assert_eq!((e.xid(), e.pid), (Some(31), Some(514)));
        assert_eq!(e.pci.as_deref(), Some("0000:00:06"));
        assert_eq!(
            record(raw, 1_000_000_000, None).unwrap().at_ms,
            1_000_000_000
        );
        // Older than the backlog, another record, a record cut mid-line.
        assert_eq!(
            record(raw, 1_000_000_000, Some(5_000_000 + BACKLOG_MS + 1)),
            None
        );
        assert_eq!(record(b"6,1,2,-;usb 1-1: new device", 1, Some(1)), None);
        assert_eq!(
            record(b"4,1873,5000000000,-;NVRM: Xid (PCI:0000:0", 1, Some(1)),
            None
        );
        assert_eq!(record(b"\xff\xfe garbage", 1, Some(1)), None);
    }

    #[test]
    fn the_h100s_own_nvrm_records_are_no_xid() {
        // /dev/kmsg on the H100 (driver 580.159.04), read as root: NVRM records, none an Xid.
        for raw in [
            "3,355,1283625,-;NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  ",
            "4,356,2173296,c;NVRM: gpuClearFbhubPoisonIntrForBug2924523_GA100: FBHUB Interrupt detected. Clearing it.",
            "4,357,4404354,c;NVRM: Persistence mode is deprecated and will be removed in a future release. Please use nvidia-persistenced instead.",
        ] {
            assert_eq!(
                record(raw.as_bytes(), 10_000_000, Some(5_000_000)),
                None,
                "{raw}"
            );
        }
    }

    #[test]
    fn an_unreadable_kernel_log_is_said_once() {
        let mut feed = EventFeed::default();
        let dir = tempfile::tempdir().unwrap();
        let source = Box::new(KmsgEvents {
            path: dir.path().join("no-kmsg"),
        });
        source.run(&feed.sink.clone());
        let (events, notices) = feed.drain();
        assert!(events.is_empty());
        assert_eq!(notices.len(), 1);
        assert!(notices[0].contains("is not readable"), "{}", notices[0]);
    }
}
