//! torchrun's lines, read: the summary of a real 8-rank job, the older form, a summary cut in the
//! middle, the agent's lines.

use super::*;

/// The summary torchrun printed for an 8-rank job (torch 2.x, Python 3.13) in a public
/// benchmark report: every rank timed out in a SCATTER, rank 3 aborted first.
pub(in crate::oom::dist) const EIGHT_RANKS: &str = "\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
======================================================
torchinferno.openai_server FAILED
------------------------------------------------------
Failures:
[1]:
  time      : 2026-06-28_09:59:18
  host      : gpu-dev-12542fe0
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 1798)  (SIGTERM)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 1798
[2]:
  time      : 2026-06-28_09:59:18
  host      : gpu-dev-12542fe0
  rank      : 1 (local_rank: 1)
  exitcode  : -6 (pid: 1799)  (SIGABRT)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 1799
------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-06-28_09:59:16
  host      : gpu-dev-12542fe0
  rank      : 3 (local_rank: 3)
  exitcode  : -6 (pid: 1801)  (SIGABRT)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 1801
======================================================
after";

fn read(text: &str) -> (Vec<Found>, Vec<String>) {
    let mut s: Option<Summary> = None;
    let (mut out, mut rest) = (Vec::new(), Vec::new());
    for (i, l) in text.lines().enumerate() {
        let n = i as u64 + 1;
        if let Some(sum) = &mut s {
            match sum.feed(n, l, &mut out) {
                Step::Took => continue,
                Step::Done => {
                    s = None;
                    continue;
                }
                Step::Ended => s = None,
            }
        }
        match Summary::start(n, l) {
            Some(new) => s = Some(new),
            None => rest.push(l.to_string()),
        }
    }
    if let Some(sum) = s {
        out.extend(sum.cut());
    }
    (out, rest)
}

#[test]
fn the_summary_names_the_root_cause_and_the_others() {
    let (found, rest) = read(EIGHT_RANKS);
    assert_eq!(found.len(), 3, "{found:#?}");
    let root = &found[2];
    assert_eq!(
        (root.rank, root.local_rank, root.line),
        (Some(3), Some(3), Some(22))
    );
    assert_eq!(
        root.dist,
        Dist::Torchrun {
            root: true,
            exitcode: Some(-6),
            signal: Some("SIGABRT".into()),
            pid: Some(1801),
            host: Some("gpu-dev-12542fe0".into()),
            time: Some("09:59:16".into()),
            complete: true,
            rank_unreadable: None,
        }
    );
    assert!(
        matches!(&found[0].dist, Dist::Torchrun { root: false, signal: Some(s), .. } if s == "SIGTERM")
    );
    assert_eq!(found[1].rank, Some(1));
    assert_eq!(rest.last().map(String::as_str), Some("after"));
}

#[test]
fn the_older_summary_and_no_other_failures() {
    // Vision-CAIR/MiniGPT-4#237 (torch 2.0): no signal on the exitcode line.
    let old = "Failures:\n[1]:\n  time      : 2023-05-19_16:39:58\n  host      : n136-117-136.byted.org\n  rank      : 1 (local_rank: 1)\n  exitcode  : 1 (pid: 78971)\n  error_file: <N/A>\n  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n------------------------------------------------------------\nRoot Cause (first observed failure):\n[0]:\n  time      : 2023-05-19_16:39:58\n  host      : n136-117-136.byted.org\n  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 78970)\n  error_file: <N/A>\n  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n============================================================";
    let (found, _) = read(old);
    assert_eq!(found.len(), 2);
    assert!(matches!(
        found[1].dist,
        Dist::Torchrun {
            root: true,
            exitcode: Some(1),
            pid: Some(78970),
            signal: None,
            complete: true,
            ..
        }
    ));
    let none = "Failures:\n  <NO_OTHER_FAILURES>\n------\nRoot Cause (first observed failure):\n[0]:\n  time      : 2025-07-09_17:05:39\n  rank      : 0 (local_rank: 0)\n  exitcode  : -6 (pid: 56213)\n  traceback : Signal 6 (SIGABRT) received by PID 56213\n======";
    let (found, _) = read(none);
    assert_eq!(found.len(), 1);
    assert!(
        matches!(&found[0].dist, Dist::Torchrun { root: true, signal: Some(s), .. } if s == "SIGABRT")
    );
}

