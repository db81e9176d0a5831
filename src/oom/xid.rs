//! Xid errors: what a code means in words (a short table, only the codes whose meaning is sure),
//! and the kernel's own record of one, the NVIDIA driver's `NVRM: Xid (PCI:…): N, pid=…, name=…`
//! line, read from `dmesg`, the journal or /dev/kmsg.

use std::sync::LazyLock;

use regex_lite::Regex;

use super::{cap, re};

/// Whose fault an Xid usually is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// The program running on the GPU (a bad address, a kernel's bug): not the GPU.
    Program,
    /// The GPU's memory (ECC, remapping).
    Memory,
    /// The GPU or its link as hardware (fallen off the bus, NVLink).
    Hardware,
    /// The driver or the GPU's firmware (GSP).
    Driver,
    /// Work stopped because of an earlier error.
    Cleanup,
}

/// What one Xid code means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meaning {
    /// NVIDIA's name for it, in short.
    pub name: &'static str,
    /// What it usually says about the job and the GPU.
    pub words: &'static str,
    pub blame: Blame,
}

/// The codes gpumon explains (NVIDIA's Xid catalogue, in short); others are shown by number.
pub const TABLE: &[(u64, Meaning)] = &[
    (
        13,
        m(
            "graphics engine exception",
            "a fault inside a kernel (an out-of-range access, an illegal instruction): usually the program's bug",
            Blame::Program,
        ),
    ),
    (
        31,
        m(
            "GPU memory page fault",
            "a program touched an address it does not own (an MMU fault): usually a bug in the program or one of its kernels, not the GPU",
            Blame::Program,
        ),
    ),
    (
        43,
        m(
            "GPU stopped processing",
            "the driver stopped a program's work after the program faulted (an assert in a kernel, a bad access): the GPU is fine",
            Blame::Program,
        ),
    ),
    (
        45,
        m(
            "preemptive cleanup",
            "the driver ended a process's work because of an earlier error or because the process was killed",
            Blame::Cleanup,
        ),
    ),
    (
        48,
        m(
            "double-bit ECC error",
            "an uncorrectable ECC error in device memory: the processes using that memory were stopped",
            Blame::Memory,
        ),
    ),
    (
        63,
        m(
            "page retirement or row remap recorded",
            "a bad memory page was retired or a row remapped; it takes effect at the GPU's next reset",
            Blame::Memory,
        ),
    ),
    (
        64,
        m(
            "page retirement or row remap failed",
            "a bad memory page or row could not be retired or remapped: the GPU needs service",
            Blame::Memory,
        ),
    ),
    (
        74,
        m(
            "NVLink error",
            "an error on an NVLink connection between GPUs",
            Blame::Hardware,
        ),
    ),
    (
        79,
        m(
            "GPU has fallen off the bus",
            "the GPU stopped answering on PCIe: every process on it is lost until the node is looked at",
            Blame::Hardware,
        ),
    ),
    (
        92,
        m(
            "high single-bit ECC error rate",
            "many corrected ECC errors: the memory still works, but watch it",
            Blame::Memory,
        ),
    ),
    (
        94,
        m(
            "contained ECC error",
            "an uncorrectable ECC error contained to the processes that used the memory: they died, others go on; reset the GPU when it is free",
            Blame::Memory,
        ),
    ),
    (
        95,
        m(
            "uncontained ECC error",
            "an uncorrectable ECC error the GPU could not contain: every process on it is affected; reset the GPU",
            Blame::Memory,
        ),
    ),
    (
        119,
        m(
            "GSP RPC timeout",
            "the GPU's firmware (GSP) did not answer the driver in time",
            Blame::Driver,
        ),
    ),
    (
        120,
        m(
            "GSP error",
            "the GPU's firmware (GSP) reported an error",
            Blame::Driver,
        ),
    ),
];

const fn m(name: &'static str, words: &'static str, blame: Blame) -> Meaning {
    Meaning { name, words, blame }
}

/// What `code` means, when gpumon knows it.
pub fn meaning(code: u64) -> Option<&'static Meaning> {
    TABLE.iter().find(|(c, _)| *c == code).map(|(_, m)| m)
}

