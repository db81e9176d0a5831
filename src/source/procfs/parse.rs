//! The text of /proc/PID/stat and /proc/stat, read into a process's start time (each tick's
//! check for a reused PID, and `kill`'s re-check), and of /proc/PID/statm into its memory; pure,
//! and `None` (never a panic) on bad input.

/// The fields of /proc/PID/stat after the command name; field 3 (state) is index 0.
fn stat_fields(stat: &[u8]) -> Option<impl Iterator<Item = &[u8]>> {
    // The name is in parentheses and may itself hold spaces and ')': the fields start after the
    // last ')'.
    let end = stat.iter().rposition(|&b| b == b')')?;
    Some(
        stat[end + 1..]
            .split(u8::is_ascii_whitespace)
            .filter(|f| !f.is_empty()),
    )
}

fn number<T: std::str::FromStr>(field: &[u8]) -> Option<T> {
    std::str::from_utf8(field).ok()?.parse().ok()
}

/// Field 22 of /proc/PID/stat: when the process started, in clock ticks after boot.
pub fn stat_start_ticks(stat: &[u8]) -> Option<u64> {
    number(stat_fields(stat)?.nth(22 - 3)?)
}

/// The first two fields of /proc/PID/statm: the program's size and its resident set, in pages.
pub fn statm_pages(statm: &[u8]) -> Option<(u64, u64)> {
    let mut fields = statm
        .split(u8::is_ascii_whitespace)
        .filter(|f| !f.is_empty());
    Some((number(fields.next()?)?, number(fields.next()?)?))
}

/// The boot time in Unix seconds: the "btime N" line of /proc/stat.
pub fn btime(proc_stat: &[u8]) -> Option<u64> {
    let line = proc_stat
        .split(|&b| b == b'\n')
        .find_map(|l| l.strip_prefix(b"btime "))?;
    number(line.trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &[u8] = b"4242 (python3) S 1 4242 4242 34816 4242 4194304 5000 0 12 0 \
        150 30 0 0 20 0 8 0 987654 12345678 3000 18446744073709551615 1 1 0 0 0 0 0 16781312 \
        1082 0 0 0 17 3 0 0 0 0 0\n";

    #[test]
    fn statm_gives_size_and_resident_pages_or_none() {
        assert_eq!(statm_pages(b"2998 512 380 2 0 321 0\n"), Some((2998, 512)));
        for bad in [&b""[..], b"12", b"x 3", b"-1 2"] {
            assert_eq!(statm_pages(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn stat_gives_start_ticks() {
        assert_eq!(stat_start_ticks(STAT), Some(987_654));
    }

    #[test]
    fn a_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let stat = b"77 (a) b (c)) R 1 77 77 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 555 1 1 0\n";
        assert_eq!(stat_start_ticks(stat), Some(555));
        let empty = b"9 () S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 31 1 1";
        assert_eq!(stat_start_ticks(empty), Some(31));
    }

    #[test]
    fn bad_stat_is_none() {
        for bad in [
            &b""[..],
            b"4242 python3 S 1",
            b"4242 (python3",
            b"4242 (python3) S 1 4242",
            b"4242 (x) S 1 4242 4242 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 soon 1 1",
            b"4242 (x) S 1 4242 4242 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -5 1 1",
            b")(",
        ] {
            assert_eq!(
                stat_start_ticks(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn btime_is_found_among_the_other_lines() {
        let stat =
            b"cpu  1 2 3 4\ncpu0 1 2 3 4\nintr 5 6\nctxt 77\nbtime 1763800000\nprocesses 9\n";
        assert_eq!(btime(stat), Some(1_763_800_000));
        assert_eq!(btime(b"cpu 1 2\nctxt 77\n"), None);
        assert_eq!(btime(b"btime\nbtime_x 5\n"), None);
        assert_eq!(btime(b"btime soon\n"), None);
        assert_eq!(btime(b""), None);
    }
}
