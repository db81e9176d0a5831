//! The fragmentation a leak causes, named second (a leak first, whatever the stranded share):
//! the blocks it keeps split the pool's segments, so its stranded bytes grow too (the pool's whole
//! free part under expandable segments). An allocator setting would make them usable again, which
//! buys the time they last at the leak's rate, never more.

use crate::model::units::duration_ms;
use crate::oom::sizes::human;
use crate::sample::Pool;

use super::{STRANDED, STRANDED_PERMILLE};

/// The fragmentation a leak causes, named second: its stranded bytes (the pool's whole free part
/// under expandable segments) when they are a real share of the pool, and the time they would
/// last at the leak's rate, which is all an allocator setting would buy.
pub struct Second {
    pub title: String,
    pub evidence: String,
    pub remedy: String,
    /// What is stranded, and how long it lasts at the leak's rate.
    pub stranded: u64,
    pub buys_ms: u64,
    /// The allocator setting that would make them usable, and its short name for a title.
    pub setting: &'static str,
    pub short: &'static str,
}

pub fn fragments(pool: &Pool, expandable: bool, rate: f64) -> Option<Second> {
    let reserved = pool.reserved?;
    let stranded = if expandable {
        pool.cached_free?
    } else {
        pool.stranded?
    };
    if stranded < STRANDED.max(reserved / 1000 * STRANDED_PERMILLE) {
        return None;
    }
    words(stranded, expandable, rate)
}

/// The words for `stranded` bytes a leak of `rate` bytes a second left in the pool (its whole
/// free part, `expandable`); `None` for a rate that does not climb.
pub fn words(stranded: u64, expandable: bool, rate: f64) -> Option<Second> {
    if rate <= 0.0 {
        return None;
    }
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let buys_ms = (stranded as f64 / rate * 1000.0) as u64;
    let buys = duration_ms(buys_ms);
    let (what, setting, short) = if expandable {
        (
            "free between its live blocks (expandable segments)",
            "max_split_size_mb or garbage_collection_threshold",
            "max_split_size_mb",
        )
    } else {
        (
            "stranded in split blocks",
            "PYTORCH_ALLOC_CONF=expandable_segments:True",
            "expandable segments",
        )
    };
    Some(Second {
        stranded,
        buys_ms,
        setting,
        short,
        title: format!("{} {what} too", human(stranded)),
        evidence: format!(
            "fragmentation second: the blocks it keeps split the pool, {} {what}; at the leak's rate that lasts about {buys}, all {setting} would buy",
            human(stranded)
        ),
        remedy: format!(
            "(Fragmentation comes second: {setting} would only buy about {buys} at this rate.)"
        ),
    })
}