/// "Xid 31 (GPU memory page fault)", or "Xid 200" for a code outside the table.
pub fn label(code: Option<u64>) -> String {
    match code {
        Some(c) => match meaning(c) {
            Some(m) => format!("Xid {c} ({})", m.name),
            None => format!("Xid {c}"),
        },
        None => "an Xid of unknown code".to_string(),
    }
}

/// One `NVRM: Xid` line of the kernel log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelXid {
    /// `domain:bus:device` as the line gives it, lower case (`0000:19:00`).
    pub pci: String,
    pub code: u64,
    pub pid: Option<u32>,
    pub name: Option<String>,
    /// The rest of the line (channel, MMU fault address and type), capped.
    pub detail: Option<String>,
    /// The line's own wall time, ms since the epoch, when it carries one (`dmesg -T`, `--time-format
    /// iso`, `journalctl -o short-iso`); plain `dmesg` counts from boot and the journal's default
    /// has no year, so those give none.
    pub at_ms: Option<u64>,
}

/// Characters of a kernel line's detail kept.
const MAX_DETAIL: usize = 240;

static NVRM: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})[^)]*\): (?P<code>\d{1,6})(?:, pid=(?:(?P<pid>\d{1,10})|'?<unknown>'?))?(?:, name=(?P<name>[^,]*))?(?:, (?P<rest>.*))?",
    )
});
static ISO: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^\[?(?P<d>\d{4}-\d{2}-\d{2})[T ](?P<t>\d{2}:\d{2}:\d{2})(?:[.,]\d+)?(?P<z>Z|[+-]\d{2}:?\d{2})?",
    )
});
static CTIME: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^\[\w{3} (?P<mon>\w{3}) +(?P<day>\d{1,2}) (?P<t>\d{2}:\d{2}:\d{2}) (?P<year>\d{4})\]")
});

/// The Xid on a kernel log line, if it has one; a cut or garbled line gives what it holds or
/// nothing, never an error.
pub fn parse_kernel_line(line: &str) -> Option<KernelXid> {
    let c = NVRM.captures(line)?;
    let code = c["code"].parse().ok()?;
    let name = c
        .name("name")
        .map(|n| n.as_str().trim())
        .filter(|n| !n.is_empty() && *n != "<unknown>")
        .map(|n| cap(n, 64));
    Some(KernelXid {
        pci: c["pci"].to_ascii_lowercase(),
        code,
        pid: c.name("pid").and_then(|p| p.as_str().parse().ok()),
        name,
        detail: c
            .name("rest")
            .map(|r| cap(r.as_str().trim(), MAX_DETAIL))
            .filter(|r| !r.is_empty()),
        at_ms: wall_time(line),
    })
}

