//! The memory chart of the GPU in focus over the history window: the selected process's device
//! memory as a highlighted filled area, the GPU's used memory as a line above it (filled itself
//! when no process of this GPU is selected), total and driver-reserved memory as flat lines; a time axis (-10m … now) and sizes in GiB. Braille where Unicode is drawn; in ASCII
//! mode dots, and the axes redrawn with `|`, `-` and `+`.
//!
//! Lines rather than bands stacked by process: each series is one exact ring, so the height of
//! the selected process is its own memory, not a band between two sums the eye has to subtract;
//! the gap between it and the used line is everything else on the GPU, and the total line shows
//! how close the GPU is to full. Braille cells cannot hold two colours, so stacked bands of many
//! processes would also blur where they meet.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, LegendPosition};

use super::theme::Theme;
use crate::model::units;
use crate::screen::State;
use crate::screen::chart::{ChartData, Run, gib};

pub fn render(frame: &mut Frame, area: Rect, block: Block<'static>, state: &State, theme: &Theme) {
    let Some(c) = &state.screen.chart else {
        frame.render_widget(block, area);
        return;
    };
    let focus = if state.screen.focus.is_some() {
        ""
    } else {
        " (Tab focuses a GPU)"
    };
    let title = format!(
        " GPU{} memory, last {}{focus} ",
        c.gpu_index,
        units::duration_ms(state.config.history_ms)
    );
    let block = block.title(Line::styled(title, theme.title));
    let inner = block.inner(area);
    frame.render_widget(block, area);

    let ascii = state.config.ascii;
    let top_bytes = c.total.unwrap_or(c.used_max).max(1);
    let flat = |y: f64| vec![(-c.span_s, y), (0.0, y)];
    let total_line = c.total.map(|t| flat(gib(t)));
    let reserved_line = c.reserved.filter(|r| *r > 0).map(|r| flat(gib(r)));
    let mut datasets: Vec<Dataset> = Vec::new();
    if let Some(line) = &total_line {
        datasets.push(series(
            line,
            ascii,
            GraphType::Line,
            theme.na,
            Some(format!("total {}", units::compact(c.total.unwrap_or(0)))),
        ));
    }
    if let Some(line) = &reserved_line {
        datasets.push(series(
            line,
            ascii,
            GraphType::Line,
            theme.segment[2],
            Some(format!("rsvd {}", units::compact(c.reserved.unwrap_or(0)))),
        ));
    }
    // The selected process's memory is the filled area when it is on this GPU (so it shows
    // without colour too), with used memory as a line above it; otherwise used memory is filled.
    let used_kind = if c.selected.is_some() {
        GraphType::Line
    } else {
        GraphType::Area
    };
    if let Some((pid, runs)) = &c.selected {
        let name = match runs.last().and_then(|r| r.last()) {
            Some(p) => format!("pid {pid} {}", units::compact(gib_bytes(p.1))),
            None => format!("pid {pid}"),
        };
        push_runs(
            &mut datasets,
            runs,
            ascii,
            GraphType::Area,
            theme.selected_line,
            name,
        );
    }
    push_runs(
        &mut datasets,
        &c.used,
        ascii,
        used_kind,
        theme.spark,
        used_name(c),
    );

    let span_ms = state.config.history_ms;
    let x_labels = vec![
        Span::raw(format!("-{}", units::duration_ms(span_ms))),
        Span::raw(format!("-{}", units::duration_ms(span_ms / 2))),
        Span::raw("now"),
    ];
    let y_labels = vec![
        Span::raw("0"),
        Span::raw(units::compact(top_bytes / 2)),
        Span::raw(units::compact(top_bytes)),
    ];
    let chart = Chart::new(datasets)
        .x_axis(Axis::default().bounds([-c.span_s, 0.0]).labels(x_labels))
        .y_axis(
            Axis::default()
                .bounds([0.0, gib(top_bytes)])
                .labels(y_labels),
        )
        .legend_position(Some(LegendPosition::TopLeft))
        .hidden_legend_constraints((
            ratatui::layout::Constraint::Percentage(60),
            ratatui::layout::Constraint::Percentage(80),
        ));
    frame.render_widget(chart, inner);
    if state.config.ascii {
        to_ascii(frame, inner);
    }
}

/// "used 96.1G" (the newest reading), or "used" without one.
fn used_name(c: &ChartData) -> String {
    match c.used.last().and_then(|r| r.last()) {
        Some(p) => format!("used {}", units::compact(gib_bytes(p.1))),
        None => "used".to_string(),
    }
}

/// GiB back to bytes, for labels.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn gib_bytes(g: f64) -> u64 {
    (g * f64::from(1u32 << 30)).round() as u64
}

/// One dataset per run; only the first carries the legend's name.
fn push_runs<'a>(
    out: &mut Vec<Dataset<'a>>,
    runs: &'a [Run],
    ascii: bool,
    kind: GraphType,
    style: Style,
    name: String,
) {
    let mut name = Some(name);
    for run in runs {
        out.push(series(run, ascii, kind, style, name.take()));
    }
}

/// A dataset drawn in braille, or in ASCII mode with blocks for areas and dots for lines (which
/// `to_ascii` turns into `#` and `*`).
fn series(
    data: &[(f64, f64)],
    ascii: bool,
    kind: GraphType,
    style: Style,
    name: Option<String>,
) -> Dataset<'_> {
    let marker = match (ascii, kind) {
        (false, _) => Marker::Braille,
        (true, GraphType::Area) => Marker::Block,
        (true, _) => Marker::Dot,
    };
    let d = Dataset::default()
        .data(data)
        .marker(marker)
        .graph_type(kind)
        .style(style);
    match name {
        Some(n) => d.name(n),
        None => d,
    }
}

/// Redraws the chart's Unicode (axes, legend box, dots) with ASCII, cell by cell.
fn to_ascii(frame: &mut Frame, area: Rect) {
    let buf = frame.buffer_mut();
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let cell = &mut buf[(x, y)];
            let ascii = match cell.symbol() {
                "│" => "|",
                "─" => "-",
                "└" | "┌" | "┐" | "┘" => "+",
                "█" => "#",
                s if s.is_ascii() => continue,
                _ => "*",
            };
            cell.set_symbol(ascii);
        }
    }
}
