//! How sizes, rates and durations are written on screen and in text output.

use humansize::{BINARY, FormatSizeOptions, format_size};

const MIB: u64 = 1 << 20;

/// Exact MiB, as nvidia-smi prints them (bytes >> 20): "7686MiB".
pub fn mib(bytes: u64) -> String {
    format!("{}MiB", bytes / MIB)
}

/// Short binary size for tight columns: "96.1G", "615M", "512K", "12B".
pub fn compact(bytes: u64) -> String {
    let opts = FormatSizeOptions::from(BINARY)
        .decimal_places(1)
        .decimal_zeroes(0)
        .space_after_value(false);
    let s = format_size(bytes, opts);
    // humansize writes "96.1 GiB"-style units; keep the first letter only.
    s.trim_end_matches("iB").trim_end_matches('B').to_string() + if bytes < 1024 { "B" } else { "" }
}

/// Signed growth rate: "+12M/s", "-3.0G/s", "+0/s".
pub fn rate(bytes_per_s: f64) -> String {
    let sign = if bytes_per_s < 0.0 { "-" } else { "+" };
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let magnitude = bytes_per_s.abs().round() as u64;
    if magnitude < 1024 {
        return format!("{sign}0/s");
    }
    format!("{sign}{}/s", compact(magnitude))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(mib(3_764_387_840), "3590MiB");
        assert_eq!(compact(615 * MIB), "615M");
        assert_eq!(compact(105 * 1024 * MIB + 400 * MIB), "105.4G");
        assert_eq!(compact(12), "12B");
        assert_eq!(compact(2048), "2K");
        assert_eq!(rate(12.0 * MIB as f64), "+12M/s");
        assert_eq!(rate(-1.5 * 1024.0 * MIB as f64), "-1.5G/s");
        assert_eq!(rate(3.0), "+0/s");
        assert_eq!(duration_ms(600_000), "10m");
    }
}