/// The wall time a `dmesg -T`, `dmesg --time-format iso` or ISO journal line starts with (read as
/// UTC where it names no zone).
fn wall_time(line: &str) -> Option<u64> {
    let text = if let Some(c) = ISO.captures(line) {
        let mut t = format!("{}T{}", &c["d"], &c["t"]);
        match c.name("z").map(|z| z.as_str().replace(':', "")) {
            Some(z) if z != "Z" && z != "+0000" && z != "-0000" => {
                return offset(&t, &z);
            }
            _ => t.push('Z'),
        }
        t
    } else {
        let c = CTIME.captures(line)?;
        let mon = MONTHS.iter().position(|m| *m == &c["mon"])? + 1;
        let day: u32 = c["day"].parse().ok()?;
        format!("{}-{mon:02}-{day:02}T{}Z", &c["year"], &c["t"])
    };
    let t = humantime::parse_rfc3339(&text).ok()?;
    u64::try_from(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis()).ok()
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `local` (no zone) at offset `z` (`+0100`) to UTC ms.
fn offset(local: &str, z: &str) -> Option<u64> {
    let t = humantime::parse_rfc3339(&format!("{local}Z")).ok()?;
    let ms = i64::try_from(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis()).ok()?;
    let sign = if z.starts_with('-') { -1 } else { 1 };
    let hours: i64 = z.get(1..3)?.parse().ok()?;
    let mins: i64 = z.get(3..5)?.parse().ok()?;
    u64::try_from(ms - sign * (hours * 60 + mins) * 60_000).ok()
}

/// Whether the kernel's `0000:19:00` names the GPU NVML lists at `00000000:19:00.0`.
pub fn same_pci(kernel: &str, nvml: &str) -> bool {
    let tail = |s: &str| -> Option<String> {
        let s = s.split('.').next()?;
        let mut parts = s.rsplitn(3, ':');
        let dev = parts.next()?;
        let bus = parts.next()?;
        let dom = parts.next()?;
        let dom = u32::from_str_radix(dom, 16).ok()?;
        Some(format!(
            "{dom:x}:{}:{}",
            bus.to_ascii_lowercase(),
            dev.to_ascii_lowercase()
        ))
    };
    matches!((tail(kernel), tail(nvml)), (Some(a), Some(b)) if a == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_driver_lines() {
        // H100, driver 580 (shared/reference/oom-formats-and-nvml.md).
        let x = parse_kernel_line("[ 1234.567] NVRM: Xid (PCI:0000:00:06): 31, pid=514, name=python3, channel 0x0000000a, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_8 faulted @ 0x83be_dbe00000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE").unwrap();
        assert_eq!(
            (x.pci.as_str(), x.code, x.pid),
            ("0000:00:06", 31, Some(514))
        );
        assert_eq!(x.name.as_deref(), Some("python3"));
        assert!(x.detail.unwrap().contains("FAULT_PDE"));
        assert_eq!(x.at_ms, None, "seconds since boot are no wall time");
        let x = parse_kernel_line(
            "NVRM: Xid (PCI:0000:00:06): 43, pid=439, name=python3, channel 0x0000000a",
        )
        .unwrap();
        assert_eq!((x.code, x.pid), (43, Some(439)));
        let lost = parse_kernel_line("Nov 24 03:12:07 gpu-07 kernel: NVRM: Xid (PCI:0000:3B:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.").unwrap();
        assert_eq!(
            (lost.pci.as_str(), lost.code, lost.pid, lost.name),
            ("0000:3b:00", 79, None, None)
        );
        let old = parse_kernel_line("NVRM: Xid (0000:82:00): 13, 0003 00000000 0000a1c0").unwrap();
        assert_eq!((old.code, old.pid), (13, None));
    }

    #[test]
    fn wall_times_where_the_line_has_one() {
        let want = 1_795_835_527_000; // 2026-11-28T03:12:07Z
        let at = |l: &str| parse_kernel_line(l).and_then(|x| x.at_ms);
        let tail = " NVRM: Xid (PCI:0000:19:00): 48, pid=4121, name=python";
        assert_eq!(at(&format!("[Sat Nov 28 03:12:07 2026]{tail}")), Some(want));
        assert_eq!(
            at(&format!("2026-11-28T03:12:07,123456+00:00{tail}")),
            Some(want)
        );
        assert_eq!(
            at(&format!("2026-11-28T04:12:07+0100 gpu-07 kernel:{tail}")),
            Some(want)
        );
    }

    #[test]
    fn cut_and_foreign_lines() {
        assert_eq!(parse_kernel_line("NVRM: Xid (PCI:0000:19:0"), None);
        assert_eq!(parse_kernel_line("NVRM: Xid (PCI:0000:19:00): "), None);
        assert_eq!(parse_kernel_line("usb 1-1: new device"), None);
        let cut = parse_kernel_line("NVRM: Xid (PCI:0000:19:00): 48, pid=41").unwrap();
        assert_eq!((cut.code, cut.pid), (48, Some(41)));
    }

    #[test]
    fn pci_addresses_match_across_spellings() {
        assert!(same_pci("0000:19:00", "00000000:19:00.0"));
        assert!(same_pci("0000:3b:00", "00000000:3B:00.0"));
        assert!(!same_pci("0000:19:00", "00000000:1A:00.0"));
        assert!(!same_pci("garbage", "00000000:19:00.0"));
    }

    #[test]
    fn the_table_explains_what_it_lists_and_numbers_the_rest() {
        assert_eq!(label(Some(31)), "Xid 31 (GPU memory page fault)");
        assert_eq!(label(Some(999_999)), "Xid 999999");
        assert_eq!(meaning(95).unwrap().blame, Blame::Memory);
        assert_eq!(meaning(31).unwrap().blame, Blame::Program);
    }
}
