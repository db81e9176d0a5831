//! The process table's columns: what each shows for a process, how wide it is, and which give
//! way on narrow screens.

use ratatui::layout::Constraint;
use ratatui::style::Style;
use ratatui::text::Line;

use super::super::text::fit;
use super::super::theme::Theme;
use crate::model::{ProcessTrack, units};
use crate::sample::Reading;
use crate::screen::State;

/// COMMAND keeps at least this many columns; other columns are dropped to make room.
pub(super) const MIN_COMMAND: u16 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Col {
    Gpu,
    Pid,
    /// "0/2": the process's rank in its distributed job and the world size.
    Rank,
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

pub(super) const COLUMNS: [Col; 18] = [
    Col::Gpu,
    Col::Pid,
    Col::Rank,
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
    pub(super) fn title(self) -> &'static str {
        match self {
            Col::Gpu => "GPU",
            Col::Pid => "PID",
            Col::Rank => "RANK",
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
    pub(super) fn width(self, mig: bool) -> u16 {
        match self {
            Col::Gpu => 3 + u16::from(mig),
            Col::Fw => 5,
            Col::Pid | Col::Rank | Col::Device | Col::Peak | Col::Vms | Col::Rss | Col::Ratio => 7,
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
            Col::Rank => 11,
            Col::Growth => 12,
            Col::Vms => 13,
            Col::Pool => 14,
            Col::Gpu | Col::Pid | Col::Device | Col::Command => 0,
        }
    }

    /// Columns an exited process has nothing current for: on its row they make one span, from
    /// the first of them to the end, holding when and why it exited and its command.
    pub(super) fn spanned_when_exited(self) -> bool {
        matches!(
            self,
            Col::Growth
                | Col::Pool
                | Col::Container
                | Col::Sm
                | Col::MemUtil
                | Col::Enc
                | Col::Dec
                | Col::Command
        )
    }

    fn right_aligned(self) -> bool {
        !matches!(self, Col::User | Col::Fw | Col::Container | Col::Command)
    }

    /// The cell of `t` in this column; COMMAND is cut to `command_width` with an ellipsis.
    pub(super) fn cell(
        self,
        t: &ProcessTrack,
        state: &State,
        theme: &Theme,
        command_width: usize,
    ) -> Line<'static> {
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
            Col::Rank => return rank_cell(t, state, theme),
            Col::User => s.user.value().cloned(),
            Col::Fw => s.framework.value().map(|f| f.label().to_string()),
            Col::Device => size(&s.device_memory),
            Col::Peak => t.peak.map(units::compact),
            // As last read (`~`) once the process's address space is gone: never 0.
            Col::Vms => t.vms().map(last_mark),
            Col::Rss => t.rss().map(last_mark),
            Col::Ratio => t.vms_ratio().map(|r| {
                if r < 100.0 {
                    format!("{r:.1}x")
                } else {
                    format!("{r:.0}x")
                }
            }),
            // An exited row's live figures give their columns to its exit line (`exit_line`).
            c if t.exited_ms.is_some() && c.spanned_when_exited() => return Line::default(),
            Col::Growth => t.growth.map(units::growth),
            Col::Pool => super::super::pool::cell(t),
            Col::Container => s.container.value().map(|c| c.short.clone()),
            Col::Sm => s.util.value().map(|u| u.sm.to_string()),
            Col::MemUtil => s.util.value().map(|u| u.memory.to_string()),
            Col::Enc => s.util.value().map(|u| u.encoder.to_string()),
            Col::Dec => s.util.value().map(|u| u.decoder.to_string()),
            Col::Command => s.command.value().cloned(),
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

pub(super) fn align(line: Line<'static>, col: Col) -> Line<'static> {
    if col.right_aligned() {
        line.right_aligned()
    } else {
        line
    }
}

/// Columns taken by `cols` at their fixed widths, with the selection marker and spacing.
pub(super) fn needed(cols: &[Col], mig: bool) -> u16 {
    cols.iter().map(|c| c.width(mig)).sum::<u16>() + u16::try_from(cols.len()).unwrap_or(0) + 1
}

/// Which optional columns the processes shown have something for.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Optional {
    /// Allocator-probe figures (ALLOC/POOL).
    pub(super) probed: bool,
    /// A container, pod, job or service (CONTAINER).
    pub(super) placed: bool,
    /// A rank of a distributed job (RANK).
    pub(super) ranked: bool,
}

/// The columns that fit in `width` (the selection marker included); the optional ones only when
/// a process shown has something for them.
pub(super) fn visible(width: u16, optional: Optional, mig: bool) -> Vec<Col> {
    let mut cols = COLUMNS.to_vec();
    cols.retain(|c| match c {
        Col::Pool => optional.probed,
        Col::Container => optional.placed,
        Col::Rank => optional.ranked,
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

pub(super) fn width_of(c: Col, mig: bool) -> Constraint {
    if c == Col::Command {
        Constraint::Fill(1)
    } else {
        Constraint::Length(c.width(mig))
    }
}

/// A size, marked `~` when it is the last reading of a process whose address space is gone.
fn last_mark((bytes, last): (u64, bool)) -> String {
    if last {
        format!("~{}", units::compact(bytes))
    } else {
        units::compact(bytes)
    }
}

/// RANK: "0/2"; "?/2" when its rank could not be trusted (its own variables, or another running
/// process of the job claiming the same rank); empty for a process that is no rank; "?" when
/// its initial environment could not be read and no probe said (the detail pane says so).
fn rank_cell(t: &ProcessTrack, state: &State, theme: &Theme) -> Line<'static> {
    let s = &t.sample;
    let (text, style) = match &s.rank {
        Some(r) => {
            let trusted = state
                .machine()
                .job_of(s.pid)
                .map_or(r.rank, |(_, row)| row.rank);
            let rank = trusted.map_or_else(|| "?".to_string(), |n| n.to_string());
            let text = match r.world_size {
                Some(w) => format!("{rank}/{w}"),
                None => rank,
            };
            let style = if trusted.is_some() {
                Style::new()
            } else {
                theme.na
            };
            (text, style)
        }
        None if s.settings.value().is_none() => ("?".to_string(), theme.na),
        None => (String::new(), Style::new()),
    };
    align(Line::styled(text, style), Col::Rank)
}
