//! Writing text in lines of at most 80 columns: wrapped paragraphs, cells, sparklines, a GPU's
//! memory health in one sentence.

use super::Point;
use crate::model::units;

/// Widest line written.
pub const WIDTH: usize = 80;

/// Characters of a sparkline at most.
const SPARK: usize = 40;

/// Lines being written; free text is wrapped, table rows are built to fit.
#[derive(Default)]
pub(crate) struct Out(pub(crate) String);

impl Out {
    pub(crate) fn row(&mut self, text: &str) {
        self.0.push_str(text.trim_end());
        self.0.push('\n');
    }

    pub(crate) fn blank(&mut self) {
        self.0.push('\n');
    }

    /// Free text wrapped at [`WIDTH`], indented; continuation lines two columns deeper.
    pub(crate) fn para(&mut self, indent: usize, text: &str) {
        let mut line = " ".repeat(indent);
        let mut empty = true;
        for word in text.split_whitespace() {
            let mut word = word.to_string();
            loop {
                let used = line.chars().count();
                let len = word.chars().count();
                let gap = usize::from(!empty);
                if used + gap + len <= WIDTH {
                    if !empty {
                        line.push(' ');
                    }
                    line.push_str(&word);
                    empty = false;
                    break;
                }
                if empty {
                    // A word wider than the line: cut it.
                    let room = WIDTH - used;
                    let head: String = word.chars().take(room).collect();
                    word = word.chars().skip(room).collect();
                    line.push_str(&head);
                }
                self.row(&line);
                line = " ".repeat(indent + 2);
                empty = true;
                if word.is_empty() {
                    break;
                }
            }
        }
        if !empty {
            self.row(&line);
        }
    }
}

/// A size for a cell, or "n/a".
pub(crate) fn size(v: Option<u64>) -> String {
    v.map_or_else(|| "n/a".to_string(), units::compact)
}

/// At most `width` characters, an ellipsis marking a cut.
pub(crate) fn fit(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_string()
    } else {
        s.chars().take(width - 1).chain(['…']).collect()
    }
}

/// A sparkline of at most [`SPARK`] characters plus the range, or "no readings".
pub(crate) fn history(points: &[Point]) -> String {
    let values: Vec<u64> = points.iter().filter_map(|p| p.value).collect();
    let (Some(&lo), Some(&hi)) = (values.iter().min(), values.iter().max()) else {
        return "no readings".to_string();
    };
    let chunk = points.len().div_ceil(SPARK).max(1);
    let bars = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let line: String = points
        .chunks(chunk)
        .map(|c| match c.iter().filter_map(|p| p.value).max() {
            None => ' ',
            Some(_) if hi == lo => bars[0],
            Some(v) => {
                let level = u128::from(v - lo) * 7 / u128::from(hi - lo);
                bars[usize::try_from(level).unwrap_or(7)]
            }
        })
        .collect();
    let span = match (points.first(), points.last()) {
        (Some(a), Some(b)) => units::duration_ms(b.at_ms.saturating_sub(a.at_ms)),
        _ => String::new(),
    };
    format!(
        "{line} {}..{} ({} points over {span})",
        size(Some(lo)),
        size(Some(hi)),
        points.len()
    )
}

/// "memory health: ECC on; ECC errors since driver load 0 corrected, 0 uncorrected; …", each
/// reading n/a with its reason.
pub(super) fn health(h: &crate::sample::Health) -> String {
    fn or<T>(r: &crate::sample::Reading<T>, f: impl Fn(&T) -> String) -> String {
        match r {
            crate::sample::Reading::Value(v) => f(v),
            crate::sample::Reading::Unavailable(why) => format!("n/a ({why})"),
        }
    }
    let onoff = |b: bool| if b { "on" } else { "off" };
    let count = |c: &crate::sample::health::EccCount| {
        format!("{} corrected, {} uncorrected", c.corrected, c.uncorrected)
    };
    format!(
        "memory health: ECC {}; ECC errors since driver load {}, over the GPU's life {}; \
         remapped rows {}; retired pages {}",
        or(&h.ecc_mode, |m| if m.current == m.pending {
            onoff(m.current).to_string()
        } else {
            format!("{} ({} at next reset)", onoff(m.current), onoff(m.pending))
        }),
        or(&h.ecc_volatile, count),
        or(&h.ecc_aggregate, count),
        or(&h.remapped_rows, |r| format!(
            "{} corrected, {} uncorrected{}{}",
            r.corrected,
            r.uncorrected,
            if r.pending {
                ", a remap pending (reset the GPU)"
            } else {
                ""
            },
            if r.failure { ", a remap failed" } else { "" }
        )),
        or(&h.retired_pages, |p| format!(
            "{} single-bit, {} double-bit{}",
            p.single_bit,
            p.double_bit,
            if p.pending {
                ", a retirement pending"
            } else {
                ""
            }
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn para_wraps_and_cuts_long_words() {
        let mut o = Out::default();
        o.para(2, &format!("short {} tail", "x".repeat(100)));
        for line in o.0.lines() {
            assert!(line.chars().count() <= WIDTH, "{line}");
        }
        assert_eq!(o.0.lines().count(), 3);
        assert!(o.0.starts_with("  short\n"));
        assert!(o.0.ends_with(" tail\n"));
    }

    #[test]
    fn history_scales_and_shows_gaps() {
        let pts: Vec<Point> = [Some(0), None, Some(7 << 20)]
            .into_iter()
            .enumerate()
            .map(|(i, value)| Point {
                at_ms: i as u64 * 1000,
                value,
            })
            .collect();
        assert_eq!(history(&pts), "▁ █ 0B..7M (3 points over 2s)");
        assert_eq!(history(&[]), "no readings");
    }
}