#[test]
fn a_summary_cut_in_the_middle_says_so() {
    let cut = "Root Cause (first observed failure):\n[0]:\n  time      : 2026-06-28_09:59:16\n  host      : gpu-dev";
    let (found, _) = read(cut);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].rank, None);
    assert!(matches!(
        found[0].dist,
        Dist::Torchrun {
            complete: false,
            ..
        }
    ));
    assert!(found[0].message.contains("rank not said"));
    // Another program's line in the middle ends the entry there, and is read on its own.
    let (found, rest) = read(
        "Failures:\n[1]:\n  rank      : 1 (local_rank: 1)\nTraceback (most recent call last):",
    );
    assert!(matches!(
        found[0].dist,
        Dist::Torchrun {
            complete: false,
            ..
        }
    ));
    assert_eq!(rest, vec!["Traceback (most recent call last):".to_string()]);
    // Garbage in a field is no number.
    let (found, _) = read("Failures:\n[1]:\n  rank      : zero\n  exitcode  : \u{1b}[31m\n======");
    assert_eq!((found[0].rank, found[0].local_rank), (None, None));
    let (found, _) = read("Failures:\n[1]:\n  rank      : 99999999999 (local_rank: 0)\n======");
    assert_eq!(found[0].rank, None);
}

#[test]
fn the_agents_lines() {
    // OEvortex/unsloth#10 (torch 2.4): glog-style prefix.
    let l = "E0801 13:23:20.000000 32974 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) local_rank: 3 (pid: 33054) of binary: /home/ubuntu/pythonn3.11/bin/python3";
    let f = agent(l).unwrap();
    assert_eq!(f.local_rank, Some(3));
    assert_eq!(
        f.dist,
        Dist::AgentFailed {
            exitcode: 1,
            pid: 33054,
            time: Some("13:23:20".into())
        }
    );
    assert!(f.message.starts_with("failed (exitcode: 1)"));
    // hiyouga/LlamaFactory#163 (torch 2.0): logging-style prefix.
    let l = "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 4 (pid: 364592) of binary: /usr/bin/python3";
    assert!(matches!(
        agent(l).unwrap().dist,
        Dist::AgentFailed { exitcode: -9, .. }
    ));
    let l = "W0801 13:23:17.366000 32974 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 33051 closing signal SIGTERM";
    assert_eq!(
        agent(l).unwrap().dist,
        Dist::Stopped {
            pid: 33051,
            signal: "SIGTERM".into(),
            time: Some("13:23:17".into())
        }
    );
    assert!(agent("closing signal SIGTERM").is_none());
    assert!(agent("failed (exitcode: x) local_rank: 0 (pid: 1) of binary").is_none());
}

#[test]
fn the_agent_signalled_from_outside() {
    // torch 2.11's agent when torchrun got SIGTERM (a scheduler's time limit), both wordings.
    let l = "W1127 18:40:02.511000 2211 torch/distributed/elastic/agent/server/api.py:725] Received 15 death signal, shutting down workers";
    let f = death(l).unwrap();
    assert_eq!(
        f.dist,
        Dist::LauncherSignalled {
            launcher: "torchrun".into(),
            signal: "SIGTERM".into(),
            time: Some("18:40:02".into()),
        }
    );
    let named = death("Received Signals.SIGINT death signal, shutting down workers").unwrap();
    assert!(matches!(named.dist, Dist::LauncherSignalled { ref signal, .. } if signal == "SIGINT"));
    let odd = death("Received 64 death signal, shutting down workers").unwrap();
    assert!(matches!(odd.dist, Dist::LauncherSignalled { ref signal, .. } if signal == "64"));
    assert!(death("Received a death signal").is_none());
}

#[test]
fn an_unreadable_rank_in_the_summary_is_said_as_such_not_as_a_cut() {
    let log = "\
Root Cause (first observed failure):
[0]:
  time      : 2026-11-27_18:40:02
  host      : node12
  rank      : 999999999999 (local_rank: 0)
  exitcode  : 1 (pid: 1446)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
";
    let found = crate::oom::dist::tests::read(log);
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(f.rank, None);
    assert!(
        matches!(
            &f.dist,
            Dist::Torchrun { complete: true, rank_unreadable: Some(v), .. } if v.starts_with("999999999999")
        ),
        "{f:#?}"
    );
    assert!(
        f.message
            .contains("a rank that cannot be one (999999999999"),
        "{}",
        f.message
    );
    assert!(!f.message.contains("cut"), "{}", f.message);
}
