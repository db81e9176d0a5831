//! The strip of cells: to scale, holes never hidden inside allocated cells, bounded whatever
//! the figures.

use super::*;
use crate::sample::pool_map::{Run, Segment, SegmentKind};

fn seg(size: u64, runs: Vec<Run>) -> Segment {
    Segment {
        address: 0,
        size,
        kind: SegmentKind::Large,
        expandable: false,
        private: false,
        stream: 0,
        runs,
    }
}

#[test]
fn cells_are_to_scale_and_show_small_holes() {
    let a = |b| Run(BlockState::Allocated, 1, b, b);
    let f = |b| Run(BlockState::Free, 1, b, b);
    // 3/4 allocated, 1/4 free: 8 cells, 6 and 2.
    let c = cells(&[seg(4096, vec![a(3072), f(1024)])], 8);
    let kinds: Vec<Cell> = c.iter().map(|m| m.cell).collect();
    assert_eq!(kinds[..6], [Cell::Allocated; 6]);
    assert_eq!(kinds[6..], [Cell::Free; 2]);
    // A hole far smaller than a cell still shows.
    let c = cells(
        &[seg(
            1 << 30,
            vec![a(512 << 20), f(4096), a((512 << 20) - 4096)],
        )],
        4,
    );
    assert!(c.iter().any(|m| m.cell == Cell::Holes), "{c:?}");
    // Runs that overrun their segment, a zero-size segment, a huge one: bounded, no panic.
    let c = cells(
        &[
            seg(10, vec![a(u64::MAX)]),
            seg(0, vec![]),
            seg(u64::MAX, vec![f(u64::MAX)]),
        ],
        50,
    );
    assert_eq!(c.len(), 50);
    assert!(cells(&[], 10).is_empty());
}
