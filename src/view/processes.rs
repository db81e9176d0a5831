//! The process table, in `state.screen.rows` order; the least important columns give way on narrow
//! screens and COMMAND takes what is left.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Padding;

use super::Stamping;
use super::draw::{BLANK, draw_lines};
use super::panel::Panel;
use super::text::fit;
use super::theme::Theme;
use crate::model::ProcessTrack;
use crate::paint;
use crate::screen::{JobLine, State, TableLine};

mod columns;
mod grid;
mod job_line;

use columns::{MIN_COMMAND, Optional, align, needed, visible, width_of};
use grid::{Grid, Row};

/// The block title: sort order, filter and focused GPU.
fn title(state: &State, theme: &Theme) -> Line<'static> {
    let by_job = if state.screen.by_job { " by job" } else { "" };
    let mut parts = vec![format!(
        "processes{by_job} (sorted by {})",
        state.screen.sort.label()
    )];
    if let Some(f) = &state.screen.filter {
        parts.push(format!("filter: {}", f.label()));
    }
    if let Some(g) = state
        .screen
        .focus
        .as_ref()
        .and_then(|u| state.machine().gpus.get(u))
    {
        parts.push(format!("GPU{} only", g.sample.index));
    }
    Line::styled(format!(" {} ", parts.join(theme.g.sep)), theme.title)
}

/// Why the table is empty.
fn empty_reason(state: &State, theme: &Theme) -> String {
    let dash = theme.g.sep;
    if let Some(f) = &state.screen.filter {
        format!("no process matches filter {}{dash}Esc clears", f.label())
    } else if let Some(g) = state
        .screen
        .focus
        .as_ref()
        .and_then(|u| state.machine().gpus.get(u))
    {
        format!("no process on GPU{}{dash}Tab shows all", g.sample.index)
    } else {
        "no GPU processes".to_string()
    }
}

