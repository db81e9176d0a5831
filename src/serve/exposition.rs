//! The two exposition formats: which one a client's `Accept` header takes, and the classic text
//! format 0.0.4 made from OpenMetrics text for clients that ask only for `text/plain`.

use std::collections::HashSet;

/// What Prometheus asks for first.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The classic text format, for clients that accept only `text/plain`.
pub const CLASSIC: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether an `Accept` header takes OpenMetrics (any q above zero).
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',').any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let om = parts
                .next()
                .is_some_and(|t| t.eq_ignore_ascii_case("application/openmetrics-text"));
            om && parts.all(|p| match p.split_once('=') {
                Some((k, v)) if k.trim().eq_ignore_ascii_case("q") => {
                    v.trim().parse::<f64>().is_ok_and(|q| q > 0.0)
                }
                _ => true,
            })
        })
    })
}

/// OpenMetrics text as the classic format 0.0.4: no `# UNIT` or `# EOF` lines, and counters
/// declared under their `_total` sample name.
pub fn to_classic(openmetrics: &str) -> String {
    let counters: HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let (name, tail) = line.strip_prefix(p)?.split_once(' ')?;
            counters
                .contains(name)
                .then(|| format!("{p}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}
