//! Lines drawn into the cells are the cells a `Paragraph` of them draws: styled spans, cut
//! lines, wide characters, control characters, more lines than rows, a centred line; and wrapped,
//! lines that fit beside lines that wrap.

use super::*;

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
            Line::from(vec![
                Span::raw("tab\there, escape \x1b[31m, cr\r\n "),
                Span::styled("über", Style::new().fg(Color::Red)),
                Span::raw(" and on"),
            ]),
            Line::raw("below the area"),
        ];
        if centred {
            lines.insert(1, Line::raw("centred").centered());
        }
        lines
    };
    let draw = |direct: bool, centred: bool| {
        let mut terminal = Terminal::new(TestBackend::new(40, 8)).unwrap();
        terminal
            .draw(|frame| {
                let area = Rect::new(2, 1, 36, 6);
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
fn draws_wrapped_lines_as_a_wrapping_paragraph_does() {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::layout::Rect;
    use ratatui::style::{Color, Style};
    use ratatui::text::{Line, Span};
    use ratatui::widgets::{Paragraph, Wrap};
    let fitting = vec![
        Line::from(vec![
            Span::styled("device ", Style::new().fg(Color::Cyan)),
            Span::raw("1.4G"),
        ]),
        Line::raw(""),
        Line::raw("  indented, exactly twenty-four"),
    ];
    let mut long = fitting.clone();
    long.push(Line::raw(
        "a line longer than the area, wrapped at its spaces",
    ));
    for (lines, width) in [(fitting.clone(), 31), (long, 31), (fitting, 20)] {
        let draw = |direct: bool| {
            let mut terminal = Terminal::new(TestBackend::new(34, 9)).unwrap();
            let area = Rect::new(1, 1, width, 7);
            terminal
                .draw(|frame| {
                    if direct {
                        draw_wrapped(frame, area, lines.clone());
                    } else {
                        let wrap = Wrap { trim: false };
                        frame.render_widget(Paragraph::new(lines.clone()).wrap(wrap), area);
                    }
                })
                .unwrap();
            terminal.backend().buffer().clone()
        };
        assert_eq!(draw(true), draw(false), "{width}");
        let paragraph = Paragraph::new(lines.clone()).wrap(Wrap { trim: false });
        assert_eq!(
            Wrapped::new(lines.clone(), width).rows(),
            paragraph.line_count(width)
        );
    }
}
