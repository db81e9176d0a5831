//! A process's life in words: its growth over the short window and its last change of memory,
//! and for one that exited, when, why (the failure's evidence and remedy when a log said), for
//! the process table and the detail pane.

use ratatui::text::{Line, Span};

use super::theme::Theme;
use crate::model::{GROWTH_WINDOW_MS, ProcessTrack, units};
use crate::sample::MainWhere;
use crate::screen::State;

/// "exited 12s ago", with its cause when known: "exited 12s ago, OOM: fragmentation".
pub fn exit_label(state: &State, t: &ProcessTrack) -> Option<String> {
    let exited = t.exited_ms?;
    let ago = units::duration_ms(state.machine().now_ms.saturating_sub(exited));
    let cause = state.exit_cause(t)?.label();
    Some(if cause == "exited" {
        format!("exited {ago} ago")
    } else {
        format!("exited {ago} ago, {cause}")
    })
}

/// "growth flat over 10s, last change +11.9G 40s ago".
pub fn growth_line(state: &State, t: &ProcessTrack, theme: &Theme) -> Line<'static> {
    let window = units::duration_ms(GROWTH_WINDOW_MS);
    let mut spans = vec![Span::raw("growth ")];
    spans.push(match (t.exited_ms, t.growth) {
        (Some(_), _) => Span::styled("none (exited)", theme.na),
        (None, Some(g)) => Span::raw(format!("{} over {window}", units::growth(g))),
        (None, None) => Span::styled(format!("n/a (needs {window} of readings)"), theme.na),
    });
    if let Some(c) = t.last_change {
        let ago = units::duration_ms(state.machine().now_ms.saturating_sub(c.at_ms));
        spans.push(Span::raw(format!(
            ", last change {} {ago} ago",
            units::change(c.by)
        )));
    }
    Line::from(spans)
}

/// The detail pane's lines about the process's life: its growth, where its main thread stands
/// still (its probe's word), and for one that exited, when and why, with how its probe saw it
/// end and the evidence and remedy of the alert that explains it.
pub fn detail_lines(t: &ProcessTrack, state: &State, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = vec![growth_line(state, t, theme)];
    if let Some(w) = &t.stuck {
        let until = t.exited_ms.unwrap_or(state.machine().now_ms);
        out.push(Line::raw(place(w, until)));
    }
    let Some(label) = exit_label(state, t) else {
        return out;
    };
    out.push(Line::styled(label, theme.alert));
    if let Some(end) = &t.end {
        out.push(Line::raw(format!("  its probe: {}", end.words())));
    }
    let alert = state.exit_cause(t).and_then(|c| c.alert().cloned());
    if let Some(a) = alert {
        out.extend(a.evidence.iter().map(|e| Line::raw(format!("  {e}"))));
        if let Some(r) = &a.remedy {
            out.push(Line::from(vec![
                Span::styled("remedy ", theme.title),
                Span::raw(r.clone()),
            ]));
        }
    }
    out
}

/// An alert's link to its process: "pid 873 exited 12s ago", "pid 873 is running".
pub fn alert_link(state: &State, a: &crate::model::Alert) -> Option<String> {
    let t = state.process_of(a)?;
    let now = match exit_label(state, t) {
        Some(label) => label,
        None => "is running".into(),
    };
    Some(format!("pid {} {now}", t.key.pid))
}

/// "main thread still 41s in data/loader.py:88 next_batch" (for one that ended, until it was
/// seen gone), or "main thread at …" when asked for and it had just arrived there.
fn place(w: &MainWhere, until_ms: u64) -> String {
    let at = w.label().unwrap_or_else(|| "no Python frame".into());
    let still = until_ms.saturating_sub(w.since_ms);
    if w.asked && still < 1000 {
        format!("main thread at {at}")
    } else {
        format!("main thread still {} in {at}", units::duration_ms(still))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Config, Event};
    use crate::sample::WhereNews;
    use crate::sample::process_end::{EndHow, Frame};
    use crate::sample::{GpuSample, ProbeNews, ProcessEnd, ProcessSample, Reading, Sample};
    use crate::screen::Msg;
    use crate::source::scripted::build::{GIB, gpu, process};

    const T0: u64 = 1_763_812_900_000;
    const START: u64 = T0 / 1000 - 100;

    fn feed(
        state: &mut State,
        g: &GpuSample,
        k: u64,
        p: Option<&ProcessSample>,
        probes: Vec<ProbeNews>,
    ) {
        state.update(Msg::from(Event::Sample(Sample {
            at_ms: T0 + k * 1000,
            gpus: vec![g.clone()],
            processes: p.into_iter().cloned().collect(),
            probes,
            ..Default::default()
        })));
    }

    fn news(end: Option<ProcessEnd>, main_where: Option<WhereNews>) -> ProbeNews {
        ProbeNews {
            pid: 1479,
            start_time: START,
            answer: None,
            recording: None,
            map: None,
            end,
            main_where,
        }
    }

    fn text(state: &State) -> Vec<String> {
        let theme = Theme::new(&Config::new(1000, 600_000));
        let t = state.machine().processes.values().next().unwrap();
        detail_lines(t, state, &theme)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.to_string()).collect())
            .collect()
    }

    /// The probe's word on a process in the detail pane: where its main thread stands still
    /// while it runs (and had stood when it was seen gone), and how it ended.
    #[test]
    fn the_detail_says_where_it_stands_and_how_it_ended() {
        let g = gpu(0, 80 * GIB, 10 * GIB, 0);
        let mut p = process(
            1479,
            &g,
            9 * GIB,
            crate::sample::Framework::Pytorch,
            "python x.py",
        );
        p.start_time = Reading::Value(START);
        let place = MainWhere {
            frames: vec![Frame {
                file: "/w/proj/data/loader.py".into(),
                line: 88,
                function: "next_batch".into(),
            }],
            since_ms: T0 - 10_000,
            at_ms: T0,
            asked: false,
        };
        let mut state = State::new(Config::new(1000, 600_000));
        feed(
            &mut state,
            &g,
            0,
            Some(&p),
            vec![news(None, Some(WhereNews::At(place)))],
        );
        for k in 1..=31 {
            feed(&mut state, &g, k, Some(&p), vec![]);
        }
        let still = "main thread still 41s in data/loader.py:88 next_batch".to_string();
        assert!(text(&state).contains(&still), "{:?}", text(&state));
        feed(&mut state, &g, 32, None, vec![]);
        let lines = text(&state);
        let until_gone = "main thread still 42s in data/loader.py:88 next_batch".to_string();
        assert!(lines.contains(&until_gone), "{lines:?}");
        assert!(!lines.iter().any(|l| l.contains("its probe")), "{lines:?}");
        let end = ProcessEnd {
            how: EndHow::Exit,
            code: None,
            exception: None,
            at_ms: T0 + 31_500,
        };
        let moved = WhereNews::Moved { at_ms: T0 + 31_500 };
        feed(&mut state, &g, 33, None, vec![news(Some(end), Some(moved))]);
        let lines = text(&state);
        assert!(lines.contains(&"  its probe: exited".into()), "{lines:?}");
        assert!(
            !lines.iter().any(|l| l.contains("main thread")),
            "{lines:?}"
        );
    }
}
