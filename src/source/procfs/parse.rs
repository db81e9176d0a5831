//! The text of /proc/PID/{stat,statm,status,cmdline}, /proc/stat and /etc/passwd, read into the
//! few numbers and names the host reader needs; pure, and `None` (never a panic) on bad input.

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

/// The command name in /proc/PID/stat: between the first '(' and the last ')'.
pub fn stat_comm(stat: &[u8]) -> Option<String> {
    let start = stat.iter().position(|&b| b == b'(')?;
    let end = stat.iter().rposition(|&b| b == b')')?;
    let name = stat.get(start + 1..end)?;
    Some(String::from_utf8_lossy(name).into_owned())
}

/// Field 22 of /proc/PID/stat: when the process started, in clock ticks after boot.
pub fn stat_start_ticks(stat: &[u8]) -> Option<u64> {
    number(stat_fields(stat)?.nth(22 - 3)?)
}

/// The first two fields of /proc/PID/statm: total program size and resident set, in pages.
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

/// The real user ID: the first number on the "Uid:" line of /proc/PID/status.
pub fn real_uid(status: &[u8]) -> Option<u32> {
    let line = status
        .split(|&b| b == b'\n')
        .find_map(|l| l.strip_prefix(b"Uid:"))?;
    number(
        line.split(u8::is_ascii_whitespace)
            .find(|f| !f.is_empty())?,
    )
}

/// /proc/PID/cmdline's arguments (NUL-separated, the trailing empty ones dropped) joined by
/// spaces; `None` when there are none (a kernel thread, a zombie).
pub fn command(cmdline: &[u8]) -> Option<String> {
    let end = cmdline.iter().rposition(|&b| b != 0)? + 1;
    let args: Vec<_> = cmdline[..end]
        .split(|&b| b == 0)
        .map(String::from_utf8_lossy)
        .collect();
    Some(args.join(" "))
}

/// The name of user `uid` in /etc/passwd ("name:password:uid:..."); the first line wins.
pub fn passwd_name(passwd: &[u8], uid: u32) -> Option<String> {
    passwd
        .split(|&b| b == b'\n')
        .filter(|l| !l.starts_with(b"#"))
        .find_map(|line| {
            let mut fields = line.split(|&b| b == b':');
            let name = fields.next().filter(|n| !n.is_empty())?;
            let id: u32 = number(fields.nth(1)?)?;
            (id == uid).then(|| String::from_utf8_lossy(name).into_owned())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &[u8] = b"4242 (python3) S 1 4242 4242 34816 4242 4194304 5000 0 12 0 \
        150 30 0 0 20 0 8 0 987654 12345678 3000 18446744073709551615 1 1 0 0 0 0 0 16781312 \
        1082 0 0 0 17 3 0 0 0 0 0\n";

    #[test]
    fn stat_gives_name_and_start_ticks() {
        assert_eq!(stat_comm(STAT).as_deref(), Some("python3"));
        assert_eq!(stat_start_ticks(STAT), Some(987_654));
    }

    #[test]
    fn a_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let stat = b"77 (a) b (c)) R 1 77 77 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 555 1 1 0\n";
        assert_eq!(stat_comm(stat).as_deref(), Some("a) b (c)"));
        assert_eq!(stat_start_ticks(stat), Some(555));
        let empty = b"9 () S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 31 1 1";
        assert_eq!(stat_comm(empty).as_deref(), Some(""));
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
        assert_eq!(stat_comm(b"4242 python3) S"), None);
        assert_eq!(stat_comm(b")("), None);
        assert_eq!(
            stat_comm(b"1 (\xff\xfe) S").as_deref(),
            Some("\u{fffd}\u{fffd}")
        );
    }

    #[test]
    fn statm_gives_pages() {
        assert_eq!(statm_pages(b"3014 388 318 2 0 176 0\n"), Some((3014, 388)));
        assert_eq!(statm_pages(b"0 0 0 0 0 0 0\n"), Some((0, 0)));
        assert_eq!(statm_pages(b""), None);
        assert_eq!(statm_pages(b"3014"), None);
        assert_eq!(statm_pages(b"3014 x 318"), None);
        assert_eq!(statm_pages(b"-1 388"), None);
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

    #[test]
    fn uid_is_the_real_one() {
        let status = b"Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\n\
            Uid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n";
        assert_eq!(real_uid(status), Some(1000));
        assert_eq!(real_uid(b"Uid: 0 0 0 0"), Some(0));
        assert_eq!(real_uid(b"Name:\tx\nGid:\t5\t5\t5\t5\n"), None);
        assert_eq!(real_uid(b"Uid:\n"), None);
        assert_eq!(real_uid(b"Uid:\tme\t0\n"), None);
        assert_eq!(real_uid(b""), None);
    }

    #[test]
    fn command_joins_the_arguments() {
        assert_eq!(
            command(b"python3\0train.py\0--lr\x000.1\0").as_deref(),
            Some("python3 train.py --lr 0.1")
        );
        assert_eq!(
            command(b"nginx: worker process\0\0\0\0").as_deref(),
            Some("nginx: worker process")
        );
        assert_eq!(command(b"a\0\0b\0").as_deref(), Some("a  b"));
        assert_eq!(command(b"no-terminator").as_deref(), Some("no-terminator"));
        assert_eq!(command(b"bad\xff\0").as_deref(), Some("bad\u{fffd}"));
        assert_eq!(command(b""), None);
        assert_eq!(command(b"\0\0"), None);
    }

    #[test]
    fn passwd_names_the_first_entry_for_the_uid() {
        let passwd = b"# a comment: 1000\n\nroot:x:0:0:root:/root:/bin/bash\nshort:x\n\
            nouid:x::0::/:/bin/sh\nbad:x:notanumber:0::/:/bin/sh\n:x:1000:1000::/:/bin/sh\n\
            alice:x:1000:1000:Alice:/home/alice:/bin/bash\nalias:x:1000:1000::/:/bin/sh\n\
            daemon:x:70000:1:\xff:/:/bin/false";
        assert_eq!(passwd_name(passwd, 0).as_deref(), Some("root"));
        assert_eq!(passwd_name(passwd, 1000).as_deref(), Some("alice"));
        assert_eq!(passwd_name(passwd, 70000).as_deref(), Some("daemon"));
        assert_eq!(passwd_name(passwd, 4242), None);
        assert_eq!(passwd_name(b"", 0), None);
    }
}
