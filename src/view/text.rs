//! Fitting text into columns: cutting with an ellipsis and wrapping at word boundaries.

/// `text` cut to `width` characters, ending in `ellipsis` when something was cut.
pub fn fit(text: &str, width: usize, ellipsis: &str) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let keep = width.saturating_sub(ellipsis.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    if width >= ellipsis.chars().count() {
        out.push_str(ellipsis);
    }
    out
}

/// `text` broken into lines of at most `width` characters, at spaces where possible.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let used = line.chars().count();
            let gap = usize::from(used > 0);
            if used + gap + word.len() <= width {
                if gap == 1 {
                    line.push(' ');
                }
                line.extend(word.iter());
                break;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut line));
                continue;
            }
            let rest = word.split_off(width);
            lines.push(word.iter().collect());
            word = rest;
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Rows `lines` take in a wrapping paragraph `width` columns wide (at least one per line).
pub fn rows(lines: &[ratatui::text::Line], width: usize) -> usize {
    let width = width.max(1);
    lines.iter().map(|l| l.width().div_ceil(width).max(1)).sum()
}

/// A popup `width` wide, centred in `area`, tall enough for `lines` and its border (at most
/// `area`'s height).
pub fn popup(area: ratatui::layout::Rect, width: u16, lines: usize) -> ratatui::layout::Rect {
    let width = width.min(area.width);
    let height = u16::try_from(lines + 2)
        .unwrap_or(u16::MAX)
        .min(area.height);
    ratatui::layout::Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_with_an_ellipsis() {
        assert_eq!(fit("python train.py", 20, "…"), "python train.py");
        assert_eq!(fit("python train.py", 8, "…"), "python …");
        assert_eq!(fit("python train.py", 8, "..."), "pytho...");
    }

    /// What `draw_lines` draws is what an unwrapped `Paragraph` of the same lines draws, styles
    /// included: styled spans and lines, a line cut at the edge, wide characters, more lines than
    /// rows; and with a centred line among them (which a `Paragraph` places).
    #[test]
    fn wraps_at_spaces_and_splits_long_words() {
        assert_eq!(wrap("a bb ccc dddd", 6), vec!["a bb", "ccc", "dddd"]);
        assert_eq!(wrap("abcdefgh ij", 3), vec!["abc", "def", "gh", "ij"]);
        assert_eq!(wrap("", 5), vec![""]);
    }
}
