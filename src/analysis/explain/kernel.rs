//! `explain`'s side of memory faults that are not OOMs: the kernel's `NVRM: Xid` lines found in
//! the files given (a saved `dmesg`, `dmesg -T` or journal), each in words, and the Xid a job's
//! fault is joined with. Without a pid in the job's log, the join is by elimination: the Xid whose
//! blame fits the fault, when the kernel lines hold exactly one such code.

use serde::Serialize;

use crate::analysis::gpu_events::remedy;
use crate::model::units::clock;
use crate::oom::failure::FaultKind;
use crate::oom::xid::{self, Blame, KernelXid};

/// One Xid line of a kernel log (the JSON shape).
#[derive(Debug, Clone, Serialize)]
pub struct XidLine {
    pub log: String,
    pub line: u64,
    pub code: u64,
    /// `domain:bus:device` of the GPU.
    pub pci: String,
    pub pid: Option<u32>,
    pub process: Option<String>,
    /// The line's wall time (RFC 3339 UTC) where it has one.
    pub time: Option<String>,
    pub meaning: Option<&'static str>,
    pub detail: Option<String>,
    pub remedy: String,
    /// How many consecutive kernel lines reported it (the driver writes several for one Xid 13).
    pub lines: u64,
    #[serde(skip)]
    pub at_ms: Option<u64>,
}

impl XidLine {
    pub fn new(log: &str, line: u64, x: KernelXid) -> XidLine {
        let m = xid::meaning(x.code);
        let gpu = format!("the GPU at PCI {}", x.pci);
        XidLine {
            log: log.to_string(),
            line,
            code: x.code,
            remedy: remedy(Some(x.code), m.map(|m| m.blame), &gpu, &[]),
            pci: x.pci,
            pid: x.pid,
            process: x.name,
            time: x.at_ms.map(rfc3339),
            meaning: m.map(|m| m.words),
            detail: x.detail,
            lines: 1,
            at_ms: x.at_ms,
        }
    }

    /// Whether `next` is the next line of the same Xid: the line after this one's last, the same
    /// GPU and code, within a second.
    pub fn continued_by(&self, next: &XidLine) -> bool {
        let near = match (self.at_ms, next.at_ms) {
            (Some(a), Some(b)) => a.abs_diff(b) <= 1000,
            (a, b) => a.is_none() && b.is_none(),
        };
        near && next.line == self.line + self.lines
            && next.pci == self.pci
            && next.code == self.code
    }

    /// Takes in the next line of the same Xid: its pid and detail fill what this one lacks.
    pub fn absorb(&mut self, next: XidLine) {
        self.lines += 1;
        self.pid = self.pid.or(next.pid);
        self.process = self.process.take().or(next.process);
        self.detail = self.detail.take().or(next.detail);
    }

    /// "Xid 31 (GPU memory page fault) on PCI 0000:00:06 at 14:15:03, pid 514 (python3)".
    pub fn title(&self) -> String {
        let at = self
            .at_ms
            .map_or_else(String::new, |t| format!(" at {}", clock(t)));
        let who = match (self.pid, &self.process) {
            (Some(p), Some(n)) => format!(", pid {p} ({n})"),
            (Some(p), None) => format!(", pid {p}"),
            _ => String::new(),
        };
        format!(
            "{} on PCI {}{at}{who}",
            xid::label(Some(self.code)),
            self.pci
        )
    }
}

/// `ms` since the epoch as RFC 3339 UTC, to the second.
fn rfc3339(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// Whose fault a job's `kind` of fault is, when no Xid says.
fn blame_of(kind: FaultKind) -> Blame {
    match kind {
        FaultKind::UncorrectableEcc => Blame::Memory,
        _ => Blame::Program,
    }
}

/// The Xid codes a fault of `kind` comes with: a program's fault (13, 31, 43), an uncorrectable
/// ECC error (48, 94, 95), or the GPU lost (79) for any.
fn codes(kind: FaultKind) -> &'static [u64] {
    match kind {
        FaultKind::UncorrectableEcc => &[48, 94, 95, 79],
        FaultKind::DeviceAssert => &[43, 13, 79],
        _ => &[31, 13, 43, 79],
    }
}

/// The Xid line a fault of `kind` is joined with: the only code among `xids` that such a fault
/// comes with (several such codes: no join, the job's log has no pid or time to choose by).
pub fn joined(kind: FaultKind, xids: &[XidLine]) -> Option<&XidLine> {
    let mut candidates = xids.iter().filter(|x| codes(kind).contains(&x.code));
    let first = candidates.next()?;
    candidates.all(|x| x.code == first.code).then_some(first)
}

/// The verdict on a fault: its class, confidence, evidence and remedy, joined with `xid`.
pub fn verdict(kind: FaultKind, xid: Option<&XidLine>) -> (String, Vec<String>, String) {
    let blame = xid
        .and_then(|x| xid::meaning(x.code))
        .map_or(blame_of(kind), |m| m.blame);
    let mut evidence = vec![match blame {
        Blame::Program => format!(
            "{}: most often a bug in the program or one of its kernels, not the GPU",
            kind.words()
        ),
        _ => format!("{}: the GPU's fault, not the program's", kind.words()),
    }];
    match xid {
        Some(x) => evidence.push(format!("{}:{}: {}", x.log, x.line, x.title())),
        None => evidence.push("no Xid line in the files given to say more".to_string()),
    }
    let code = xid.map(|x| x.code);
    let gpu = xid.map_or_else(
        || "the GPU".to_string(),
        |x| format!("the GPU at PCI {}", x.pci),
    );
    (
        kind.as_str().to_string(),
        evidence,
        remedy(code, Some(blame), &gpu, &[]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oom::xid::parse_kernel_line;

    fn line(n: u64, text: &str) -> XidLine {
        XidLine::new("dmesg.txt", n, parse_kernel_line(text).unwrap())
    }

    #[test]
    fn a_fault_is_joined_with_the_one_xid_whose_blame_fits() {
        let ill = line(
            3,
            "[Tue Nov 24 14:15:03 2026] NVRM: Xid (PCI:0000:00:06): 31, pid=514, name=python3, channel 0x0000000a",
        );
        let ecc = line(9, "NVRM: Xid (PCI:0000:19:00): 48, pid=4121, name=python");
        let both = [ill.clone(), ecc.clone()];
        assert_eq!(joined(FaultKind::IllegalAddress, &both).unwrap().code, 31);
        assert_eq!(joined(FaultKind::UncorrectableEcc, &both).unwrap().code, 48);
        let two = [
            ill.clone(),
            line(5, "NVRM: Xid (PCI:0000:00:06): 43, pid=515, name=python3"),
        ];
        assert!(
            joined(FaultKind::IllegalAddress, &two).is_none(),
            "two candidates: no join"
        );
        assert_eq!(
            ill.title(),
            "Xid 31 (GPU memory page fault) on PCI 0000:00:06 at 14:15:03, pid 514 (python3)"
        );
        let (class, evidence, remedy) = verdict(FaultKind::IllegalAddress, Some(&ill));
        assert_eq!(class, "illegal-address");
        assert!(evidence[1].starts_with("dmesg.txt:3: Xid 31"));
        assert!(remedy.contains("not the GPU"));
    }
}
