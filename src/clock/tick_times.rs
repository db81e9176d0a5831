//! Where a tick goes, when asked: with `GPUMON_TICK_TIMES=FILE` in the environment, each timed
//! part of the work (every NVML call, the /proc reads, the probe files, logs, the screen's update
//! and drawing, serve's encoding) adds its wall time to one table, and every `EVERY` ticks the
//! table is written to FILE (replaced atomically, mode 0600) with the process's own CPU time over
//! the same span. Without the variable `time` only calls the closure.
//!
//! The first tick is set apart: a part's first call (a device handle looked up, NVML's first
//! reading of a GPU, the first full frame) can cost milliseconds that no later tick pays, and
//! averaged in it would read as a steady cost. So each part's first call is shown alone, and its
//! mean, maximum and share of a tick, like the process's CPU time, count only what came after.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// The environment variable that turns the report on and names its file.
pub const ENV: &str = "GPUMON_TICK_TIMES";
/// Ticks between two writes of the report.
const EVERY: u64 = 10;

#[derive(Default, Clone, Copy)]
struct Part {
    /// The first call's time.
    first: Duration,
    /// The calls after the first: how many, their total and their longest.
    calls: u64,
    total: Duration,
    max: Duration,
}

impl Part {
    fn add(&mut self, took: Duration, first: bool) {
        if first {
            self.first = took;
        } else {
            self.calls += 1;
            self.total += took;
            self.max = self.max.max(took);
        }
    }
}

struct Table {
    file: PathBuf,
    /// When the first tick ended, and the process's CPU time (ns, `cpu_ns`) then: the span the
    /// report covers.
    steady_from: Option<(Instant, Option<u64>)>,
    /// Ticks ended after the first.
    ticks: u64,
    parts: BTreeMap<&'static str, Part>,
}

fn table() -> Option<&'static Mutex<Table>> {
    static TABLE: OnceLock<Option<Mutex<Table>>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            let file = std::env::var_os(ENV).filter(|v| !v.is_empty())?;
            Some(Mutex::new(Table {
                file: PathBuf::from(file),
                steady_from: None,
                ticks: 0,
                parts: BTreeMap::new(),
            }))
        })
        .as_ref()
}

/// Runs `f`, adding its wall time to `part` when the report is on.
pub fn time<T>(part: &'static str, f: impl FnOnce() -> T) -> T {
    let Some(table) = table() else {
        return f();
    };
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    let mut t = table.lock().unwrap_or_else(PoisonError::into_inner);
    let new = !t.parts.contains_key(part);
    t.parts.entry(part).or_default().add(took, new);
    out
}

/// Counts one tick of the source; every `EVERY` ticks the report is written.
pub fn tick_done() {
    let Some(table) = table() else {
        return;
    };
    let mut t = table.lock().unwrap_or_else(PoisonError::into_inner);
    if t.steady_from.is_none() {
        t.steady_from = Some((Instant::now(), cpu_ns()));
        return;
    }
    t.ticks += 1;
    if t.ticks % EVERY == 0 {
        let text = report(&t);
        // A report that cannot be written is skipped: timing never stops the program.
        let _ = write_atomic(&t.file, &text);
    }
}

/// This process's CPU time so far, in nanoseconds: the scheduler's count summed over its threads
/// (/proc/self/task/*/schedstat), else user + system time in clock ticks (/proc/self/stat), which
/// counts whole 10 ms ticks: one or two in a report's span at a fraction of a percent of a core.
fn cpu_ns() -> Option<u64> {
    let by_scheduler = || -> Option<u64> {
        let mut total = 0u64;
        for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
        }
        Some(total)
    };
    by_scheduler().or_else(|| {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
        // After the command: state is field 3, utime 14 and stime 15.
        let utime: u64 = fields.nth(11)?.parse().ok()?;
        let stime: u64 = fields.next()?.parse().ok()?;
        let hz = rustix::param::clock_ticks_per_second().max(1);
        Some((utime + stime).saturating_mul(1_000_000_000 / hz))
    })
}

