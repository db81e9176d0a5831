//! Where a tick goes, when asked: with `GPUMON_TICK_TIMES=FILE` in the environment, each timed
//! part of the work (every NVML call, the /proc reads, the probe files, logs, the screen's update
//! and drawing, serve's encoding) adds its wall time to one table, and every `EVERY` ticks the
//! table is written to FILE (replaced atomically, mode 0600) with the process's own CPU time over
//! the same span. Without the variable `time` only calls the closure.

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
    calls: u64,
    total: Duration,
    max: Duration,
}

struct Table {
    file: PathBuf,
    started: Instant,
    /// The process's CPU time (user + system, clock ticks) when the table started.
    cpu_at_start: Option<u64>,
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
                started: Instant::now(),
                cpu_at_start: cpu_ticks(),
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
    let p = t.parts.entry(part).or_default();
    p.calls += 1;
    p.total += took;
    p.max = p.max.max(took);
    out
}

/// Counts one tick of the source; every `EVERY` ticks the report is written.
pub fn tick_done() {
    let Some(table) = table() else {
        return;
    };
    let mut t = table.lock().unwrap_or_else(PoisonError::into_inner);
    t.ticks += 1;
    if t.ticks % EVERY == 0 {
        let text = report(&t);
        // A report that cannot be written is skipped: timing never stops the program.
        let _ = write_atomic(&t.file, &text);
    }
}

/// This process's user + system CPU time so far, in clock ticks (/proc/self/stat).
fn cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    // After the command: state is field 3, utime 14 and stime 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

fn report(t: &Table) -> String {
    let wall = t.started.elapsed();
    let ticks = t.ticks.max(1);
    let hz = rustix::param::clock_ticks_per_second().max(1);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "gpumon tick times: {} ticks in {:.1} s (pid {})",
        t.ticks,
        wall.as_secs_f64(),
        std::process::id()
    );
    if let (Some(start), Some(now)) = (t.cpu_at_start, cpu_ticks()) {
        #[allow(clippy::cast_precision_loss)]
        let cpu_s = now.saturating_sub(start) as f64 / hz as f64;
        let _ = writeln!(
            out,
            "process CPU: {:.3} s = {:.3} % of one core; {:.3} ms per tick",
            cpu_s,
            100.0 * cpu_s / wall.as_secs_f64().max(1e-9),
            1000.0 * cpu_s / ticks as f64
        );
    }
    let _ = writeln!(
        out,
        "{:<28} {:>8} {:>10} {:>10} {:>10} {:>10}",
        "part", "calls", "calls/tick", "mean µs", "max µs", "µs/tick"
    );
    #[allow(clippy::cast_precision_loss)]
    for (name, p) in &t.parts {
        let total_us = p.total.as_secs_f64() * 1e6;
        let _ = writeln!(
            out,
            "{:<28} {:>8} {:>10.2} {:>10.1} {:>10.1} {:>10.1}",
            name,
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
        let part = |calls, ms: u64, max_ms| Part {
            calls,
            total: Duration::from_millis(ms),
            max: Duration::from_millis(max_ms),
        };
        let t = Table {
            file: PathBuf::from("unused"),
            started: Instant::now(),
            cpu_at_start: cpu_ticks(),
            ticks: 10,
            parts: BTreeMap::from([
                ("nvml.memory_info", part(80, 4, 1)),
                ("screen.draw", part(10, 20, 5)),
            ]),
        };
        let text = report(&t);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("gpumon tick times: 10 ticks in "));
        assert!(lines[1].starts_with("process CPU: "), "{text}");
        let cells = |name: &str| -> Vec<String> {
            let line = lines.iter().find(|l| l.starts_with(name)).unwrap();
            line[28..].split_whitespace().map(str::to_string).collect()
        };
        // calls, calls per tick, mean, max and total per tick, in µs.
        assert_eq!(
            cells("nvml.memory_info"),
            ["80", "8.00", "50.0", "1000.0", "400.0"]
        );
        assert_eq!(
            cells("screen.draw"),
            ["10", "1.00", "2000.0", "5000.0", "2000.0"]
        );
    }
}
