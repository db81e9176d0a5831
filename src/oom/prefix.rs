//! Which rank printed a line: the prefixes launchers put before each rank's lines when they share
//! one log.
//!
//! - `[rankN]:`: PyTorch, once the default process group exists (C++ logs since pytorch#110623,
//!   Python tracebacks in recent versions). `N` is the rank in the default process group: the
//!   GLOBAL rank (`_update_default_pg` hands `pg.rank()` to c10's log prefix).
//! - `[defaultN]:`: torchrun's `--tee` / `--log-dir` tail. `TailLog` (torch/distributed/elastic/
//!   multiprocessing/tail_log.py) writes `[{name}{local_rank}]:` where `name` is the worker
//!   group's role (`default` unless `--role` says otherwise) and the index is the key of its
//!   `log_files` map, which `PContext` keys by LOCAL rank (multiprocessing/api.py), so `N` is the
//!   LOCAL rank: on a job of several nodes, `[default3]:` is rank 3 of its node, not of the job.
//!   (`TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE` replaces the prefix; its `${rank}` is global.)
//! - Ray: `(WorkerDict pid=2837, ip=10.0.0.1) [rank3]:`; anything short before the prefix (Ray's
//!   worker, pdsh's `host: `, indentation) is allowed.
//!
//! A number too large to be a rank leaves the rank unknown; the prefix as printed is kept so the
//! reason can be said.

/// How far into a line a prefix is looked for, in bytes.
const HEAD: usize = 96;
/// Digits read after `[rank`: more is no rank.
const MAX_DIGITS: usize = 12;
/// The largest rank gpumon believes (ranks below 2^20, a million ranks).
pub const MAX_RANK: u32 = (1 << 20) - 1;
/// Characters of the prefix kept.
const MAX_PREFIX: usize = 48;

/// A rank prefix found on a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefix<'a> {
    /// The prefix as printed (`[rank0]:`), capped.
    pub text: String,
    /// `[rankN]:`: the global rank; `None` for a local prefix or a number past [`MAX_RANK`].
    pub rank: Option<u32>,
    /// `[defaultN]:`: the local rank (on its node).
    pub local_rank: Option<u32>,
    /// The line after the prefix.
    pub body: &'a str,
}

/// The line's rank prefix, if it has one in its first [`HEAD`] bytes.
pub fn split(line: &str) -> Option<Prefix<'_>> {
    let bytes = line.as_bytes();
    let head = &bytes[..bytes.len().min(HEAD)];
    let mut from = 0;
    while let Some(i) = head[from..].iter().position(|b| *b == b'[') {
        let at = from + i;
        for (word, local) in [(&b"rank"[..], false), (&b"default"[..], true)] {
            if let Some(p) = read(line, at, word, local) {
                return Some(p);
            }
        }
        from = at + 1;
    }
    None
}

/// `[<word><digits>]:` at byte `at`.
fn read<'a>(line: &'a str, at: usize, word: &[u8], local: bool) -> Option<Prefix<'a>> {
    let bytes = line.as_bytes();
    let digits_at = at + 1 + word.len();
    if bytes.get(at + 1..digits_at)? != word {
        return None;
    }
    let digits = bytes[digits_at..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let end = digits_at + digits;
    if digits == 0 || bytes.get(end..end + 2)? != b"]:" {
        return None;
    }
    let n = if digits > MAX_DIGITS {
        None
    } else {
        line[digits_at..end]
            .parse::<u64>()
            .ok()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n <= MAX_RANK)
    };
    let text: String = line[at..end + 2].chars().take(MAX_PREFIX).collect();
    Some(Prefix {
        text,
        rank: n.filter(|_| !local),
        local_rank: n.filter(|_| local),
        body: &line[end + 2..],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(l: &str) -> Option<(Option<u32>, Option<u32>, &str)> {
        split(l).map(|p| (p.rank, p.local_rank, p.body))
    }

    #[test]
    fn each_launchers_prefix() {
        // LlamaFactory#7396 (torch 2.6): C++ lines under torchrun.
        let l =
            "[rank4]:[E321 02:07:08.414640780 ProcessGroupNCCL.cpp:607] [Rank 4] Watchdog caught";
        assert_eq!(ranks(l).unwrap().0, Some(4));
        assert!(ranks(l).unwrap().2.starts_with("[E321"));
        // nccl#1410: a Python traceback under torchrun.
        assert_eq!(
            ranks("[rank7]: ncclUnhandledCudaError: Call to CUDA function failed."),
            Some((
                Some(7),
                None,
                " ncclUnhandledCudaError: Call to CUDA function failed."
            ))
        );
        // torchrun --tee 3: the local rank.
        assert_eq!(
            ranks("[default3]:torch.OutOfMemoryError: CUDA out of memory."),
            Some((None, Some(3), "torch.OutOfMemoryError: CUDA out of memory."))
        );
        // Ray's worker prefix, then PyTorch's.
        let ray = "(WorkerDict pid=2837, ip=10.0.0.1) [rank3]: Traceback (most recent call last):";
        assert_eq!(ranks(ray).unwrap().0, Some(3));
        // Pasted with an indent or a line number.
        assert_eq!(ranks("    [rank7]:[E816 01:45:40").unwrap().0, Some(7));
        assert_eq!(ranks("[80746] [rank0]:[E321 02:07").unwrap().0, Some(0));
    }

    #[test]
    fn no_prefix_and_absurd_ranks() {
        for l in [
            "[Rank 0] Watchdog caught collective operation timeout",
            "[rank]: nothing",
            "[rank0] no colon",
            "rank0: no bracket",
            "[ranked3]: another word",
            "",
        ] {
            assert_eq!(split(l), None, "{l}");
        }
        let far = format!("{}[rank0]: late", "x".repeat(HEAD));
        assert_eq!(split(&far), None);
        let p = split("[rank99999999999]: CUDA out of memory.").unwrap();
        assert_eq!((p.rank, p.local_rank), (None, None));
        assert_eq!(p.text, "[rank99999999999]:");
        let p = split("[rank1048577]: x").unwrap();
        assert_eq!(p.rank, None);
        assert_eq!(split("[rank1048576]: x").unwrap().rank, None);
        assert_eq!(split("[rank1048575]: x").unwrap().rank, Some(MAX_RANK));
        let huge = format!("[rank{}]: x", "9".repeat(40));
        assert_eq!(split(&huge).unwrap().rank, None);
        assert!(split(&huge).unwrap().text.chars().count() <= MAX_PREFIX);
    }

    #[test]
    fn multibyte_text_before_the_head_limit_is_safe() {
        let l = format!("{}[rank2]: x", "é".repeat(40));
        assert_eq!(split(&l).unwrap().rank, Some(2));
        let l = "é".repeat(200);
        assert_eq!(split(&l), None);
    }
}