fn report(t: &Table) -> String {
    let (started, cpu_at_start) = t.steady_from.unwrap_or((Instant::now(), None));
    let wall = started.elapsed();
    let ticks = t.ticks.max(1);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "gpumon tick times: {} ticks in {:.1} s after the first (pid {})",
        t.ticks,
        wall.as_secs_f64(),
        std::process::id()
    );
    if let (Some(start), Some(now)) = (cpu_at_start, cpu_ns()) {
        #[allow(clippy::cast_precision_loss)]
        let cpu_s = now.saturating_sub(start) as f64 / 1e9;
        let _ = writeln!(
            out,
            "process CPU: {:.4} s = {:.3} % of one core; {:.3} ms per tick",
            cpu_s,
            100.0 * cpu_s / wall.as_secs_f64().max(1e-9),
            1000.0 * cpu_s / ticks as f64
        );
    }
    let _ = writeln!(
        out,
        "{:<28} {:>10} {:>8} {:>10} {:>10} {:>10} {:>10}",
        "part", "first µs", "calls", "calls/tick", "mean µs", "max µs", "µs/tick"
    );
    #[allow(clippy::cast_precision_loss)]
    for (name, p) in &t.parts {
        let total_us = p.total.as_secs_f64() * 1e6;
        let _ = writeln!(
            out,
            "{:<28} {:>10.1} {:>8} {:>10.2} {:>10.1} {:>10.1} {:>10.1}",
            name,
            p.first.as_secs_f64() * 1e6,
            p.calls,
            p.calls as f64 / ticks as f64,
            total_us / p.calls.max(1) as f64,
            p.max.as_secs_f64() * 1e6,
            total_us / ticks as f64
        );
    }
    out
}

fn write_atomic(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_has_a_line_per_part_with_its_share_of_a_tick() {
        let mut memory = Part::default();
        let mut draw = Part::default();
        // The first calls are dear and set apart; the rest make the steady figures.
        memory.add(Duration::from_millis(13), true);
        draw.add(Duration::from_millis(9), true);
        // 80 calls, 4000 µs in all, the longest 1000 µs.
        for us in [1000, 36].into_iter().chain([38; 78]) {
            memory.add(Duration::from_micros(us), false);
        }
        for _ in 0..10 {
            draw.add(Duration::from_millis(2), false);
        }
        let t = Table {
            file: PathBuf::from("unused"),
            steady_from: Some((Instant::now(), cpu_ns())),
            ticks: 10,
            parts: BTreeMap::from([("nvml.memory_info", memory), ("screen.draw", draw)]),
        };
        let text = report(&t);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("gpumon tick times: 10 ticks in "));
        assert!(lines[0].contains(" after the first "), "{text}");
        assert!(lines[1].starts_with("process CPU: "), "{text}");
        let cells = |name: &str| -> Vec<String> {
            let line = lines.iter().find(|l| l.starts_with(name)).unwrap();
            line[28..].split_whitespace().map(str::to_string).collect()
        };
        // first, then after it: calls, calls per tick, mean, max and total per tick, in µs.
        assert_eq!(
            cells("nvml.memory_info"),
            ["13000.0", "80", "8.00", "50.0", "1000.0", "400.0"]
        );
        assert_eq!(
            cells("screen.draw"),
            ["9000.0", "10", "1.00", "2000.0", "2000.0", "2000.0"]
        );
    }

    #[test]
    fn the_first_tick_is_not_counted_in_the_span() {
        let mut t = Table {
            file: PathBuf::from("unused"),
            steady_from: None,
            ticks: 0,
            parts: BTreeMap::new(),
        };
        assert!(report(&t).contains(": 0 ticks in 0.0 s after the first"));
        t.steady_from = Some((Instant::now(), None));
        t.ticks = 3;
        let text = report(&t);
        assert!(text.starts_with("gpumon tick times: 3 ticks in "), "{text}");
        assert!(!text.contains("process CPU"), "{text}");
    }
}
