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

#[test]
fn narrow_characters_are_set_a_cell_each_as_set_stringn_sets_them() {
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::style::{Color, Style};
    let narrow_chars: Vec<char> = (' '..='~')
        .chain(['°', '…'])
        .chain('\u{2500}'..='\u{25BF}')
        .chain('\u{2800}'..='\u{28FF}')
        .collect();
    assert!(narrow_chars.iter().all(|c| narrow(*c)));
    for c in [
        '\u{25C0}', '\u{25FD}', '\u{0301}', '\u{200D}', '\u{FE0F}', 'é', '日', '\t',
    ] {
        assert!(!narrow(c), "{c:?}");
    }
    // Every narrow character beside every other, cut at every width.
    let text: String = narrow_chars
        .iter()
        .flat_map(|a| [*a, narrow_chars[(*a as usize * 7) % narrow_chars.len()]])
        .collect();
    let style = Style::new().fg(Color::Red);
    for width in [0, 1, 5, 80] {
        let area = Rect::new(0, 0, 80, 1);
        for chunk in text.chars().collect::<Vec<_>>().chunks(90) {
            let chunk: String = chunk.iter().collect();
            let (mut ours, mut theirs) = (Buffer::empty(area), Buffer::empty(area));
            let end = put_span(&mut ours, 0, 0, &chunk, width, style);
            let (their_end, _) = theirs.set_stringn(0, 0, &chunk, usize::from(width), style);
            assert_eq!(ours, theirs, "{chunk:?} at {width}");
            assert_eq!(end, their_end);
        }
    }
}
