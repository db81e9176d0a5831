//! NCCL as PyTorch's ProcessGroupNCCL reports it: the watchdog's timeout (`[Rank 1] Watchdog
//! caught collective operation timeout: WorkNCCL(SeqNum=3067, OpType=ALLREDUCE, …,
//! Timeout(ms)=40000) ran for 40006 milliseconds before timing out.`), said again by the
//! `terminate called … what():` lines, and NCCL's errors (`remote process exited or there was a
//! network error`, `ncclRemoteError`, `unhandled cuda error`, `ncclUnhandledCudaError`).
//!
//! `[Rank N]` in the watchdog's line is the rank in the collective's process group (the default
//! group's is the global rank; a sub-group's may differ, pytorch#191305): a line's `[rankN]:`
//! prefix, the global rank, wins over it.

use std::sync::LazyLock;

use regex_lite::Regex;

use super::{Dist, Found, NcclCause, message_from, printed_time, word};
use crate::oom::re;

static WATCHDOG: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?:\[(?:PG [^\]]{0,80}?)?Rank (?P<rank>\d{1,10})\]\s*)?",
        r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d{1,20}), ",
        r"OpType=(?P<op>[A-Za-z_]{1,40})(?:, [A-Za-z_]{1,20}=[^,)]{0,40})*, ",
        r"Timeout\(ms\)=(?P<timeout>\d{1,20})\)",
        r"(?: ran for (?P<ran>\d{1,20}) milliseconds)?",
    ))
});
static REMOTE: LazyLock<Regex> =
    LazyLock::new(|| re(r"remote process exited or there was a network error|ncclRemoteError"));
static CUDA: LazyLock<Regex> = LazyLock::new(|| re(r"unhandled cuda error|ncclUnhandledCudaError"));

/// Every watchdog timeout's line has these words.
pub(super) const WATCHDOG_WORDS: &str = "Watchdog caught";
/// A rank's answer to the flight recorder's dump signal has these.
pub(super) const DUMP_WORDS: &str = "Received a dump signal";

static DUMP: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"Received a dump signal due to a collective timeout from\s+(?:rank (?P<from>\d{1,10}))?",
        r"[^\n]{0,400}?Last enqueued NCCL work: (?P<enq>-?\d{1,20}), ",
        r"last completed NCCL work: (?P<done>-?\d{1,20})",
    ))
});

/// A rank's answer to the dump signal another rank's timeout sent (PyTorch's ProcessGroupNCCL
/// heartbeat monitor): how far its own collectives got.
pub(super) fn dump(body: &str) -> Option<Found> {
    let c = body
        .contains(DUMP_WORDS)
        .then(|| DUMP.captures(body))
        .flatten()?;
    let last_enqueued: i64 = c["enq"].parse().ok()?;
    let last_completed: i64 = c["done"].parse().ok()?;
    let from_rank = c
        .name("from")
        .and_then(|r| r.as_str().parse().ok())
        .filter(|r| *r <= crate::oom::prefix::MAX_RANK);
    Some(Found {
        key: format!("dump:{last_enqueued}"),
        dist: Dist::DumpSignal {
            from_rank,
            last_enqueued,
            last_completed,
            time: printed_time(body),
        },
        rank: None,
        local_rank: None,
        message: message_from(body, c.get(0)?.start()),
        line: None,
    })
}

