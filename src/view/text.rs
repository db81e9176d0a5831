//! Fitting text into columns: cutting with an ellipsis and wrapping at word boundaries; drawing
//! unwrapped lines.

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

/// `lines` drawn top-down into `area`, one a row, each cut at its right edge: the cells an
/// unwrapped `Paragraph` of them draws, styled the same (the line's style patched by each span's,
/// on the text's cells only), without the pass a `Paragraph` makes restyling every cell of its
/// area, a tenth of a frame's drawing (issue #41). A line aligned other than left goes through
/// a `Paragraph`, which places it.
pub fn draw_lines<'a>(
    frame: &mut ratatui::Frame,
    area: ratatui::layout::Rect,
    lines: impl Into<ratatui::text::Text<'a>>,
) {
    use ratatui::layout::Alignment;
    let text = lines.into();
    let left = |a: Option<Alignment>| matches!(a, None | Some(Alignment::Left));
    if !left(text.alignment) || !text.lines.iter().all(|l| left(l.alignment)) {
        frame.render_widget(ratatui::widgets::Paragraph::new(text), area);
        return;
    }
    let area = area.intersection(frame.area());
    let buf = frame.buffer_mut();
    for (line, y) in text.lines.iter().zip(area.top()..area.bottom()) {
        if text.style == ratatui::style::Style::default() {
            buf.set_line(area.x, y, line, area.width);
        } else {
            let mut line = line.clone();
            line.style = text.style.patch(line.style);
            buf.set_line(area.x, y, &line, area.width);
        }
    }
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
    fn draws_lines_as_a_paragraph_does() {
        use ratatui::Terminal;
        use ratatui::backend::TestBackend;
        use ratatui::layout::Rect;
        use ratatui::style::{Color, Modifier, Style};
        use ratatui::text::{Line, Span};
        use ratatui::widgets::Paragraph;
        let lines = |centred: bool| {
            let mut lines = vec![
                Line::from(vec![
                    Span::styled("GPU0 ", Style::new().fg(Color::Cyan)),
                    Span::raw("procs 1.4G"),
                ]),
                Line::styled(
                    "a selected row",
                    Style::new().add_modifier(Modifier::REVERSED),
                ),
                Line::raw("a line far longer than the area it is drawn into, cut at its edge"),
                Line::raw("wide 日本語 characters at the edge 日本"),
                Line::raw("below the area"),
            ];
            if centred {
                lines.insert(1, Line::raw("centred").centered());
            }
            lines
        };
        let draw = |direct: bool, centred: bool| {
            let mut terminal = Terminal::new(TestBackend::new(40, 7)).unwrap();
            terminal
                .draw(|frame| {
                    let area = Rect::new(2, 1, 36, 5);
                    if direct {
                        draw_lines(frame, area, lines(centred));
                    } else {
                        frame.render_widget(Paragraph::new(lines(centred)), area);
                    }
                })
                .unwrap();
            terminal.backend().buffer().clone()
        };
        assert_eq!(draw(true, false), draw(false, false));
        assert_eq!(draw(true, true), draw(false, true));
    }

    #[test]
    fn wraps_at_spaces_and_splits_long_words() {
        assert_eq!(wrap("a bb ccc dddd", 6), vec!["a bb", "ccc", "dddd"]);
        assert_eq!(wrap("abcdefgh ij", 3), vec!["abc", "def", "gh", "ij"]);
        assert_eq!(wrap("", 5), vec![""]);
    }
}
