//! Byte sizes as frameworks print them, kept with the precision they were printed at.

use std::sync::LazyLock;

use regex_lite::Regex;
use serde::{Deserialize, Serialize};

/// A byte count read from a message: the true value lies within `bytes ± tolerance`
/// (half a unit of the last printed digit; 0 when the message printed exact bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Size {
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tolerance: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Size {
    pub fn exact(bytes: u64) -> Self {
        Size {
            bytes,
            tolerance: 0,
        }
    }

    pub fn lo(self) -> u64 {
        self.bytes.saturating_sub(self.tolerance)
    }

    pub fn hi(self) -> u64 {
        self.bytes.saturating_add(self.tolerance)
    }

    /// The sum; the uncertainties add.
    pub fn plus(self, o: Size) -> Size {
        Size {
            bytes: self.bytes.saturating_add(o.bytes),
            tolerance: self.tolerance.saturating_add(o.tolerance),
        }
    }

    /// The difference (at least 0); the uncertainties add.
    pub fn minus(self, o: Size) -> Size {
        Size {
            bytes: self.bytes.saturating_sub(o.bytes),
            tolerance: self.tolerance.saturating_add(o.tolerance),
        }
    }

    /// `self >= o`, and whether that answer holds whatever the printed rounding hid.
    pub fn at_least(self, o: Size) -> Verdict {
        let holds = self.bytes >= o.bytes;
        let certain = if holds {
            self.lo() >= o.hi()
        } else {
            self.hi() < o.lo()
        };
        Verdict { holds, certain }
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&human(self.bytes))
    }
}

/// The outcome of comparing two printed sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub holds: bool,
    /// False when the rounding of the printed numbers straddles the threshold.
    pub certain: bool,
}

static HUMAN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(\d{1,20})(?:\.(\d{1,9}))?\s?(bytes|B|KiB|MiB|GiB|TiB|PiB|EiB|K|M|G|T)\s*$")
        .expect("static regex")
});

/// Parses "19.68 GiB", "3.07GiB", "256B", "0 bytes", "17.0KiB", "256.00M" (binary units).
pub fn parse_human(text: &str) -> Option<Size> {
    let c = HUMAN.captures(text)?;
    let int: u128 = c.get(1)?.as_str().parse().ok()?;
    let frac = c.get(2).map_or("", |m| m.as_str());
    let unit: u128 = match c.get(3)?.as_str() {
        "bytes" | "B" => 1,
        "KiB" | "K" => 1 << 10,
        "MiB" | "M" => 1 << 20,
        "GiB" | "G" => 1 << 30,
        "TiB" | "T" => 1 << 40,
        "PiB" => 1 << 50,
        _ => 1 << 60,
    };
    let scale = 10u128.pow(u32::try_from(frac.len()).ok()?);
    let frac_v: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    let bytes = int
        .checked_mul(unit)?
        .checked_add((frac_v * unit + scale / 2) / scale)?;
    let tolerance = if unit == 1 { 0 } else { unit / (2 * scale) };
    Some(Size {
        bytes: u64::try_from(bytes).ok()?,
        tolerance: u64::try_from(tolerance).ok()?,
    })
}

/// Parses an exact byte count, allowing thousands separators ("1,073,741,824").
pub fn parse_exact(text: &str) -> Option<Size> {
    let digits: String = text.chars().filter(|c| *c != ',').collect();
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    digits.parse().ok().map(Size::exact)
}

/// Bytes per element of a TensorFlow `DataTypeString` name.
pub fn dtype_size(name: &str) -> Option<u64> {
    Some(match name {
        "bool" | "int8" | "uint8" | "qint8" | "quint8" | "float8_e4m3fn" | "float8_e5m2" => 1,
        "half" | "bfloat16" | "int16" | "uint16" | "qint16" | "quint16" => 2,
        "float" | "int32" | "uint32" | "qint32" => 4,
        "double" | "int64" | "uint64" | "complex64" => 8,
        "complex128" => 16,
        _ => return None,
    })
}

/// Bytes of a tensor: the product of its shape times the element size.
pub fn tensor_bytes(shape: &str, dtype: &str) -> Option<u64> {
    let per = dtype_size(dtype)?;
    shape
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .try_fold(per, |acc, d| acc.checked_mul(d.parse::<u64>().ok()?))
}

/// Binary size with two decimals, as PyTorch prints it: "19.68 GiB", "512 bytes".
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    #[allow(clippy::cast_precision_loss)]
    let mut v = bytes as f64 / 1024.0;
    let mut unit = UNITS[0];
    for u in &UNITS[1..] {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.2} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_precision_is_kept() {
        let s = parse_human("19.68 GiB").unwrap();
        assert_eq!(s.bytes, 21_131_239_096);
        assert_eq!(s.tolerance, (1 << 30) / 200);
        assert_eq!(parse_human("0 bytes"), Some(Size::exact(0)));
        assert_eq!(parse_human("256B"), Some(Size::exact(256)));
        assert_eq!(parse_human("17.0KiB").unwrap().bytes, 17 * 1024);
        assert_eq!(parse_human("286MiB").unwrap().tolerance, 1 << 19);
        assert_eq!(parse_human("99999999999999999999 EiB"), None);
        assert_eq!(parse_human("1.2.3 GiB"), None);
    }

    #[test]
    fn exact_counts_and_tensors() {
        assert_eq!(
            parse_exact("1,073,741,824"),
            Some(Size::exact(1_073_741_824))
        );
        assert_eq!(parse_exact("999999999999999999999"), None);
        assert_eq!(
            tensor_bytes("4,2048,128,128", "float"),
            Some(4 * 2048 * 128 * 128 * 4)
        );
        assert_eq!(tensor_bytes("", "half"), Some(2));
        assert_eq!(tensor_bytes("99999999999,99999999999", "double"), None);
        assert_eq!(tensor_bytes("3", "string"), None);
    }

    #[test]
    fn comparisons_know_when_rounding_straddles() {
        let a = parse_human("1.00 GiB").unwrap();
        let b = parse_human("1.00 GiB").unwrap();
        assert_eq!(
            a.at_least(b),
            Verdict {
                holds: true,
                certain: false
            }
        );
        let c = parse_human("2.00 GiB").unwrap();
        assert!(c.at_least(a).certain);
        assert!(!a.at_least(c).holds && a.at_least(c).certain);
        assert_eq!(human(21_131_239_096), "19.68 GiB");
        assert_eq!(human(12), "12 bytes");
    }
}
