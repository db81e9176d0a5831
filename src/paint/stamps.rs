//! What a frame says of its regions: rectangles whose cells are a function of one number, a hash
//! of what was drawn there. A region with the same number at the same place as in the frame
//! before holds the same cells: it need not be drawn, and the painter does not compare it.

use std::hash::{BuildHasher, Hash, Hasher};
use std::ops::Range;
use std::sync::LazyLock;

use foldhash::fast::RandomState;

use ratatui::layout::Rect;

/// The stamped regions of one frame, each with whether the frame before stamped it alike.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stamps(Vec<(Rect, u64, bool)>);

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
            self.0.iter().all(|(other, ..)| !other.intersects(area)),
            "stamped regions overlap"
        );
        // A frame stamps its regions in the order the frame before did, unless its layout
        // changed: the same place in `before` is looked at first, and the others only when it
        // holds another area (a region's area is stamped once a frame).
        let kept = match before.0.get(self.0.len()) {
            Some(&(at, was, _)) if at == area => was == content,
            _ => before.iter().any(|s| s == (area, content)),
        };
        self.0.push((area, content, kept));
        kept
    }

    /// The stamped regions, in the order they were stamped.
    pub fn iter(&self) -> impl Iterator<Item = (Rect, u64)> + '_ {
        self.0.iter().map(|&(area, content, _)| (area, content))
    }

    /// The cells of this frame, by index into a buffer of `area`, that hold what they held in
    /// the frame before: the regions `stamp` told the frame were stamped alike there. Sorted,
    /// and ranges that meet joined into one.
    pub(super) fn kept(&self, area: Rect, out: &mut Vec<Range<usize>>) {
        out.clear();
        let width = usize::from(area.width);
        for &(rect, _, kept) in &self.0 {
            if !kept {
                continue;
            }
            let rect = rect.intersection(area);
            for y in rect.top()..rect.bottom() {
                let start = usize::from(y - area.y) * width + usize::from(rect.x - area.x);
                out.push(start..start + usize::from(rect.width));
            }
        }
        join(out);
    }
}

/// `ranges` sorted by their starts, and those that overlap or meet joined into one.
pub fn join<T: Ord + Copy>(ranges: &mut Vec<Range<T>>) {
    ranges.sort_unstable_by_key(|r| r.start);
    ranges.dedup_by(|next, joined| {
        let meet = next.start <= joined.end;
        if meet {
            joined.end = joined.end.max(next.end);
        }
        meet
    });
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

/// One number for `content` (a region's lines and styles), for `Stamps::stamp`.
pub fn hash(content: &impl Hash) -> u64 {
    STATE.hash_one(content)
}