pub fn render(
    frame: &mut Frame,
    area: Rect,
    block: Panel<'static>,
    state: &State,
    theme: &Theme,
    stamps: &mut Stamping,
) {
    let mut block = block.title(title(state, theme)).padding(Padding::right(1));
    let inner = block.inner(area);
    let selected = state
        .screen
        .selected
        .as_ref()
        .and_then(|k| state.screen.rows.iter().position(|r| r == k))
        .map(|row| state.screen.line_of(row));
    // Only the lines on screen are built (formatting every process's cells each frame cost
    // more than the rest of the frame together); the others are counted on the border.
    let on = on_screen(
        state.screen.table_len(),
        selected,
        inner.height.saturating_sub(1),
    );
    let more = state.screen.table_len() - on.len();
    if more > 0 {
        block = block.title(Line::styled(format!(" +{more} more "), theme.title).right_aligned());
    }
    stamps.panel(block, area);
    let shown = || {
        state
            .screen
            .rows
            .iter()
            .filter_map(|k| state.machine().processes.get(k))
    };
    let optional = Optional {
        probed: shown().any(|t| t.sample.pool.value().is_some()),
        placed: shown().any(|t| {
            t.sample
                .container
                .value()
                .is_some_and(|c| !c.short.is_empty())
        }),
        ranked: shown().any(|t| t.sample.rank.is_some()),
    };
    let mig = !state.screen.mig.is_empty();
    let cols = visible(inner.width, optional, mig);
    let command_width = usize::from(inner.width - needed(&cols, mig) + MIN_COMMAND);
    let header = Row {
        cells: cols
            .iter()
            .map(|c| align(Line::raw(c.title()), *c))
            .collect(),
        style: theme.title,
    };
    let widths: Vec<Constraint> = cols.iter().map(|c| width_of(*c, mig)).collect();
    if state.screen.rows.is_empty() {
        let [head, body] = inner.layout(&ratatui::layout::Layout::vertical([
            Constraint::Length(1),
            Constraint::Fill(1),
        ]));
        let grid = Grid {
            header,
            rows: &[],
            widths: &widths,
            selected: None,
            highlight: Style::new(),
            skip: &[],
        };
        grid.render(head, frame.buffer_mut());
        draw_lines(
            frame,
            body,
            Line::from(vec![
                Span::raw("  "),
                Span::styled(empty_reason(state, theme), theme.na),
            ]),
        );
        return;
    }
    let shown = on;
    let lines: Vec<Shown> = shown
        .clone()
        .filter_map(|l| match state.screen.table_line(l)? {
            TableLine::Job(n) => state.screen.job_lines.get(n).map(Shown::Job),
            TableLine::Process(n) => state
                .screen
                .rows
                .get(n)
                .and_then(|k| state.machine().processes.get(k))
                .map(Shown::Process),
        })
        .collect();
    let rows: Vec<Row> = lines
        .iter()
        .map(|line| match line {
            // Its text is drawn across the columns below.
            Shown::Job(_) => Row {
                cells: Vec::new(),
                style: theme.title,
            },
            Shown::Process(t) => Row {
                cells: cols
                    .iter()
                    .map(|c| c.cell(t, state, theme, command_width))
                    .collect(),
                // Exited processes stay a while, dimmed (not greyed: the selection's grey
                // background would hide grey text).
                style: if t.exited_ms.is_some() {
                    Style::new().add_modifier(Modifier::DIM)
                } else {
                    Style::new()
                },
            },
        })
        .collect();
    let selected = selected.map(|s| s - shown.start);
    // Exited rows: "[exited 17s ago, OOM: fragmentation] python3 train.py" across the columns
    // they have nothing current for, so the cause is not cut to COMMAND's width.
    let span_x = cols
        .iter()
        .take_while(|c| !c.spanned_when_exited())
        .map(|c| c.width(mig) + 1)
        .sum::<u16>()
        + SELECTION_WIDTH;
    let room = usize::from(inner.width.saturating_sub(SELECTION_WIDTH));
    let over: Vec<Option<(u16, String, Style)>> = lines
        .iter()
        .map(|line| match line {
            Shown::Job(j) => Some((
                SELECTION_WIDTH,
                job_line::text(j, state, theme, room),
                theme.title,
            )),
            Shown::Process(t) => {
                let label = super::life::exit_label(state, t)?;
                let command = t.sample.command.value().map_or("n/a", String::as_str);
                Some((
                    span_x,
                    format!("[{label}] {command}"),
                    Style::new().add_modifier(Modifier::DIM),
                ))
            }
        })
        .collect();
    // Each line stamped with what decides its cells (the header's and the rows' under them
    // blank): a line stamped alike before is not drawn.
    let mut skip = Vec::with_capacity(rows.len() + 1);
    let mut line_at = inner.top()..inner.bottom();
    let mut stamp = |content: u64| match line_at.next() {
        Some(y) => stamps.kept(
            Rect {
                y,
                height: 1,
                ..inner
            },
            content,
        ),
        None => false,
    };
    skip.push(stamp(paint::hash(&(&header.cells, header.style, &widths))));
    for (n, (row, over)) in rows.iter().zip(&over).enumerate() {
        let highlight = (selected == Some(n)).then_some(theme.selected);
        skip.push(stamp(paint::hash(&(
            &row.cells, row.style, &widths, highlight, over,
        ))));
    }
    stamps.kept(
        Rect {
            y: line_at.start,
            height: line_at.len() as u16,
            ..inner
        },
        BLANK,
    );
    let grid = Grid {
        header,
        rows: &rows,
        widths: &widths,
        selected,
        highlight: theme.selected,
        skip: &skip,
    };
    grid.render(inner, frame.buffer_mut());
    for (n, over) in over.into_iter().enumerate() {
        let Some((x, text, style)) = over.filter(|_| !skip[n + 1]) else {
            continue;
        };
        let y = inner.y + 1 + u16::try_from(n).unwrap_or(u16::MAX);
        let area = Rect::new(inner.x + x, y, inner.width.saturating_sub(x), 1).intersection(inner);
        let text = fit(&text, usize::from(area.width), theme.g.ellipsis);
        draw_lines(frame, area, Line::styled(text, style));
    }
}

/// A line of the table on screen.
enum Shown<'a> {
    Job(&'a JobLine),
    Process(&'a ProcessTrack),
}

/// Columns the selection marker ("> ") takes at the start of each row.
const SELECTION_WIDTH: u16 = grid::MARKER.len() as u16;

/// The row (an index into `state.screen.rows`) drawn on screen line `y` of the table in `area`;
/// on a job's line, its first process.
pub fn row_at(area: Rect, state: &State, y: u16) -> Option<usize> {
    // Below the top border and the header, above the bottom border.
    let first = area.y + 2;
    let height = area.height.saturating_sub(3);
    if y < first || y >= first + height {
        return None;
    }
    let screen = &state.screen;
    let selected = screen
        .selected
        .as_ref()
        .and_then(|k| screen.rows.iter().position(|r| r == k))
        .map(|row| screen.line_of(row));
    let shown = on_screen(screen.table_len(), selected, height);
    let line = shown.start + usize::from(y - first);
    if !shown.contains(&line) {
        return None;
    }
    match screen.table_line(line)? {
        TableLine::Process(row) => Some(row),
        TableLine::Job(n) => screen.job_lines.get(n).map(|j| j.first),
    }
}

/// The rows a `Table` of `len` one-line rows shows in `height` lines, scrolled from the top just
/// enough to show the `selected` one (what `Table` itself does with a fresh `TableState`).
fn on_screen(len: usize, selected: Option<usize>, height: u16) -> std::ops::Range<usize> {
    let height = usize::from(height).max(1);
    let selected = selected.map_or(0, |s| s.min(len.saturating_sub(1)));
    let start = (selected + 1).saturating_sub(height);
    start..len.min(start + height)
}

#[cfg(test)]
mod tests;
