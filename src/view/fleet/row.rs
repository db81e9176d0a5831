//! One host's row of the overview and the widths of its columns at a screen width: the name as
//! wide as the longest (within 8 columns and a fifth of the screen), then the room left shared
//! between the memory bars (one per GPU, or one for all when each would be too narrow) and the
//! worst alert, so a row uses the width of any screen from 80 to 250 columns.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::model::{Level, Segments, units};
use crate::screen::{FleetSort, HostRow, HostState};
use crate::view::gpus::bar_spans;
use crate::view::text::fit;
use crate::view::theme::Theme;

/// "  42G/160G   26%" and the two spaces after it.
const MEMORY: usize = 18;
/// The sample's age ("10s ago", "replay ended").
const STATE: usize = 12;
/// The alert column's narrowest and widest.
const ALERT: (usize, usize) = (12, 40);
/// A bar's inside is at least this wide, else the GPUs share one bar.
const MIN_BAR: usize = 4;
/// A bar's inside is at most this wide.
const MAX_BAR: usize = 40;
/// From this width on the alert cell shows the alert's title, not only its class.
const TITLED: usize = 40;
/// Kinds of fault a remote host's reason starts with (`remote::FetchError`).
const FAULTS: [&str; 4] = ["unreachable", "slow", "refused", "bad answer"];

/// The columns' widths at one screen width.
pub struct Columns {
    name: usize,
    /// 0: no room for bars.
    bars: usize,
    alert: usize,
    width: usize,
}

impl Columns {
    pub fn of(rows: &[HostRow], width: usize) -> Self {
        let name = rows
            .iter()
            .map(|r| r.name.chars().count())
            .max()
            .unwrap_or(0)
            .clamp(8, (width / 5).max(8));
        // "> 12 name GPUS " before the bars, the memory figures and the state after them.
        let fixed = 1 + 1 + 2 + 1 + name + 1 + 4 + 1 + MEMORY + 2 + 1 + STATE;
        let rest = width.saturating_sub(fixed);
        let alert = (rest * 2 / 5).clamp(ALERT.0, ALERT.1).min(rest);
        // A GPU's bar needs no more than `MAX_BAR` columns: the alert gets what is over.
        let most = rows.iter().map(|r| r.bars.len()).max().unwrap_or(1).max(1);
        let bars = rest.saturating_sub(alert + 1).min(most * (MAX_BAR + 3));
        let bars = if bars >= MIN_BAR + 2 { bars } else { 0 };
        let alert = rest.saturating_sub(bars + usize::from(bars > 0));
        Columns {
            name,
            bars,
            alert,
            width,
        }
    }

    pub fn header(&self, sort: FleetSort) -> String {
        let alert = match sort {
            FleetSort::Alert => "ALERT (sorted)",
            _ => "ALERT",
        };
        let memory = match sort {
            FleetSort::Used => "USED / TOTAL (sorted)",
            _ => "USED / TOTAL",
        };
        let host = match sort {
            FleetSort::Name => "HOST (sorted)",
            _ => "HOST",
        };
        let bars = if self.bars > 0 {
            format!("{:<w$} ", "MEMORY", w = self.bars)
        } else {
            String::new()
        };
        format!(
            "   # {host:<name$} GPUS {bars}{memory:<mem$} {alert:<al$} SAMPLE",
            name = self.name,
            mem = MEMORY + 2,
            al = self.alert
        )
    }
}

