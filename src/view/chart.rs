//! The memory chart of the GPU in focus over the history there is (up to the window): the
//! selected process's device memory as a highlighted filled area, the GPU's used memory as a
//! line above it (filled itself when no process of this GPU is selected), total and
//! driver-reserved memory as flat lines when they are in range; for a probed process, its
//! pool's story instead (`pool.rs`). A time axis (-10m … now) and sizes in GiB, the y axis
//! fitted to what is shown or the whole GPU (`g`). Braille where Unicode is drawn; in ASCII
//! mode dots, and the axes redrawn with `|`, `-` and `+`.
//!
//! Lines rather than bands stacked by process: each series is one exact ring, so the height of
//! the selected process is its own memory, not a band between two sums the eye has to subtract;
//! the gap between it and the used line is everything else on the GPU, and the total line shows
//! how close the GPU is to full. Braille cells cannot hold two colours, so stacked bands of many
//! processes would also blur where they meet.

mod plot;
mod pool;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::GraphType;

use self::plot::{Dataset, Plot};
use super::Stamping;
use super::panel::Panel;
use super::theme::Theme;
use crate::model::units;
use crate::paint;
use crate::screen::State;
use crate::screen::chart::{ChartData, Run, Scale, bytes, gib};

pub fn render(
    frame: &mut Frame,
    area: Rect,
    block: Panel<'static>,
    state: &State,
    theme: &Theme,
    stamps: &mut Stamping,
) {
    let Some(c) = &state.screen.chart else {
        stamps.panel(block, area);
        return;
    };
    let focus = if state.screen.focus.is_some() {
        ""
    } else {
        " (Tab focuses a GPU)"
    };
    let scale = match c.scale {
        Scale::Fit => "fitted (g: whole GPU)",
        Scale::Gpu => "whole GPU (g: fit)",
    };
    let span = if c.zoomed || c.resolution != crate::screen::chart::Resolution::Samples {
        format!(
            "{}, {}",
            units::duration_label(c.span_ms),
            c.resolution.label()
        )
    } else {
        units::duration_label(c.span_ms)
    };
    let title = match &c.pool {
        Some(p) => format!(
            " pid {} pool on GPU{}, last {span}, {scale} ",
            p.pid, c.gpu_index
        ),
        None => format!(" GPU{} memory, last {span}{focus}, {scale} ", c.gpu_index),
    };
    let block = block.title(Line::styled(title, theme.title));
    let inner = block.inner(area);
    stamps.panel(block, area);

    let ascii = state.config.ascii;
    let top = gib(c.top);
    let flat = |y: f64| vec![(-c.span_s, y), (0.0, y)];
    let in_range = |b: &u64| *b > 0 && gib(*b) <= top;
    // Reference lines, drawn only where the axis reaches them.
    let total_line = c.total.filter(in_range).map(|t| (flat(gib(t)), t));
    let reserved_line = c
        .reserved
        .filter(|_| c.pool.is_none())
        .filter(in_range)
        .map(|r| (flat(gib(r)), r));
    let marks = c.pool.as_ref().map(|p| pool::marks(p, top));
    let mut datasets: Vec<Dataset> = Vec::new();
    if let Some((line, t)) = &total_line {
        let name = format!("total {}", units::compact(*t));
        datasets.push(series(line, ascii, GraphType::Line, theme.na, Some(name)));
    }
    if let Some((line, r)) = &reserved_line {
        let name = format!("rsvd {}", units::compact(*r));
        datasets.push(series(
            line,
            ascii,
            GraphType::Line,
            theme.segment[2],
            Some(name),
        ));
    }
    if let (Some(p), Some(marks)) = (&c.pool, &marks) {
        pool::datasets(&mut datasets, p, marks, top, ascii, theme);
    } else {
        gpu_datasets(&mut datasets, c, ascii, theme);
    }

    let half = c.span_ms / 2;
    let x_labels = vec![
        Line::raw(format!("-{}", units::duration_label(c.span_ms))),
        Line::raw(format!("-{}", units::duration_label(half))),
        Line::raw("now"),
    ];
    let y_labels = vec![
        Line::raw("0"),
        Line::raw(units::compact(c.top / 2)),
        Line::raw(units::compact(c.top)),
    ];
    let chart = Plot {
        datasets: self::datasets(datasets),
        x_bounds: [-c.span_s, 0.0],
        y_bounds: [0.0, top],
        x_labels,
        y_labels,
    };
    let drawn = chart.draw(inner, frame.buffer_mut(), |row, plot| {
        stamps.kept(row, paint::hash(&(plot, ascii)))
    });
    if drawn && ascii {
        to_ascii(frame, inner);
    }
}

/// A GPU's chart: the selected process's device memory filled, used memory a line above it
/// (filled itself when no process of this GPU is selected).
fn gpu_datasets<'a>(out: &mut Vec<Dataset<'a>>, c: &'a ChartData, ascii: bool, theme: &Theme) {
    let used_kind = if c.selected.is_some() {
        GraphType::Line
    } else {
        GraphType::Area
    };
    if let Some((pid, runs)) = &c.selected {
        let name = named(&format!("pid {pid}"), runs);
        push_runs(out, runs, ascii, GraphType::Area, theme.selected_line, name);
    }
    push_runs(
        out,
        &c.used,
        ascii,
        used_kind,
        theme.spark,
        named("used", &c.used),
    );
}

/// "used 96.1G" (the newest reading), or the bare name without one.
fn named(name: &str, runs: &[Run]) -> String {
    match runs.last().and_then(|r| r.last()) {
        Some(p) => format!("{name} {}", units::compact(bytes(p.1))),
        None => name.to_string(),
    }
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
    Dataset {
        data,
        marker,
        kind,
        style,
        name,
    }
}

/// The datasets, their names padded to one width: the legend box is drawn over the plot, and a
/// shorter name would leave the plot's cells showing beside it.
fn datasets(mut series: Vec<Dataset<'_>>) -> Vec<Dataset<'_>> {
    let width = series
        .iter()
        .filter_map(|s| s.name.as_deref().map(str::len))
        .max()
        .unwrap_or(0);
    for s in &mut series {
        if let Some(name) = &mut s.name {
            let pad = width.saturating_sub(name.chars().count());
            name.extend(std::iter::repeat_n(' ', pad));
        }
    }
    series
}

/// Redraws the chart's Unicode (axes, legend box, dots, the stranded band's bars) with ASCII,
/// cell by cell.
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
                "▄" => ":",
                s if s.is_ascii() => continue,
                _ => "*",
            };
            cell.set_symbol(ascii);
        }
    }
}
