//! The header (the top border's title): host, versions, interval, filter, `gpumon run`'s command
//! and log, the followed logs left behind by their writers (their backlog and since when), pause,
//! replay (its speed, its loop or its end) and sample age; and the banner line of a failing
//! source.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::text::fit;
use super::theme::Theme;
use crate::model::{SourceState, units};
use crate::screen::State;

/// One part of the header; parts with the highest `drop` give way first on narrow screens.
struct Part {
    text: String,
    style: Style,
    drop: u8,
}

/// The header for a border `width` columns wide.
pub fn title(state: &State, theme: &Theme, width: u16) -> Line<'static> {
    let mut parts = vec![Part {
        text: "gpumon".into(),
        style: theme.title,
        drop: 0,
    }];
    let mut add = |text: String, style: Style, drop: u8| parts.push(Part { text, style, drop });
    if let Some(part) = fleet_part(state) {
        add(part, theme.title, 0);
    }
    if state.overview() {
        add(
            format!("every {}", units::interval(state.config.interval_ms)),
            Style::new(),
            4,
        );
        return fitted(parts, theme, width);
    }
    if let Some(m) = &state.machine().info {
        // A fleet's part already names the host ("host 2/3 gpu-07:9477"): once is enough.
        if !state
            .host_name()
            .is_some_and(|n| n.contains(m.host.as_str()))
        {
            add(format!("host {}", m.host), Style::new(), 5);
        }
        if let Some(d) = &m.driver_version {
            add(format!("driver {d}"), Style::new(), 7);
        }
        if let Some(c) = &m.cuda_version {
            add(format!("CUDA {c}"), Style::new(), 6);
        }
    }
    add(
        format!("every {}", units::interval(state.config.interval_ms)),
        Style::new(),
        4,
    );
    if let Some(f) = &state.screen.filter {
        add(format!("filter: {}", f.label()), theme.paused, 2);
    }
    if let Some(r) = &state.screen.run {
        add(format!("run {}", r.command), Style::new(), 3);
        add(format!("log {}", r.log), Style::new(), 1);
        if let Some(end) = r.ended {
            add(end.describe(), theme.alert, 0);
        }
    }
    if let Some(part) = behind_part(state) {
        add(part, theme.paused, 1);
    }
    if let Some(x) = state.config.replay_speed {
        add(format!("replay {}", units::speed(x)), Style::new(), 3);
    }
    // A looping replay (the demo) says which pass it is on: each starts clean.
    if state.machine().lap > 1 {
        add(format!("loop {}", state.machine().lap), theme.paused, 0);
    }
    if state.screen.paused {
        add("PAUSED".into(), theme.paused, 0);
    }
    if state.machine().source == SourceState::Ended {
        add("replay ended".into(), theme.paused, 0);
    }
    if let Some(age) = stale_for(state) {
        add(format!("stale {}", units::duration_ms(age)), theme.alert, 0);
    }
    fitted(parts, theme, width)
}

/// The parts that fit `width`, dropping the most droppable first.
fn fitted(mut parts: Vec<Part>, theme: &Theme, width: u16) -> Line<'static> {
    let room = usize::from(width.saturating_sub(4));
    let sep = theme.g.sep.chars().count();
    let len = |parts: &[Part]| {
        parts.iter().map(|p| p.text.chars().count()).sum::<usize>()
            + sep * parts.len().saturating_sub(1)
    };
    while len(&parts) > room {
        match parts.iter().map(|p| p.drop).max() {
            Some(worst) if worst > 0 => {
                if let Some(i) = parts.iter().rposition(|p| p.drop == worst) {
                    parts.remove(i);
                }
            }
            _ => break,
        }
    }
    let mut spans = vec![Span::raw(" ")];
    for (i, p) in parts.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(theme.g.sep));
        }
        spans.push(Span::styled(fit(&p.text, room, theme.g.ellipsis), p.style));
    }
    spans.push(Span::raw(" "));
    Line::from(spans)
}

/// How old the last sample is, when more than two intervals old (not while paused: then the
/// screen is frozen on purpose).
fn stale_for(state: &State) -> Option<u64> {
    if state.screen.paused {
        return None;
    }
    let age = state
        .machine()
        .now_ms
        .checked_sub(state.machine().last_heard_ms()?)?;
    (age > 2 * state.config.interval_ms).then_some(age)
}

/// The followed logs gpumon is still reading behind their writers: "log train.log 212M behind
/// 41s, reading", or "2 logs 1.2G behind 41s, reading" (since the oldest unread byte was on disk).
fn behind_part(state: &State) -> Option<String> {
    let m = state.machine();
    let first = m.logs_behind.first()?;
    let bytes = units::compact(m.logs_behind.iter().map(|l| l.bytes).sum());
    let age = m
        .logs_behind
        .iter()
        .filter_map(|l| l.since_ms)
        .min()
        .and_then(|since| m.now_ms.checked_sub(since))
        .filter(|age| *age >= 1_000)
        .map_or_else(String::new, |age| {
            format!(" {}", units::duration_label(age))
        });
    Some(match m.logs_behind.len() {
        1 => {
            let name = first.log.rsplit('/').next().unwrap_or(&first.log);
            format!("log {name} {bytes} behind{age}, reading")
        }
        n => format!("{n} logs {bytes} behind{age}, reading"),
    })
}

/// The red line of a failing source: why, and since when.
pub fn banner(state: &State, theme: &Theme, width: u16) -> Option<Line<'static>> {
    let SourceState::Failing { since_ms, reason } = &state.machine().source else {
        return None;
    };
    let text = format!(
        " {} source failing since {}: {reason} ",
        theme.g.warn,
        units::clock(*since_ms)
    );
    Some(Line::styled(
        fit(&text, usize::from(width), theme.g.ellipsis),
        theme.banner,
    ))
}

/// The header's part for a fleet: its size in the overview, the host in view otherwise.
fn fleet_part(state: &State) -> Option<String> {
    let fleet = state.screen.fleet.as_ref()?;
    let n = fleet.rows.len();
    Some(if fleet.overview {
        format!("fleet of {n} hosts")
    } else {
        let name = state.host_name().unwrap_or("?");
        format!("host {}/{n} {name}", state.screen.host + 1)
    })
}
