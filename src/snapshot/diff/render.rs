//! A diff as text (80 columns, for a terminal or an issue comment) or as JSON.

use super::Diff;
use crate::snapshot::lines::Out;

/// The diff for a person.
pub fn render_text(d: &Diff) -> String {
    let mut o = Out::default();
    let side = |name: &str, s: &super::Side| {
        format!(
            "{name}: {} at {}",
            s.host.as_deref().unwrap_or("n/a"),
            s.taken_at
        )
    };
    o.para(0, &side("A", &d.a));
    o.para(0, &side("B", &d.b));
    o.blank();
    match d.differences.len() {
        0 => o.row("No differences that matter for GPU memory."),
        1 => o.row("1 difference that matters for GPU memory:"),
        n => o.row(&format!("{n} differences that matter for GPU memory:")),
    }
    for x in &d.differences {
        o.blank();
        o.para(0, &x.subject);
        o.para(2, &format!("A: {}", x.a));
        o.para(2, &format!("B: {}", x.b));
        o.para(2, &x.effect);
    }
    o.blank();
    for n in &d.notes {
        o.para(0, &format!("Note: {n}"));
    }
    o.0
}

/// The diff as pretty JSON, newline-terminated.
pub fn render_json(d: &Diff) -> String {
    let mut s = serde_json::to_string_pretty(d)
        .unwrap_or_else(|e| unreachable!("a diff is strings and integers: {e}"));
    s.push('\n');
    s
}
