//! The signal dialog: a centred popup naming the process (pid, user, command, GPU memory) and
//! the keys that send SIGTERM, SIGINT or SIGKILL, or cancel.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::text::fit;
use super::theme::Theme;
use crate::screen::SignalAsk;

pub fn render(frame: &mut Frame, area: Rect, ask: &SignalAsk, theme: &Theme) {
    let width = area.width.saturating_sub(4).min(64);
    let room = usize::from(width.saturating_sub(4));
    let field = |name: &str, value: &str| {
        Line::from(vec![
            Span::styled(format!(" {name:<8}"), theme.title),
            Span::raw(fit(value, room.saturating_sub(9), theme.g.ellipsis)),
        ])
    };
    let mut keys = vec![Span::raw(" ")];
    for (key, what) in [
        ("t", " SIGTERM  "),
        ("i", " SIGINT  "),
        ("9", " SIGKILL  "),
        ("Esc", " cancel"),
    ] {
        keys.push(Span::styled(key, theme.key));
        keys.push(Span::raw(what));
    }
    let lines = vec![
        field("pid", &ask.pid.to_string()),
        field("user", &ask.user),
        field("command", &ask.command),
        field("memory", &ask.memory),
        Line::raw(""),
        Line::from(keys),
    ];
    let popup = super::text::popup(area, width, lines.len());
    let title = format!(" signal pid {}? ", ask.pid);
    let block = Block::bordered()
        .border_set(theme.g.border)
        .title(Line::styled(title, theme.alert));
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}
