//! The time a log line says it was written, read from where the line starts (after any rank
//! prefix, an opening bracket allowed): ISO 8601 (`2026-11-27T10:00:00.123Z`, with an offset, or
//! none), Python logging's `2026-11-27 10:00:00,123`, glog's `I1127 10:00:00.123456` and syslog's
//! `Nov 27 10:00:00` (both without a year). A plain scan of the first characters, no pattern; it
//! runs only on lines that are a failure. The time is kept as written: its zone when it names
//! one, its year when it has one. Which instant it is, and whether to believe it, is for whoever
//! knows when the line reached the disk (`logs::when`): a time is data like the rest of the line.

/// When a line was on disk, as its reader saw the file grow (`None`: not known), and how far
/// behind the file's end the reader was when it read the line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen {
    /// A look at the file that did not find the line's first byte yet: it was written after.
    pub after_ms: Option<u64>,
    /// The first look that found the whole line: it was written by then.
    pub by_ms: Option<u64>,
    /// Bytes the file held past the line at the reader's latest look.
    pub behind: u64,
}

/// A time as a line wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// `None`: the line gives none (glog, syslog).
    pub year: Option<u16>,
    pub month: u8,
    pub day: u8,
    /// Milliseconds into the day.
    pub ms: u32,
    /// Minutes east of UTC when the line names its zone (`Z`: 0); `None`: a local time.
    pub zone: Option<i16>,
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

impl Written {
    /// The fields as read (digits as `u32`); `None` where one does not fit its field.
    fn of(year: Option<u32>, month: u32, day: u32, ms: u32, zone: Option<i16>) -> Option<Self> {
        Some(Self {
            year: year.map(u16::try_from).transpose().ok()?,
            month: u8::try_from(month).ok()?,
            day: u8::try_from(day).ok()?,
            ms,
            zone,
        })
    }

