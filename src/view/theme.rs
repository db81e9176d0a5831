//! Styles and glyphs, chosen once from the config: colour or none, Unicode or ASCII.

use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::border;

use crate::model::Config;

/// Borders drawn with `+`, `-` and `|` only.
pub(super) const ASCII_BORDER: border::Set = border::Set {
    top_left: "+",
    top_right: "+",
    bottom_left: "+",
    bottom_right: "+",
    vertical_left: "|",
    vertical_right: "|",
    horizontal_top: "-",
    horizontal_bottom: "-",
};

/// The characters the view draws with.
#[derive(Debug)]
pub struct Glyphs {
    pub border: border::Set<'static>,
    /// Between header parts: " ─ " or " - ".
    pub sep: &'static str,
    /// Between items of a list on one line: " · " or ", ".
    pub dot: &'static str,
    /// Bar segments: processes, other, reserved, free.
    pub segment: [&'static str; 4],
    /// Sparkline levels, lowest first.
    pub ramp: &'static [char],
    /// Marks a failure on a sparkline.
    pub mark: char,
    pub warn: &'static str,
    pub ellipsis: &'static str,
    pub cursor: &'static str,
    pub degrees: &'static str,
}

const UNICODE: Glyphs = Glyphs {
    border: border::PLAIN,
    sep: " ─ ",
    dot: " · ",
    segment: ["█", "▓", "▒", "░"],
    ramp: &['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'],
    mark: '!',
    warn: "⚠",
    ellipsis: "…",
    cursor: "█",
    degrees: "°C",
};

const ASCII: Glyphs = Glyphs {
    border: ASCII_BORDER,
    sep: " - ",
    dot: ", ",
    segment: ["#", "=", "-", "."],
    ramp: &['_', '.', '-', '=', '+', '*', '#'],
    mark: '!',
    warn: "!",
    ellipsis: "...",
    cursor: "_",
    degrees: "C",
};

/// Glyphs and styles; no logic beyond picking them by config.
#[derive(Debug, Clone)]
pub struct Theme {
    pub g: &'static Glyphs,
    /// Styles of the bar segments: processes, other, reserved, free.
    pub segment: [Style; 4],
    pub title: Style,
    pub key: Style,
    /// Unavailable readings.
    pub na: Style,
    pub selected: Style,
    pub alert: Style,
    pub banner: Style,
    pub mark: Style,
    pub spark: Style,
    /// The selected process's line on the chart.
    pub selected_line: Style,
    pub paused: Style,
}

impl Theme {
    pub fn new(config: &Config) -> Self {
        let c = config.color;
        let fg = |color: Color| {
            if c {
                Style::new().fg(color)
            } else {
                Style::new()
            }
        };
        Theme {
            g: if config.ascii { &ASCII } else { &UNICODE },
            segment: [
                fg(Color::Green),
                fg(Color::Yellow),
                fg(Color::Magenta),
                fg(Color::DarkGray),
            ],
            title: Style::new().add_modifier(Modifier::BOLD),
            key: Style::new().add_modifier(Modifier::BOLD),
            na: if c {
                fg(Color::DarkGray)
            } else {
                Style::new().add_modifier(Modifier::DIM)
            },
            selected: if c {
                Style::new()
                    .bg(Color::DarkGray)
                    .add_modifier(Modifier::BOLD)
            } else {
                Style::new().add_modifier(Modifier::REVERSED)
            },
            alert: fg(Color::Red).add_modifier(Modifier::BOLD),
            banner: if c {
                Style::new()
                    .fg(Color::White)
                    .bg(Color::Red)
                    .add_modifier(Modifier::BOLD)
            } else {
                Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
            },
            mark: fg(Color::Red).add_modifier(Modifier::BOLD),
            spark: fg(Color::Cyan),
            selected_line: fg(Color::Yellow).add_modifier(Modifier::BOLD),
            paused: fg(Color::Yellow).add_modifier(Modifier::BOLD),
        }
    }
}
