//! The process table, in `state.screen.rows` order; the least important columns give way on narrow
//! screens and COMMAND takes what is left.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, HighlightSpacing, Padding, Paragraph, Row, Table, TableState};

use super::text::fit;
use super::theme::Theme;
use crate::model::{ProcessTrack, units};
use crate::sample::Reading;
use crate::screen::State;

/// COMMAND keeps at least this many columns; other columns are dropped to make room.
const MIN_COMMAND: u16 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Gpu,
    Pid,
    User,
    Fw,
    Device,
    Peak,
    Vms,
    Rss,
    Ratio,
    Growth,
    Pool,
    Container,
    /// Utilisation of the SMs, the memory controller, the encoder and the decoder, percent.
    Sm,
    MemUtil,
    Enc,
    Dec,
    Command,
}

const COLUMNS: [Col; 17] = [
    Col::Gpu,
    Col::Pid,
    Col::User,
    Col::Fw,
    Col::Device,
    Col::Peak,
    Col::Vms,
    Col::Rss,
    Col::Ratio,
    Col::Growth,
    Col::Pool,
    Col::Container,
    Col::Sm,
    Col::MemUtil,
    Col::Enc,
    Col::Dec,
    Col::Command,
];

impl Col {
    fn title(self) -> &'static str {
        match self {
            Col::Gpu => "GPU",
            Col::Pid => "PID",
            Col::User => "USER",
            Col::Fw => "FW",
            Col::Device => "DEVICE",
            Col::Peak => "PEAK",
            Col::Vms => "VMS",
            Col::Rss => "RSS",
            Col::Ratio => "VMS/DEV",
            // The window of the rate (`GROWTH_WINDOW_MS`).
            Col::Growth => "GROW/10s",
            Col::Pool => "ALLOC/POOL",
            Col::Container => "CONTAINER",
            Col::Sm => "SM%",
            Col::MemUtil => "MEM%",
            Col::Enc => "ENC%",
            Col::Dec => "DEC%",
            Col::Command => "COMMAND",
        }
    }

    /// Columns it takes; GPU takes one more for MIG instance ids ("0/13").
    fn width(self, mig: bool) -> u16 {
        match self {
            Col::Gpu => 3 + u16::from(mig),
            Col::Fw => 5,
            Col::Pid | Col::Device | Col::Peak | Col::Vms | Col::Rss | Col::Ratio => 7,
            Col::User => 7,
            Col::Growth => 8,
            Col::Pool => 11,
            Col::Container => 16,
            Col::Sm | Col::MemUtil | Col::Enc | Col::Dec => 4,
            Col::Command => MIN_COMMAND,
        }
    }

    /// Order in which columns give way (1 first); 0 never does.
    fn drop_rank(self) -> u8 {
        match self {
            Col::Dec => 1,
            Col::Enc => 2,
            Col::MemUtil => 3,
            Col::Sm => 4,
            Col::Rss => 5,
            Col::Peak => 6,
            Col::User => 7,
            Col::Container => 8,
            Col::Fw => 9,
            Col::Ratio => 10,
            Col::Growth => 11,
            Col::Vms => 12,
            Col::Pool => 13,
            Col::Gpu | Col::Pid | Col::Device | Col::Command => 0,
        }
    }

    fn right_aligned(self) -> bool {
        !matches!(self, Col::User | Col::Fw | Col::Container | Col::Command)
    }

    /// The cell of `t` in this column; COMMAND is cut to `command_width` with an ellipsis.
    fn cell(
        self,
        t: &ProcessTrack,
        state: &State,
        theme: &Theme,
        command_width: usize,
    ) -> Cell<'static> {
        let s = &t.sample;
        let size = |r: &Reading<u64>| r.get().map(units::compact);
        let text = match self {
            // "0/1": GPU 0, MIG GPU instance 1.
            Col::Gpu => state.machine().gpus.get(&s.gpu_uuid).map(|g| {
                let index = g.sample.index;
                s.gpu_instance_id
                    .map_or_else(|| index.to_string(), |gi| format!("{index}/{gi}"))
            }),
            Col::Pid => Some(s.pid.to_string()),
            Col::User => s.user.value().cloned(),
            Col::Fw => s.framework.value().map(|f| f.label().to_string()),
            Col::Device => size(&s.device_memory),
            Col::Peak => t.peak.map(units::compact),
            Col::Vms => size(&s.vms),
            Col::Rss => size(&s.rss),
            Col::Ratio => t.vms_ratio().map(|r| {
                if r < 100.0 {
                    format!("{r:.1}x")
                } else {
                    format!("{r:.0}x")
                }
            }),
            Col::Growth | Col::Sm | Col::MemUtil | Col::Enc | Col::Dec if t.exited_ms.is_some() => {
                Some("-".into())
            }
            Col::Growth => t.growth.map(units::growth),
            Col::Pool => super::pool::cell(t),
            Col::Container => s.container.value().map(|c| c.short.clone()),
            Col::Sm => s.util.value().map(|u| u.sm.to_string()),
            Col::MemUtil => s.util.value().map(|u| u.memory.to_string()),
            Col::Enc => s.util.value().map(|u| u.encoder.to_string()),
            Col::Dec => s.util.value().map(|u| u.decoder.to_string()),
            Col::Command => match super::life::exit_label(state, t) {
                Some(label) => Some(format!(
                    "[{label}] {}",
                    s.command.value().map_or("n/a", String::as_str)
                )),
                None => s.command.value().cloned(),
            },
        };
        let (text, style) = match text {
            Some(v) => (v, Style::new()),
            None => ("n/a".to_string(), theme.na),
        };
        let text = match self {
            Col::User | Col::Container => {
                fit(&text, usize::from(self.width(false)), theme.g.ellipsis)
            }
            Col::Command => fit(&text, command_width, theme.g.ellipsis),
            _ => text,
        };
        align(Line::styled(text, style), self)
    }
}

