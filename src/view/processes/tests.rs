//! The process table's column choice and its on-screen rows.

use super::columns::*;
use super::*;
use crate::model::units;
use ratatui::widgets::Cell;

#[test]
fn the_growth_header_names_the_window() {
    let window = units::duration_ms(crate::model::GROWTH_WINDOW_MS);
    assert_eq!(Col::Growth.title(), format!("GROW/{window}"));
}

#[test]
fn narrow_screens_drop_rss_and_peak_first() {
    let both = Optional {
        probed: true,
        placed: true,
        ranked: false,
    };
    assert_eq!(visible(260, both, false).len(), 17);
    let all = visible(200, Optional::default(), false);
    assert_eq!(all.len(), 15);
    let at80 = visible(77, Optional::default(), false);
    assert!(!at80.contains(&Col::Rss) && !at80.contains(&Col::Peak));
    assert!(
        !at80
            .iter()
            .any(|c| matches!(c, Col::Sm | Col::MemUtil | Col::Enc | Col::Dec))
    );
    // At 120 columns (117 inside the table) every column fits.
    assert_eq!(visible(117, Optional::default(), false), all);
    assert_eq!(visible(117, Optional::default(), true), all);
    assert!(at80.contains(&Col::Ratio) && at80.contains(&Col::Command));
}

#[test]
fn rank_stays_at_80_columns_where_user_fw_and_the_ratio_give_way() {
    let ranked = Optional {
        ranked: true,
        ..Optional::default()
    };
    let every = Optional {
        probed: true,
        placed: true,
        ranked: true,
    };
    assert_eq!(visible(280, every, false).len(), 18);
    assert!(!visible(200, Optional::default(), false).contains(&Col::Rank));
    let at80 = visible(77, ranked, false);
    assert_eq!(
        at80,
        [
            Col::Gpu,
            Col::Pid,
            Col::Rank,
            Col::Fw,
            Col::Device,
            Col::Vms,
            Col::Ratio,
            Col::Growth,
            Col::Command
        ]
    );
    let probed = Optional {
        probed: true,
        ..ranked
    };
    let at80 = visible(77, probed, false);
    assert_eq!(
        at80,
        [
            Col::Gpu,
            Col::Pid,
            Col::Rank,
            Col::Device,
            Col::Vms,
            Col::Growth,
            Col::Pool,
            Col::Command
        ]
    );
    // At 120 columns only DEC% gives way to it.
    let at120 = visible(117, ranked, false);
    assert!(at120.contains(&Col::Rank) && !at120.contains(&Col::Dec));
    assert_eq!(at120.len(), 15);
}

/// Rendering only `on_screen` rows draws what the table draws with all of them.
#[test]
fn the_rows_on_screen_are_the_rows_the_table_shows() {
    use ratatui::buffer::Buffer;
    use ratatui::widgets::{HighlightSpacing, Row, StatefulWidget, Table, TableState};
    let draw = |rows: &[usize], selected: Option<usize>, height: u16| {
        let area = Rect::new(0, 0, 12, height);
        let mut buf = Buffer::empty(area);
        let table = Table::new(
            rows.iter().map(|i| Row::new([Cell::from(i.to_string())])),
            [Constraint::Fill(1)],
        )
        .header(Row::new(["head"]))
        .highlight_symbol("> ")
        .highlight_spacing(HighlightSpacing::Always);
        StatefulWidget::render(
            table,
            area,
            &mut buf,
            &mut TableState::new().with_selected(selected),
        );
        buf
    };
    for len in 0..12 {
        let all: Vec<usize> = (0..len).collect();
        for height in 0u16..8 {
            for selected in std::iter::once(None).chain((0..len).map(Some)) {
                let shown = on_screen(len, selected, height.saturating_sub(1));
                let part = draw(
                    &all[shown.clone()],
                    selected.map(|s| s - shown.start),
                    height,
                );
                assert_eq!(
                    part,
                    draw(&all, selected, height),
                    "{len} {height} {selected:?}"
                );
            }
        }
    }
}
