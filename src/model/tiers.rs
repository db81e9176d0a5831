//! The coarse tiers behind a ring's fine points: history that reaches back days in bounded
//! memory. Each tier keeps, per bucket of fixed length, the lowest, the highest and the last
//! reading in it, so floors and peaks both survive the downsampling; a bucket without a reading
//! is a gap (never a zero), and time that passed without samples becomes such gaps.
//!
//! Buckets lie on multiples of their length since the epoch, one after the other, so a tier
//! stores no times: the first bucket's start and the buckets' order say them. Readings are kept
//! in KiB as `u32` (12 bytes a bucket; up to 4 TiB, beyond which they saturate): the lowest
//! rounded down, the highest up, so a floor is never raised nor a peak lowered. A push is O(1)
//! amortised: a gap of `n` buckets costs `n` (at most the capacity), and `n` buckets of time
//! passed to make it.

use std::collections::VecDeque;

/// One tier's shape: the length of its buckets and the time it spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolution {
    pub bucket_ms: u64,
    pub span_ms: u64,
}

impl Resolution {
    /// Buckets the tier holds.
    pub fn capacity(self) -> usize {
        usize::try_from(self.span_ms / self.bucket_ms.max(1)).unwrap_or(usize::MAX)
    }
}

const MINUTE: u64 = 60_000;
const HOUR: u64 = 60 * MINUTE;

/// The tiers behind every history ring of the model, finest first (docs/ARCHITECTURE.md says
/// why these): 10 s buckets for 6 hours, 1-minute buckets for 3 days.
pub const TIERS: [Resolution; 2] = [
    Resolution {
        bucket_ms: 10_000,
        span_ms: 6 * HOUR,
    },
    Resolution {
        bucket_ms: MINUTE,
        span_ms: 72 * HOUR,
    },
];

/// One bucket as read: its start, and its lowest, highest and last reading in bytes (`None`
/// for each when no reading fell in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    pub at_ms: u64,
    pub min: Option<u64>,
    pub max: Option<u64>,
    pub last: Option<u64>,
}

/// No reading (the sentinel of a packed figure).
const NONE: u32 = u32::MAX;

/// A bucket as stored: KiB, `NONE` for no reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Packed {
    min: u32,
    max: u32,
    last: u32,
}

const EMPTY: Packed = Packed {
    min: NONE,
    max: NONE,
    last: NONE,
};

fn kib_down(bytes: u64) -> u32 {
    u32::try_from(bytes / 1024)
        .unwrap_or(NONE - 1)
        .min(NONE - 1)
}

fn kib_up(bytes: u64) -> u32 {
    u32::try_from(bytes.div_ceil(1024))
        .unwrap_or(NONE - 1)
        .min(NONE - 1)
}

fn unpack(kib: u32) -> Option<u64> {
    (kib != NONE).then(|| u64::from(kib) * 1024)
}

impl Packed {
    fn fold(&mut self, bytes: u64) {
        let (lo, hi) = (kib_down(bytes), kib_up(bytes));
        self.min = if self.min == NONE {
            lo
        } else {
            self.min.min(lo)
        };
        self.max = if self.max == NONE {
            hi
        } else {
            self.max.max(hi)
        };
        self.last = lo;
    }
}

/// One tier of one series: buckets of `bucket_ms`, the newest `capacity` of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tier {
    bucket_ms: u64,
    capacity: usize,
    /// Start of the oldest bucket.
    start_ms: u64,
    buckets: VecDeque<Packed>,
}

impl Tier {
    pub fn new(r: Resolution) -> Self {
        Tier {
            bucket_ms: r.bucket_ms.max(1),
            capacity: r.capacity().max(1),
            start_ms: 0,
            buckets: VecDeque::new(),
        }
    }