fn align(line: Line<'static>, col: Col) -> Cell<'static> {
    Cell::from(if col.right_aligned() {
        line.right_aligned()
    } else {
        line
    })
}

/// Columns taken by `cols` at their fixed widths, with the selection marker and spacing.
fn needed(cols: &[Col], mig: bool) -> u16 {
    cols.iter().map(|c| c.width(mig)).sum::<u16>() + u16::try_from(cols.len()).unwrap_or(0) + 1
}

/// Which optional columns the processes shown have something for.
#[derive(Debug, Clone, Copy, Default)]
struct Optional {
    /// Allocator-probe figures (ALLOC/POOL).
    probed: bool,
    /// A container, pod, job or service (CONTAINER).
    placed: bool,
}

/// The columns that fit in `width` (the selection marker included); the optional ones only when
/// a process shown has something for them.
fn visible(width: u16, optional: Optional, mig: bool) -> Vec<Col> {
    let mut cols = COLUMNS.to_vec();
    cols.retain(|c| match c {
        Col::Pool => optional.probed,
        Col::Container => optional.placed,
        _ => true,
    });
    while needed(&cols, mig) > width {
        let Some(worst) = cols
            .iter()
            .copied()
            .filter(|c| c.drop_rank() > 0)
            .min_by_key(|c| c.drop_rank())
        else {
            break;
        };
        cols.retain(|c| *c != worst);
    }
    cols
}

/// The block title: sort order, filter and focused GPU.
fn title(state: &State, theme: &Theme) -> Line<'static> {
    let mut parts = vec![format!(
        "processes (sorted by {})",
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

pub fn render(frame: &mut Frame, area: Rect, block: Block<'static>, state: &State, theme: &Theme) {
    let block = block.title(title(state, theme)).padding(Padding::right(1));
    let inner = block.inner(area);
    frame.render_widget(block, area);
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
    };
    let mig = !state.screen.mig.is_empty();
    let cols = visible(inner.width, optional, mig);
    let command_width = usize::from(inner.width - needed(&cols, mig) + MIN_COMMAND);
    let header = Row::new(cols.iter().map(|c| align(Line::raw(c.title()), *c))).style(theme.title);
    if state.screen.rows.is_empty() {
        let [head, body] = inner.layout(&ratatui::layout::Layout::vertical([
            Constraint::Length(1),
            Constraint::Fill(1),
        ]));
        let widths = cols.iter().map(|c| width_of(*c, mig));
        frame.render_widget(
            Table::new(Vec::<Row>::new(), widths)
                .header(header)
                .highlight_spacing(HighlightSpacing::Always)
                .highlight_symbol("> "),
            head,
        );
        frame.render_widget(
            Paragraph::new(Line::from(vec![
                Span::raw("  "),
                Span::styled(empty_reason(state, theme), theme.na),
            ])),
            body,
        );
        return;
    }
    let tracks: Vec<&ProcessTrack> = state
        .screen
        .rows
        .iter()
        .filter_map(|k| state.machine().processes.get(k))
        .collect();
    let selected = state
        .screen
        .selected
        .as_ref()
        .and_then(|k| state.screen.rows.iter().position(|r| r == k));
    // Only the rows on screen are built (formatting every process's cells each frame cost
    // more than the rest of the frame together).
    let shown = on_screen(tracks.len(), selected, inner.height.saturating_sub(1));
    let rows = tracks[shown.clone()].iter().map(|t| {
        let row = Row::new(cols.iter().map(|c| c.cell(t, state, theme, command_width)));
        // Exited processes stay a while, dimmed (not greyed: the selection's grey background
        // would hide grey text).
        if t.exited_ms.is_some() {
            row.style(Style::new().add_modifier(Modifier::DIM))
        } else {
            row
        }
    });
    let table = Table::new(rows, cols.iter().map(|c| width_of(*c, mig)))
        .header(header)
        .row_highlight_style(theme.selected)
        .highlight_symbol("> ")
        .highlight_spacing(HighlightSpacing::Always);
    let mut table_state = TableState::new().with_selected(selected.map(|s| s - shown.start));
    frame.render_stateful_widget(table, inner, &mut table_state);
}

/// The row (an index into `state.screen.rows`) drawn on screen line `y` of the table in `area`.
pub fn row_at(area: Rect, state: &State, y: u16) -> Option<usize> {
    // Below the top border and the header, above the bottom border.
    let first = area.y + 2;
    let height = area.height.saturating_sub(3);
    if y < first || y >= first + height {
        return None;
    }
    let rows = &state.screen.rows;
    let selected = state
        .screen
        .selected
        .as_ref()
        .and_then(|k| rows.iter().position(|r| r == k));
    let shown = on_screen(rows.len(), selected, height);
    let i = shown.start + usize::from(y - first);
    shown.contains(&i).then_some(i)
}

/// The rows a `Table` of `len` one-line rows shows in `height` lines, scrolled from the top just
/// enough to show the `selected` one (what `Table` itself does with a fresh `TableState`).
fn on_screen(len: usize, selected: Option<usize>, height: u16) -> std::ops::Range<usize> {
    let height = usize::from(height).max(1);
    let selected = selected.map_or(0, |s| s.min(len.saturating_sub(1)));
    let start = (selected + 1).saturating_sub(height);
    start..len.min(start + height)
}

fn width_of(c: Col, mig: bool) -> Constraint {
    if c == Col::Command {
        Constraint::Fill(1)
    } else {
        Constraint::Length(c.width(mig))
    }
}

#[cfg(test)]
mod tests;