/// One host's row.
pub fn line(row: &HostRow, cursor: bool, c: &Columns, theme: &Theme) -> Line<'static> {
    let mark = if cursor { ">" } else { " " };
    let gpus = if row.gpus == 0 {
        "-".to_string()
    } else {
        row.gpus.to_string()
    };
    let base = if cursor { theme.selected } else { Style::new() };
    let lead = format!(
        "{mark}{:>3} {:<name$} {gpus:>4} ",
        row.index + 1,
        fit(&row.name, c.name, theme.g.ellipsis),
        name = c.name
    );
    let mut spans = vec![Span::styled(lead.clone(), base)];
    let mut used = lead.chars().count();
    // A host that cannot be read: why, across the row.
    if let HostState::Failing { since_ms, reason } = &row.state {
        let since = units::clock(*since_ms);
        let text = match reason.split_once(": ") {
            Some((what, why)) if FAULTS.contains(&what) => format!("{what} since {since}: {why}"),
            _ => format!("failing since {since}: {reason}"),
        };
        let rest = c.width.saturating_sub(used);
        spans.push(Span::styled(
            fit(&text, rest, theme.g.ellipsis),
            theme.alert,
        ));
        return Line::from(spans);
    }
    if c.bars > 0 {
        let bars = bars(&row.bars, c.bars, theme);
        used += bars.iter().map(Span::width).sum::<usize>();
        spans.extend(bars);
        let pad = (lead.chars().count() + c.bars + 1).saturating_sub(used);
        spans.push(Span::styled(" ".repeat(pad), base));
        used += pad;
    }
    let memory = match (row.used, row.total) {
        (Some(u), Some(t)) if t > 0 => {
            let pct = u.saturating_mul(100) / t;
            format!(
                "{:>6}/{:<6} {pct:>3}%",
                units::compact(u),
                units::compact(t)
            )
        }
        _ => "n/a".to_string(),
    };
    let memory = format!("{memory:<w$}", w = MEMORY + 2);
    used += memory.chars().count();
    spans.push(Span::styled(memory, base));
    let rest = c.width.saturating_sub(used);
    let (alert, style) = alert(row, c.alert >= TITLED, theme);
    let alert = fit(&alert, c.alert, theme.g.ellipsis);
    let pad = c.alert.saturating_sub(alert.chars().count()) + 1;
    spans.push(Span::styled(alert, style));
    spans.push(Span::raw(" ".repeat(pad)));
    let mut text = match &row.state {
        HostState::Starting => "starting".to_string(),
        HostState::Ended => "replay ended".to_string(),
        HostState::Ok { age_ms: Some(a) } => format!("{} ago", units::duration_ms(*a)),
        _ => "no sample yet".to_string(),
    };
    if let Some(m) = row.matches {
        text = format!("{m} match  {text}");
    }
    let rest = rest.saturating_sub(c.alert + 1);
    spans.push(Span::styled(fit(&text, rest, theme.g.ellipsis), base));
    Line::from(spans)
}

/// The worst alert's cell ("⚠ OOM fragmentation pid 5230 +2", or its title where the column is
/// wide): only what warns wears the sign and the alert colour; information is plain.
fn alert(row: &HostRow, titled: bool, theme: &Theme) -> (String, Style) {
    let Some(w) = &row.worst else {
        return ("-".to_string(), theme.na);
    };
    let sign = if w.level.warns() {
        format!("{} ", theme.g.warn)
    } else {
        String::new()
    };
    let oom = if w.level == Level::Failure && crate::analysis::classify::is_oom(&w.class) {
        "OOM "
    } else {
        ""
    };
    let pid = w.pid.map(|p| format!(" pid {p}")).unwrap_or_default();
    let more = if w.others > 0 {
        format!(" +{}", w.others)
    } else {
        String::new()
    };
    let style = if w.level.warns() {
        theme.alert
    } else {
        Style::new()
    };
    let text = if titled {
        format!("{sign}{}{more}", w.title)
    } else {
        format!("{sign}{oom}{}{pid}{more}", w.class)
    };
    (text, style)
}

/// A bar per GPU in `width` columns, or one bar of them all (`×8`) when each would be narrower
/// than `MIN_BAR`; a GPU whose memory was not read is `[n/a]`.
fn bars(gpus: &[Option<Segments>], width: usize, theme: &Theme) -> Vec<Span<'static>> {
    let n = gpus.len();
    if n == 0 {
        return vec![Span::styled("-", theme.na)];
    }
    let each = (width + 1) / n;
    if each >= MIN_BAR + 3 {
        let mut out = Vec::new();
        for (i, g) in gpus.iter().enumerate() {
            if i > 0 {
                out.push(Span::raw(" "));
            }
            out.extend(bar(g.as_ref(), each - 3, theme));
        }
        return out;
    }
    let read: Vec<&Segments> = gpus.iter().flatten().collect();
    let all = (!read.is_empty()).then(|| Segments {
        total: read.iter().map(|s| s.total).sum(),
        processes: read.iter().map(|s| s.processes).sum(),
        other: read.iter().map(|s| s.other).sum(),
        reserved: Some(read.iter().filter_map(|s| s.reserved).sum()),
        free: read.iter().map(|s| s.free).sum(),
    });
    let label = format!(" x{n}");
    let inner = width.saturating_sub(2 + label.len());
    let mut out = bar(all.as_ref(), inner, theme);
    out.push(Span::raw(label));
    out
}

fn bar(seg: Option<&Segments>, inner: usize, theme: &Theme) -> Vec<Span<'static>> {
    let mut out = vec![Span::raw("[")];
    match seg {
        Some(s) => out.extend(bar_spans(s, inner, theme)),
        None => out.push(Span::styled(
            format!("{:<inner$}", fit("n/a", inner, theme.g.ellipsis)),
            theme.na,
        )),
    }
    out.push(Span::raw("]"));
    out
}
