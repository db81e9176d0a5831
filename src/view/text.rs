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
    // Characters in `line`.
    let mut used = 0;
    for mut word in text.split_whitespace() {
        let mut len = word.chars().count();
        loop {
            let gap = usize::from(used > 0);
            if used + gap + len <= width {
                if gap == 1 {
                    line.push(' ');
                }
                line.push_str(word);
                used += gap + len;
                break;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut line));
                used = 0;
                continue;
            }
            // A word wider than a line: a line of its first characters, then the rest.
            let cut = word
                .char_indices()
                .nth(width)
                .map_or(word.len(), |(i, _)| i);
            lines.push(word[..cut].to_string());
            word = &word[cut..];
            len -= width;
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

    #[test]
    fn wraps_at_spaces_and_splits_long_words() {
        assert_eq!(wrap("a bb ccc dddd", 6), vec!["a bb", "ccc", "dddd"]);
        assert_eq!(wrap("abcdefgh ij", 3), vec!["abc", "def", "gh", "ij"]);
        assert_eq!(wrap("", 5), vec![""]);
        assert_eq!(wrap("ééééé é", 2), vec!["éé", "éé", "é", "é"]);
    }

    /// Greedy wrapping, word by word: a word goes on the line if it fits after a space, else
    /// on a new line, and a word wider than a line is cut into lines of `width` characters.
    fn greedy(text: &str, width: usize) -> Vec<String> {
        let width = width.max(1);
        let mut lines: Vec<Vec<char>> = vec![Vec::new()];
        for word in text.split_whitespace() {
            let mut word: Vec<char> = word.chars().collect();
            while !word.is_empty() {
                let line = lines.last_mut().unwrap();
                let gap = usize::from(!line.is_empty());
                if line.len() + gap + word.len() <= width {
                    line.extend(std::iter::repeat_n(' ', gap).chain(word.drain(..)));
                } else if line.is_empty() {
                    line.extend(word.drain(..width));
                    lines.push(Vec::new());
                } else {
                    lines.push(Vec::new());
                }
            }
        }
        if lines.len() > 1 && lines.last().is_some_and(Vec::is_empty) {
            lines.pop();
        }
        lines.into_iter().map(String::from_iter).collect()
    }

    proptest::proptest! {
        #[test]
        fn wraps_as_greedy_wrapping_does(text in "[a-cé ]{0,40}", width in 0..9usize) {
            proptest::prop_assert_eq!(wrap(&text, width), greedy(&text, width));
        }
    }
}