pub(super) fn parse(body: &str) -> Option<Found> {
    if let Some(c) = body
        .contains(WATCHDOG_WORDS)
        .then(|| WATCHDOG.captures(body))
        .flatten()
    {
        let seq = c["seq"].parse().ok()?;
        let op = word(&c["op"]);
        let rank = c
            .name("rank")
            .and_then(|r| r.as_str().parse().ok())
            .filter(|r| *r <= crate::oom::prefix::MAX_RANK);
        return Some(Found {
            key: format!("watchdog:{op}:{seq}"),
            dist: Dist::WatchdogTimeout {
                op,
                seq,
                timeout_ms: c["timeout"].parse().ok()?,
                ran_ms: c.name("ran").and_then(|r| r.as_str().parse().ok()),
                time: printed_time(body),
            },
            rank,
            local_rank: None,
            message: message_from(body, c.get(0)?.start()),
            line: None,
        });
    }
    let (cause, m) = if let Some(m) = REMOTE.find(body) {
        (NcclCause::Remote, m)
    } else {
        (NcclCause::Cuda, CUDA.find(body)?)
    };
    let at = body
        .get(..m.start())
        .and_then(|h| {
            h.rfind("DistBackendError")
                .or_else(|| h.rfind("NCCL error"))
        })
        .unwrap_or(m.start());
    Some(Found {
        key: format!("nccl:{cause:?}"),
        dist: Dist::NcclError {
            cause,
            time: printed_time(body),
        },
        rank: None,
        local_rank: None,
        message: message_from(body, at),
        line: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchdog_timeouts_in_each_wording() {
        // hiyouga/LlamaFactory#7396 (torch 2.6), the line after `[rank0]:` is taken off.
        let l = "[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.";
        let f = parse(l).unwrap();
        assert_eq!(f.rank, Some(0));
        assert_eq!(
            f.dist,
            Dist::WatchdogTimeout {
                op: "ALLREDUCE".into(),
                seq: 1580,
                timeout_ms: 600_000,
                ran_ms: Some(600_060),
                time: Some("02:07:08".into()),
            }
        );
        assert!(f.message.starts_with("[Rank 0] Watchdog") || f.message.starts_with("Watchdog"));
        // OFA-Sys/OFA#271 (torch 1.x): no numel, glog without brackets.
        let old = "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.";
        assert!(matches!(
            parse(old).unwrap().dist,
            Dist::WatchdogTimeout {
                seq: 469_508,
                timeout_ms: 1_800_000,
                ..
            }
        ));
        // The what(): line of the abort (torch 2.8), a sub-group's prefix before.
        let what = "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 6] Process group watchdog thread terminated with exception: [Rank 6] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=78, OpType=SCATTER, NumelIn=29360128, NumelOut=0, Timeout(ms)=1800000) ran for 1800043 milliseconds before timing out.";
        let f = parse(what).unwrap();
        assert_eq!(f.rank, Some(6));
        assert_eq!(f.key, "watchdog:SCATTER:78");
        // The issue's run: a 40 s timeout on an H100 x2.
        let issue = "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3067, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=40000) ran for 40006 milliseconds before timing out.";
        assert!(matches!(
            parse(issue).unwrap().dist,
            Dist::WatchdogTimeout {
                seq: 3067,
                ran_ms: Some(40_006),
                ..
            }
        ));
    }

    #[test]
    fn a_dump_signal_says_how_far_the_rank_got() {
        // torch 2.11's heartbeat monitor on the rank that never reached the collective (the
        // wording of ProcessGroupNCCL::HeartbeatMonitor::getNCCLWatchdogTimeoutErrorMsg).
        let l = "[E1127 18:21:37.120 ProcessGroupNCCL.cpp:1685] [PG ID 0 PG GUID 0(default_pg) Rank 2] Received a dump signal due to a collective timeout from rank 0 and we will try our best to dump the debug info. Last enqueued NCCL work: 202, last completed NCCL work: 202.This is most likely caused by incorrect usages of collectives";
        let f = dump(l).unwrap();
        assert_eq!(
            f.dist,
            Dist::DumpSignal {
                from_rank: Some(0),
                last_enqueued: 202,
                last_completed: 202,
                time: Some("18:21:37".into()),
            }
        );
        // Another rank's wording (`this local rank` in older builds) and -1: nothing enqueued.
        let other = "[Rank 1] Received a dump signal due to a collective timeout from this local rank and we will try our best to dump the debug info. Last enqueued NCCL work: -1, last completed NCCL work: -1.";
        let f = dump(other).unwrap();
        assert!(matches!(
            f.dist,
            Dist::DumpSignal {
                from_rank: None,
                last_enqueued: -1,
                ..
            }
        ));
        assert!(dump("Received a dump signal due to a collective timeout from rank 0").is_none());
    }

    #[test]
    fn nccl_errors() {
        // nccl#1928.
        let l = "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3763, remote process exited or there was a network error, NCCL version 2.28.8";
        let f = parse(l).unwrap();
        assert!(matches!(
            f.dist,
            Dist::NcclError {
                cause: NcclCause::Remote,
                ..
            }
        ));
        assert!(
            f.message
                .starts_with("torch.distributed.DistBackendError: NCCL error")
        );
        assert!(matches!(
            parse("ncclRemoteError: Call to recv from 10.0.0.2<4455> failed")
                .unwrap()
                .dist,
            Dist::NcclError {
                cause: NcclCause::Remote,
                ..
            }
        ));
        // nccl#1410.
        let l = "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5";
        assert!(matches!(
            parse(l).unwrap().dist,
            Dist::NcclError {
                cause: NcclCause::Cuda,
                ..
            }
        ));
        assert_eq!(
            parse("ncclUnhandledCudaError: Call to CUDA function failed.")
                .unwrap()
                .key,
            "nccl:Cuda"
        );
    }

    #[test]
    fn near_misses_are_not_events() {
        for l in [
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=x, OpType=ALLREDUCE)",
            "[Rank 0] Exception (either an error or timeout) detected by watchdog at work: 1580",
            "NCCL INFO Channel 00 : 0[1020] -> 2[1040] via SHM/direct/direct",
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=",
        ] {
            assert!(parse(l).is_none(), "{l}");
        }
        let absurd = "[Rank 99999999999] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=10) ran for 11 milliseconds";
        assert_eq!(parse(absurd).unwrap().rank, None);
    }
}
