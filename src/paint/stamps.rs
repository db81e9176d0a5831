//! What a frame says of its regions: rectangles whose cells are a function of one number, a hash
//! of what was drawn there. A region with the same number at the same place as in the frame
//! before drew the same cells, so the painter does not compare them again.

use std::hash::{BuildHasher, Hash, Hasher};
use std::ops::Range;
use std::sync::LazyLock;

use foldhash::fast::RandomState;

use ratatui::layout::Rect;

/// The stamped regions of one frame.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stamps(Vec<(Rect, u64)>);

impl Stamps {
    /// Stamps `area` with `content`: everything that decides its cells (nothing else draws
    /// there). Returns whether the frame stamped `before` stamped it alike: then its cells are
    /// those already shown, and it need not be drawn (the painter puts them back). Regions do
    /// not overlap and lie inside the frame.
    pub fn stamp(&mut self, before: &Stamps, area: Rect, content: u64) -> bool {
        if area.is_empty() {
            return false;
        }
        debug_assert!(
            self.0.iter().all(|(other, _)| !other.intersects(area)),
            "stamped regions overlap"
        );
        self.0.push((area, content));
        before.0.contains(&(area, content))
    }

    /// The stamped regions, in the order they were stamped.
    pub fn iter(&self) -> impl Iterator<Item = (Rect, u64)> + '_ {
        self.0.iter().copied()
    }

    /// The cells of this frame, by index into a buffer of `area`, that hold what they held in
    /// the frame stamped `before`: the regions both stamped alike (as `stamp` told the frame).
    /// Sorted, one range a row of a region.
    pub(super) fn kept(&self, before: &Stamps, area: Rect, out: &mut Vec<Range<usize>>) {
        out.clear();
        let width = usize::from(area.width);
        for &(rect, hash) in &self.0 {
            if !before.0.contains(&(rect, hash)) {
                continue;
            }
            let rect = rect.intersection(area);
            for y in rect.top()..rect.bottom() {
                let start = usize::from(y - area.y) * width + usize::from(rect.x - area.x);
                out.push(start..start + usize::from(rect.width));
            }
        }
        out.sort_unstable_by_key(|r| r.start);
    }
}

/// The hashes stamps are made of: foldhash's (a frame hashes its text and chart cells every
/// tick: SipHash, std's, cost a tenth of the frame), seeded at random once for the process (a
/// frame's stamps are compared with the frame before's only, so no hash is kept or shared, and
/// text another user chose cannot be made to collide with text shown before).
static STATE: LazyLock<RandomState> = LazyLock::new(RandomState::default);

/// A hasher for a region's stamp, for content hashed piece by piece.
pub fn hasher() -> impl Hasher {
    STATE.build_hasher()
}

/// One number for `content` (a region's lines, styles and place), for `Stamps::add`.
pub fn hash(content: &impl Hash) -> u64 {
    STATE.hash_one(content)
}
