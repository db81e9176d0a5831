//! The chart's axes: the time the history covers so far, and a y axis fitted to the readings
//! shown or to the whole GPU.

use crate::model::Machine;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// What the y axis spans (`g` toggles it); the header's sparklines follow it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    /// From 0 to a round size just above the highest reading shown.
    #[default]
    Fit,
    /// From 0 to the GPU's total memory.
    Gpu,
}

impl Scale {
    pub fn toggled(self) -> Self {
        match self {
            Scale::Fit => Scale::Gpu,
            Scale::Gpu => Scale::Fit,
        }
    }
}

/// The time the chart covers, ms: the history there is (from the oldest point of the GPUs'
/// rings to the last sample), rounded up to a step whose half is a whole label, until it
/// reaches the history window (`--history`).
pub fn span_ms(machine: &Machine) -> u64 {
    let window = machine.config.history_ms.max(1);
    let end = machine.last_sample_ms.unwrap_or(machine.now_ms);
    let first = machine
        .gpus
        .values()
        .filter_map(|g| g.used.iter().next().map(|p| p.at_ms))
        .min();
    match first {
        Some(f) => fit_span(end.saturating_sub(f), window),
        None => window,
    }
}

/// `have` ms of history rounded up to a step whose half is a whole label (20 s under 2 min,
/// 2 min under 2 h, else 2 h), at most the `window`.
pub fn fit_span(have: u64, window: u64) -> u64 {
    let step = match have {
        0..120_000 => 20_000,
        120_000..7_200_000 => 120_000,
        _ => 7_200_000,
    };
    have.div_ceil(step).max(1).saturating_mul(step).min(window)
}

/// A round top for an axis that must hold `highest` bytes with a little room above (1, 1.2,
/// 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten, in MiB or GiB), never above the GPU's
/// `total`; with nothing to show, 1 GiB (or the total, if smaller).
pub fn nice_top(highest: u64, total: Option<u64>) -> u64 {
    let cap = total.unwrap_or(u64::MAX).max(1);
    if highest == 0 {
        return GIB.min(cap);
    }
    #[allow(clippy::cast_precision_loss)]
    let want = highest as f64 * 1.1;
    #[allow(clippy::cast_precision_loss)]
    let unit = if want >= GIB as f64 { GIB } else { MIB } as f64;
    let v = want / unit;
    let magnitude = power_of_ten_below(v);
    let f = [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .into_iter()
        .find(|f| f * magnitude >= v - 1e-9)
        .unwrap_or(10.0);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let top = (f * magnitude * unit).round() as u64;
    top.clamp(highest.min(cap), cap).max(1)
}

/// The largest power of ten at or below `v` (a positive, finite number), stepped to rather than
/// taken as `10^floor(log10 v)`: libm's `pow` and `log10` were called nowhere else, and each
/// kept about 64 KiB of libm resident for this one call a frame.
fn power_of_ten_below(v: f64) -> f64 {
    let mut up = 1.0;
    if v >= 1.0 {
        while up * 10.0 <= v {
            up *= 10.0;
        }
        return up;
    }
    // 10^-k as the reciprocal of an exact 10^k, rounded once.
    while 1.0 / up > v {
        up *= 10.0;
    }
    1.0 / up
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Config;
    use crate::sample::Sample;
    use crate::source::scripted::build::gpu;

    fn sample(at_ms: u64) -> Sample {
        Sample {
            at_ms,
            gpus: vec![gpu(0, 80 * GIB, GIB, 0)],
            ..Default::default()
        }
    }

    #[test]
    fn the_top_is_round_and_just_above_the_data() {
        assert_eq!(nice_top(5 * GIB, Some(80 * GIB)), 6 * GIB);
        assert_eq!(nice_top(4300 * MIB, Some(80 * GIB)), 5 * GIB);
        assert_eq!(nice_top(300 * MIB, None), 400 * MIB);
        assert_eq!(
            nice_top(75 * GIB, Some(80 * GIB)),
            80 * GIB,
            "never past the total"
        );
        assert_eq!(nice_top(0, Some(80 * GIB)), GIB);
        assert_eq!(nice_top(0, Some(MIB)), MIB);
    }

    #[test]
    fn the_power_of_ten_below_is_libms_and_exact_at_powers() {
        let mut v: f64 = 1.3e-7;
        while v < 5000.0 {
            let libm = 10f64.powf(v.log10().floor());
            assert!((power_of_ten_below(v) / libm - 1.0).abs() < 1e-12, "{v}");
            v *= 1.37;
        }
        for (v, m) in [
            (1.0, 1.0),
            (10.0, 10.0),
            (1000.0, 1000.0),
            (999.9, 100.0),
            (0.1, 0.1),
        ] {
            assert_eq!(power_of_ten_below(v), m, "{v}");
        }
    }

    #[test]
    fn the_time_axis_covers_the_history_there_is() {
        let mut m = Machine::new(Config::new(1000, 600_000));
        assert_eq!(span_ms(&m), 600_000, "no samples yet: the window");
        for k in 0..=35u64 {
            m.ingest(sample(k * 1000));
        }
        assert_eq!(span_ms(&m), 40_000, "35 s of history: 40 s");
        for k in 36..=700u64 {
            m.ingest(sample(k * 1000));
        }
        assert_eq!(span_ms(&m), 600_000, "the window once it is full");
    }
}
