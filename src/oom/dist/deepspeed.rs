//! DeepSpeed's launcher (deepspeed/launcher/launch.py): when one rank's process ends badly, its
//! `sigkill_handler` kills the others (`Killing subprocess 250621`) and says which one ended and
//! how: `[launch.py:321:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', '--local_rank=1',
//! …] exits with return code = -9` (negative: the signal that killed it).

use std::sync::LazyLock;

use regex_lite::Regex;

use super::{Dist, Found, message_from, printed_time};
use crate::oom::re;

static EXIT: LazyLock<Regex> = LazyLock::new(|| {
    re(r"sigkill_handler\] (?P<cmd>.*) exits with return code = (?P<c>-?\d{1,6})")
});
static LOCAL: LazyLock<Regex> = LazyLock::new(|| re(r"--local_rank=(?P<l>\d{1,7})"));
static KILL: LazyLock<Regex> =
    LazyLock::new(|| re(r"sigkill_handler\] Killing subprocess (?P<pid>\d{1,10})"));

/// Both lines come from the launcher's handler.
pub(super) const WORDS: &str = "sigkill_handler";

pub(super) fn parse(body: &str) -> Option<Found> {
    if !body.contains(WORDS) {
        return None;
    }
    if let Some(c) = EXIT.captures(body) {
        let code = c["c"].parse().ok()?;
        let local = LOCAL
            .captures(&c["cmd"])
            .and_then(|l| l["l"].parse().ok())
            .filter(|l| *l <= crate::oom::prefix::MAX_RANK);
        let at = c.get(0)?.start();
        return Some(Found {
            key: format!("deepspeed:{local:?}:{code}"),
            dist: Dist::DeepspeedExit { code },
            rank: None,
            local_rank: local,
            message: match local {
                Some(l) => {
                    format!("DeepSpeed's launcher: local rank {l} exits with return code = {code}")
                }
                None => message_from(body, at),
            },
            line: None,
        });
    }
    let c = KILL.captures(body)?;
    let pid = c["pid"].parse().ok()?;
    Some(Found {
        key: format!("stop:{pid}"),
        dist: Dist::Stopped {
            pid,
            signal: "SIGKILL".into(),
            time: printed_time(body),
        },
        rank: None,
        local_rank: None,
        message: message_from(body, c.get(0)?.start()),
        line: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launchers_lines() {
        // deepspeedai/DeepSpeed#5302 (the command cut short here).
        let l = "[2024-03-20 20:31:29,269] [ERROR] [launch.py:321:sigkill_handler] ['/data/anaconda3/envs/llama/bin/python', '-u', 'src/train_bash.py', '--local_rank=4', '--stage', 'sft', '--deepspeed', 'configs/deepspeed_zero3_config.json'] exits with return code = 1";
        let f = parse(l).unwrap();
        assert_eq!(
            (f.local_rank, &f.dist),
            (Some(4), &Dist::DeepspeedExit { code: 1 })
        );
        // deepspeedai/DeepSpeed#4890: the command elided.
        let f = parse("[ERROR] [launch.py:321:sigkill_handler] [xxx] exits with return code = -9")
            .unwrap();
        assert_eq!(
            (f.local_rank, &f.dist),
            (None, &Dist::DeepspeedExit { code: -9 })
        );
        // deepspeedai/DeepSpeed#1581.
        let f = parse("[2021-11-21 08:32:07,148] [INFO] [launch.py:131:sigkill_handler] Killing subprocess 250621").unwrap();
        assert_eq!(
            f.dist,
            Dist::Stopped {
                pid: 250_621,
                signal: "SIGKILL".into(),
                time: Some("08:32:07".into())
            }
        );
        assert!(parse("exits with return code = 1").is_none());
    }
}
