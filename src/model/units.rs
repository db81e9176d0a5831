//! How sizes, rates and durations are written on screen and in text output.

use humansize::{BINARY, FormatSizeOptions, format_size};

const MIB: u64 = 1 << 20;

/// Exact MiB, as nvidia-smi prints them (bytes >> 20): "7686 MiB".
pub fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes / MIB)
}

/// Short binary size for tight columns: "96.1G", "615M", "512K", "12B".
pub fn compact(bytes: u64) -> String {
    let opts = FormatSizeOptions::from(BINARY)
        .decimal_places(1)
        .decimal_zeroes(0)
        .space_after_value(false);
    let mut s = format_size(bytes, opts);
    // humansize writes "96.1 GiB"-style units; keep the first letter only (cut in place).
    let keep = s
        .strip_suffix("iB")
        .unwrap_or(&s)
        .trim_end_matches('B')
        .len();
    s.truncate(keep);
    if bytes < 1024 {
        s.push('B');
    }
    s
}

/// Signed growth rate in at most three significant digits, so it fits 8 columns:
/// "+12.5M/s", "+120M/s", "-1.5G/s", "+0/s".
pub fn rate(bytes_per_s: f64) -> String {
    let sign = if bytes_per_s < 0.0 { "-" } else { "+" };
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let magnitude = bytes_per_s.abs().round() as u64;
    if magnitude < 1024 {
        return format!("{sign}0/s");
    }
    let size = compact(magnitude);
    let size = match size.split_once('.') {
        // "120.4M" -> "120M": three digits before the point are precise enough.
        Some((whole, frac)) if whole.len() >= 3 => {
            format!(
                "{whole}{}",
                frac.trim_start_matches(|c: char| c.is_ascii_digit())
            )
        }
        _ => size,
    };
    format!("{sign}{size}/s")
}

/// A growth rate as the table shows it: "flat" when memory did not change, else [`rate`].
pub fn growth(bytes_per_s: f64) -> String {
    if bytes_per_s == 0.0 {
        "flat".into()
    } else {
        rate(bytes_per_s)
    }
}

/// A signed change of memory: "+11.9G", "-512M".
pub fn change(by: i128) -> String {
    let sign = if by < 0 { "-" } else { "+" };
    format!(
        "{sign}{}",
        compact(u64::try_from(by.unsigned_abs()).unwrap_or(u64::MAX))
    )
}

/// A duration in whole units: "45s", "12m", "3h", "2d".
pub fn duration_ms(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// A span for a label, exact to the second under an hour: "40s", "1m40s", "2m", "1h".
pub fn duration_label(ms: u64) -> String {
    let s = ms / 1000;
    if (60..3600).contains(&s) && !s.is_multiple_of(60) {
        format!("{}m{}s", s / 60, s % 60)
    } else {
        duration_ms(ms)
    }
}

/// A sampling interval: "1s", "500ms", "1m 30s".
pub fn interval(ms: u64) -> String {
    humantime::format_duration(std::time::Duration::from_millis(ms)).to_string()
}

/// A speed factor without needless zeroes: "x2", "x0.5".
pub fn speed(factor: f64) -> String {
    let s = format!("{factor:.2}");
    format!("x{}", s.trim_end_matches('0').trim_end_matches('.'))
}

/// Time of day in UTC from milliseconds since the epoch: "12:03:07".
pub fn clock(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}", s / 3600 % 24, s / 60 % 60, s % 60)
}

/// Date and time in UTC from milliseconds since the epoch: "2025-11-22 08:26:40".
pub fn date_time(ms: u64) -> String {
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let days = ms / 86_400_000 + 719_468;
    let era = days / 146_097;
    let doe = days % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {}", clock(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(mib(3_764_387_840), "3590 MiB");
        assert_eq!(compact(615 * MIB), "615M");
        assert_eq!(compact(105 * 1024 * MIB + 400 * MIB), "105.4G");
        assert_eq!(compact(12), "12B");
        assert_eq!(compact(2048), "2K");
        assert_eq!(rate(12.0 * MIB as f64), "+12M/s");
        assert_eq!(rate(-1.5 * 1024.0 * MIB as f64), "-1.5G/s");
        assert_eq!(rate(3.0), "+0/s");
        assert_eq!(rate(120.4 * MIB as f64), "+120M/s");
        assert_eq!(rate(12.5 * MIB as f64), "+12.5M/s");
        assert_eq!(duration_ms(600_000), "10m");
        assert_eq!(growth(0.0), "flat");
        assert_eq!(growth(12.0 * MIB as f64), "+12M/s");
        assert_eq!(change(-512 * i128::from(MIB)), "-512M");
        assert_eq!(change(i128::from(11 * 1024 * MIB + 900 * MIB)), "+11.9G");
    }

    #[test]
    fn times_and_speeds() {
        assert_eq!(interval(1000), "1s");
        assert_eq!(interval(500), "500ms");
        assert_eq!(speed(2.0), "x2");
        assert_eq!(speed(0.5), "x0.5");
        assert_eq!(clock(1_763_812_987_000), "12:03:07");
        assert_eq!(date_time(1_763_812_987_000), "2025-11-22 12:03:07");
        assert_eq!(date_time(951_782_400_000), "2000-02-29 00:00:00");
    }
}