    /// Milliseconds since the epoch of this time in `year` read as UTC (its zone not applied);
    /// `None` for a day the month does not have or a year before 1970.
    pub fn as_utc(&self, year: i32) -> Option<i64> {
        let (m, d) = (u32::from(self.month), u32::from(self.day));
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let days_in = [
            31,
            if leap { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        if !(1..=12).contains(&m) || d == 0 || d > days_in[(m - 1) as usize] || year < 1970 {
            return None;
        }
        // Days from 1970-01-01 to the civil date (Howard Hinnant's algorithm).
        let y = if m <= 2 { year - 1 } else { year };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + i32::try_from(doy).ok()?;
        let days = i64::from(era) * 146_097 + i64::from(doe) - 719_468;
        Some(days * 86_400_000 + i64::from(self.ms))
    }
}

/// The year (UTC) of `ms` since the epoch (Howard Hinnant's civil date).
pub fn year_of(ms: u64) -> i32 {
    let days = i64::try_from(ms / 86_400_000).unwrap_or(0) + 719_468;
    let era = days.div_euclid(146_097);
    let doe = days - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let year = yoe + era * 400 + i64::from(mp >= 10);
    i32::try_from(year).unwrap_or(i32::MAX)
}

/// The time `line` starts with, if it starts with one of the forms above.
pub fn read(line: &str) -> Option<Written> {
    let s = line.trim_start();
    let s = s.strip_prefix('[').unwrap_or(s).as_bytes();
    iso(s)
        .or_else(|| glog(s))
        .or_else(|| syslog(s))
        .filter(|w| (1..=12).contains(&w.month) && (1..=31).contains(&w.day))
}

/// `n` ASCII digits at `at` as a number.
fn digits(s: &[u8], at: usize, n: usize) -> Option<u32> {
    let part = s.get(at..at + n)?;
    part.iter().try_fold(0u32, |v, b| {
        b.is_ascii_digit().then(|| v * 10 + u32::from(b - b'0'))
    })
}

/// `HH:MM:SS` at `at`, then an optional fraction (`.123`, `,123456`): the milliseconds into the
/// day and where the time ends.
fn clock(s: &[u8], at: usize) -> Option<(u32, usize)> {
    let (h, m, sec) = (
        digits(s, at, 2)?,
        digits(s, at + 3, 2)?,
        digits(s, at + 6, 2)?,
    );
    if s.get(at + 2) != Some(&b':') || s.get(at + 5) != Some(&b':') || h > 23 || m > 59 || sec > 60
    {
        return None;
    }
    let mut ms = (h * 3600 + m * 60 + sec.min(59)) * 1000;
    let mut end = at + 8;
    if matches!(s.get(end), Some(b'.' | b',')) && s.get(end + 1).is_some_and(u8::is_ascii_digit) {
        let frac = s[end + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let take = frac.min(3);
        let f = digits(s, end + 1, take)?;
        ms += f * 10u32.pow(u32::try_from(3 - take).ok()?);
        end += 1 + frac;
    }
    Some((ms, end))
}

/// `YYYY-MM-DD[T ]HH:MM:SS[.frac][Z|±HH[:]MM|±HH]`.
fn iso(s: &[u8]) -> Option<Written> {
    let year = digits(s, 0, 4)?;
    let (month, day) = (digits(s, 5, 2)?, digits(s, 8, 2)?);
    if s.get(4) != Some(&b'-') || s.get(7) != Some(&b'-') || !matches!(s.get(10), Some(b'T' | b' '))
    {
        return None;
    }
    let (ms, end) = clock(s, 11)?;
    let zone = match s.get(end) {
        Some(b'Z') => Some(0),
        Some(sign @ (b'+' | b'-')) => {
            let h = digits(s, end + 1, 2)?;
            let colon = usize::from(s.get(end + 3) == Some(&b':'));
            let m = digits(s, end + 3 + colon, 2).unwrap_or(0);
            if h > 14 || m > 59 {
                return None;
            }
            let east = i16::try_from(h * 60 + m).ok()?;
            Some(if *sign == b'-' { -east } else { east })
        }
        _ => None,
    };
    Written::of(Some(year), month, day, ms, zone)
}

/// glog's `LMMDD HH:MM:SS.uuuuuu` (L one of I, W, E, F).
fn glog(s: &[u8]) -> Option<Written> {
    if !matches!(s.first(), Some(b'I' | b'W' | b'E' | b'F')) || s.get(5) != Some(&b' ') {
        return None;
    }
    let (month, day) = (digits(s, 1, 2)?, digits(s, 3, 2)?);
    let (ms, _) = clock(s, 6)?;
    Written::of(None, month, day, ms, None)
}

/// syslog's `Mon DD HH:MM:SS` (the day padded with a blank or not).
fn syslog(s: &[u8]) -> Option<Written> {
    let name = s.get(..3)?;
    let month = u32::try_from(MONTHS.iter().position(|m| m.as_bytes() == name)? + 1).ok()?;
    if s.get(3) != Some(&b' ') {
        return None;
    }
    let at = if s.get(4) == Some(&b' ') { 5 } else { 4 };
    let (day, after) = match digits(s, at, 2) {
        Some(d) => (d, at + 2),
        None => (digits(s, at, 1)?, at + 1),
    };
    if s.get(after) != Some(&b' ') {
        return None;
    }
    let (ms, _) = clock(s, after + 1)?;
    Written::of(None, month, day, ms, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-27T10:00:00Z.
    const T: i64 = 1_795_773_600_000;

    fn at(line: &str) -> (Option<i64>, Option<i16>) {
        let w = read(line).unwrap_or_else(|| panic!("no time in {line}"));
        (w.as_utc(i32::from(w.year.unwrap_or(2026))), w.zone)
    }

    #[test]
    fn the_common_forms() {
        assert_eq!(
            at("2026-11-27T10:00:00.123Z E boom"),
            (Some(T + 123), Some(0))
        );
        assert_eq!(
            at("2026-11-27T11:30:00+01:30 x"),
            (Some(T + 90 * 60_000), Some(90))
        );
        assert_eq!(
            at("2026-11-27T05:00:00-0500 x"),
            (Some(T - 5 * 3_600_000), Some(-300))
        );
        assert_eq!(
            at("2026-11-27 10:00:00,123 - train - ERROR - x"),
            (Some(T + 123), None)
        );
        assert_eq!(at("[2026-11-27 10:00:00] x"), (Some(T), None));
        assert_eq!(
            at("2023-08-01 10:00:00.000007: W tensorflow/x.cc:1] y").1,
            None
        );
        assert_eq!(
            at("I1127 10:00:00.123456  42 f.cc:1] x"),
            (Some(T + 123), None)
        );
        assert_eq!(
            at("[E1127 10:00:00.5 ProcessGroupNCCL.cpp:632]"),
            (Some(T + 500), None)
        );
        assert_eq!(at("Nov 27 10:00:00 gpu-07 python[42]: x"), (Some(T), None));
        assert_eq!(at("Nov  7 10:00:00 gpu-07 x").0, Some(T - 20 * 86_400_000));
        assert_eq!(read("I1127 10:00:00.1").unwrap().year, None);
    }

    #[test]
    fn what_is_no_time() {
        for line in [
            "",
            "step 12 loss 0.3",
            "2026-11-27",
            "2026-13-27 10:00:00 bad month",
            "2026-11-27 25:00:00 bad hour",
            "2026-11-27T10:00 no seconds",
            "I112 10:00:00",
            "Now 27 10:00:00",
            "Nov 27 1000:00",
            "torch.OutOfMemoryError: CUDA out of memory.",
            "10:00:00 a time alone",
        ] {
            assert_eq!(read(line), None, "{line}");
        }
        let feb30 = read("2026-02-30 10:00:00 x").unwrap();
        assert_eq!(feb30.as_utc(2026), None, "a day the month lacks");
        assert_eq!(read("1969-12-31 23:59:59 x").unwrap().as_utc(1969), None);
        assert!(
            read("2026-11-27T10:00:00+15:00 x").is_none(),
            "no such zone"
        );
    }

    #[test]
    fn years_of_instants() {
        assert_eq!(year_of(0), 1970);
        assert_eq!(year_of(T as u64), 2026);
        let new_year = read("2027-01-01T00:00:00Z").unwrap().as_utc(2027).unwrap() as u64;
        assert_eq!((year_of(new_year - 1), year_of(new_year)), (2026, 2027));
        let leap = read("2028-02-29 12:00:00").unwrap().as_utc(2028).unwrap() as u64;
        assert_eq!(year_of(leap), 2028);
    }
}