    pub fn bucket_ms(&self) -> u64 {
        self.bucket_ms
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// Buckets the tier has room for without reallocating.
    pub fn allocated(&self) -> usize {
        self.buckets.capacity()
    }

    /// Takes in a reading at `at_ms`; `None` (no reading) opens its bucket as a gap. A reading
    /// older than the newest bucket (the clock went back) joins the newest bucket.
    pub fn push(&mut self, at_ms: u64, value: Option<u64>) {
        let w = self.bucket_ms;
        let slot = at_ms - at_ms % w;
        // Buckets to open up to the reading's (0: it falls in the newest one, or before it).
        let to_open = match self.buckets.len() as u64 {
            0 => u64::MAX,
            n => (slot / w).saturating_sub(self.start_ms / w + (n - 1)),
        };
        if to_open > self.capacity as u64 {
            self.buckets.clear();
            self.start_ms = slot;
            self.open(EMPTY);
        } else {
            for _ in 0..to_open {
                self.open(EMPTY);
            }
        }
        if let (Some(v), Some(b)) = (value, self.buckets.back_mut()) {
            b.fold(v);
        }
    }

    /// Appends a bucket, dropping the oldest when full; grows its storage towards the capacity,
    /// never past it.
    fn open(&mut self, b: Packed) {
        if self.buckets.len() == self.capacity {
            self.buckets.pop_front();
            self.start_ms = self.start_ms.saturating_add(self.bucket_ms);
        } else if self.buckets.len() == self.buckets.capacity() {
            let len = self.buckets.len();
            self.buckets
                .reserve_exact(len.clamp(16, 1024).min(self.capacity - len));
        }
        self.buckets.push_back(b);
    }

    /// The buckets, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Bucket> + ExactSizeIterator + '_ {
        let (start, step) = (self.start_ms, self.bucket_ms);
        self.buckets.iter().enumerate().map(move |(i, b)| Bucket {
            at_ms: start.saturating_add(step.saturating_mul(i as u64)),
            min: unpack(b.min),
            max: unpack(b.max),
            last: unpack(b.last),
        })
    }

    /// The buckets that start at or after `from_ms`, oldest first (found by index, not a scan).
    pub fn since(&self, from_ms: u64) -> impl DoubleEndedIterator<Item = Bucket> + '_ {
        let skip = from_ms
            .saturating_sub(self.start_ms)
            .div_ceil(self.bucket_ms);
        let skip = usize::try_from(skip)
            .unwrap_or(usize::MAX)
            .min(self.buckets.len());
        let (start, step) = (self.start_ms, self.bucket_ms);
        self.buckets
            .range(skip..)
            .enumerate()
            .map(move |(i, b)| Bucket {
                at_ms: start.saturating_add(step.saturating_mul((skip + i) as u64)),
                min: unpack(b.min),
                max: unpack(b.max),
                last: unpack(b.last),
            })
    }

    /// The newest bucket.
    pub fn newest(&self) -> Option<Bucket> {
        self.iter().next_back()
    }

    /// A tier rebuilt from its buckets (a snapshot's), oldest first and one `bucket_ms` apart
    /// from `start_ms`; at most the capacity's newest are kept.
    pub fn restore(r: Resolution, start_ms: u64, buckets: &[Bucket]) -> Self {
        let mut t = Tier::new(r);
        t.start_ms = start_ms - start_ms % t.bucket_ms;
        for b in buckets {
            let mut p = EMPTY;
            for v in [b.min, b.max, b.last].into_iter().flatten() {
                p.fold(v);
            }
            if let Some(l) = b.last {
                p.last = kib_down(l);
            }
            t.open(p);
        }
        t
    }
}

/// A series' coarse tiers, finest first (`TIERS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tiers(pub [Tier; 2]);

impl Default for Tiers {
    fn default() -> Self {
        Tiers(TIERS.map(Tier::new))
    }
}

impl Tiers {
    pub fn push(&mut self, at_ms: u64, value: Option<u64>) {
        for t in &mut self.0 {
            t.push(at_ms, value);
        }
    }

    /// Bytes its buckets take at full history (every tier full).
    pub fn bytes_when_full() -> usize {
        TIERS.iter().map(|r| r.capacity()).sum::<usize>() * std::mem::size_of::<Packed>()
    }
}

#[cfg(test)]
mod tests;
