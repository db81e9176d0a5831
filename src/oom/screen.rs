//! The plain scans that keep a line from the patterns: whether it holds one of a few words, in
//! one pass over its bytes. Each screen knows which words start with each byte, so most bytes
//! cost one table look (where a `contains` or a case-blind window per word went over the line
//! once per word: 26 passes over every line a job prints, the most of a backlog's reading time).

/// Words a line is screened for (at most 32), and the words each first byte may start.
pub(crate) struct Screen {
    words: &'static [&'static str],
    /// Case-blind (ASCII) or exact.
    fold: bool,
    /// For each byte, a bit for each word that starts with it.
    first: [u32; 256],
}

impl Screen {
    /// A screen for `words` (ASCII, non-empty; with `fold`, in lower case).
    pub const fn new(words: &'static [&'static str], fold: bool) -> Screen {
        assert!(words.len() <= 32, "a screen holds 32 words at most");
        let mut first = [0u32; 256];
        let mut i = 0;
        while i < words.len() {
            let b = words[i].as_bytes()[0];
            first[b as usize] |= 1 << i;
            if fold {
                first[b.to_ascii_uppercase() as usize] |= 1 << i;
            }
            i += 1;
        }
        Screen { words, fold, first }
    }

    /// Whether `text` holds one of the words.
    pub fn holds(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        for (at, b) in bytes.iter().enumerate() {
            let mut may = self.first[usize::from(*b)];
            while may != 0 {
                let k = may.trailing_zeros() as usize;
                may &= may - 1;
                let word = self.words[k].as_bytes();
                // Byte by byte, inline: most candidates differ at their second byte.
                if let Some(here) = bytes.get(at..at + word.len())
                    && here
                        .iter()
                        .zip(word)
                        .all(|(a, b)| a == b || self.fold && a.to_ascii_lowercase() == *b)
                {
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOLDED: Screen = Screen::new(&["memory", "alloc", "oom"], true);
    const EXACT: Screen = Screen::new(&["Watchdog caught", "Root Cause", "run: error:"], false);

    #[test]
    fn words_anywhere_in_any_case_or_exactly() {
        for line in [
            "CUDA out of MEMORY.",
            "failed to Alloc",
            "OOM",
            "x oom",
            "memorymemory",
        ] {
            assert!(FOLDED.holds(line), "{line}");
        }
        for line in ["", "mem", "allo c", "oo m", "epoch 3 loss 0.25", "é memorí"] {
            assert!(!FOLDED.holds(line), "{line}");
        }
        assert!(EXACT.holds("[Rank 1] Watchdog caught collective"));
        assert!(EXACT.holds("srun: error: task 3"));
        assert!(!EXACT.holds("watchdog caught"), "exact case");
        assert!(!EXACT.holds("Root Caus"));
    }
}
