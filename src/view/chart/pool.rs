//! A probed process's chart: device memory and the pool (reserved) as lines, allocated memory
//! filled, the stranded part of the pool as a band of `▄` (`:` in ASCII) just above the allocated
//! area, the limit as a line when the axis reaches it, and each alert (`alert`) and allocation
//! failure (`OOM`) as a vertical line at its moment.
//!
//! A fragmentation that builds shows as the band widening between allocated and pool; a leak as
//! the allocated area climbing to the limit line; cache growth as the pool line rising over a
//! flat allocated area.

use ratatui::symbols::Marker;
use ratatui::widgets::GraphType;

use super::plot::Dataset;
use super::{named, push_runs, series};
use crate::model::units;
use crate::screen::chart::{PoolChart, Run, gib};
use crate::view::theme::Theme;

/// The vertical lines of the alerts' and failures' moments, from 0 to the axis's top.
pub struct Marks {
    alerts: Vec<Run>,
    ooms: Vec<Run>,
}

pub fn marks(p: &PoolChart, top: f64) -> Marks {
    let line = |x: &f64| vec![(*x, 0.0), (*x, top)];
    Marks {
        alerts: p.alerts.iter().map(line).collect(),
        ooms: p.ooms.iter().map(line).collect(),
    }
}

pub fn datasets<'a>(
    out: &mut Vec<Dataset<'a>>,
    p: &'a PoolChart,
    marks: &'a Marks,
    top: f64,
    ascii: bool,
    theme: &Theme,
) {
    let line = GraphType::Line;
    push_runs(
        out,
        &p.device,
        ascii,
        line,
        theme.spark,
        named("device", &p.device),
    );
    push_runs(
        out,
        &p.reserved,
        ascii,
        line,
        theme.segment[1],
        named("pool", &p.reserved),
    );
    // The stranded band: drawn first, then covered by the allocated area up to its line.
    let mut name = p
        .now
        .stranded
        .map(|s| format!("stranded {}", units::compact(s)));
    for run in &p.stranded_top {
        out.push(Dataset {
            data: run,
            marker: Marker::Bar,
            kind: GraphType::Area,
            style: theme.segment[2],
            name: name.take(),
        });
    }
    push_runs(
        out,
        &p.allocated,
        ascii,
        GraphType::Area,
        theme.selected_line,
        named("allocated", &p.allocated),
    );
    if p.now.limit.is_some_and(|l| gib(l) <= top) {
        push_runs(
            out,
            &p.limit,
            ascii,
            line,
            theme.alert,
            named("limit", &p.limit),
        );
    }
    for (runs, name, style) in [
        (&marks.alerts, "alert", theme.segment[1]),
        (&marks.ooms, "OOM", theme.mark),
    ] {
        let mut name = Some(name.to_string());
        for run in runs {
            out.push(series(run, ascii, line, style, name.take()));
        }
    }
}
