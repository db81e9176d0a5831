//! The help overlay: a centred popup listing every entry of the keymap table.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::text::{fit, wrap};
use super::theme::Theme;
use crate::input::KEYMAP;

pub fn render(frame: &mut Frame, area: Rect, theme: &Theme) {
    let keys_width = KEYMAP.iter().map(|b| b.keys.len()).max().unwrap_or(0) + 2;
    let width = area.width.saturating_sub(4).min(80);
    let text_width = usize::from(width.saturating_sub(4)).saturating_sub(keys_width);
    let line = |keys: &str, text: String| {
        Line::from(vec![
            Span::styled(format!(" {keys:<keys_width$}"), theme.key),
            Span::raw(text),
        ])
    };
    let mut lines = Vec::new();
    for b in KEYMAP {
        for (i, part) in wrap(b.help, text_width).into_iter().enumerate() {
            lines.push(line(if i == 0 { b.keys } else { "" }, part));
        }
    }
    // On a short screen every binding keeps one line (its text cut), so none is lost.
    if lines.len() + 2 > usize::from(area.height) {
        lines = KEYMAP
            .iter()
            .map(|b| line(b.keys, fit(b.help, text_width, theme.g.ellipsis)))
            .collect();
    }
    let popup = super::text::popup(area, width, lines.len());
    let block = Block::bordered()
        .border_set(theme.g.border)
        .title(Line::styled(" keys ", theme.title))
        .title_bottom(Line::styled(" Esc or ? closes ", theme.na).right_aligned());
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}
