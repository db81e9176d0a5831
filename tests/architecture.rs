//! The shape of `src/` (docs/ARCHITECTURE.md): the module import graph has no cycle, the rooms'
//! arrows point one way (sources → model → analysis → screen → view), every module says what it
//! holds in a `//!` line, and no file grows past the size a reader can hold.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex_lite::Regex;

/// Rooms that must not import these (the arrows' other direction).
const FORBIDDEN: &[(&str, &[&str])] = &[
    (
        "sample",
        &[
            "source", "model", "analysis", "screen", "view", "app", "cmd",
        ],
    ),
    (
        "source",
        &[
            "model", "analysis", "pipeline", "screen", "view", "app", "cmd",
        ],
    ),
    (
        "model",
        &[
            "analysis", "pipeline", "screen", "view", "app", "cmd", "input", "run", "snapshot",
            "remote",
        ],
    ),
    (
        "analysis",
        &[
            "pipeline", "screen", "view", "app", "cmd", "cli", "snapshot",
        ],
    ),
    ("pipeline", &["screen", "view", "app", "cmd"]),
    (
        "screen",
        &["view", "app", "cmd", "snapshot", "run", "remote"],
    ),
    ("view", &["app", "cmd", "snapshot", "run", "remote"]),
    ("snapshot", &["remote", "app", "cmd"]),
    ("remote", &["view", "app", "cmd"]),
    // TLS is a leaf both sides use: it knows nothing of what it carries.
    (
        "tls",
        &[
            "serve", "remote", "cmd", "cli", "app", "screen", "view", "model", "snapshot",
        ],
    ),
];
const MAX_LINES: usize = 420;

/// Module path ("model::machine") -> file.
fn modules() -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(&root).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            (parts.join("::"), f)
        })
        .collect()
}

/// The code of a file without its `#[cfg(test)]` part (tests may reach anywhere).
fn code(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    match text.find("#[cfg(test)]") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Which modules each module uses (`crate::a::b`, `crate::a::{b, c}`, `super::x`).
fn edges(mods: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    let path = Regex::new(r"\b(crate|super)::((?:\w+::)*\w+)(?:::\{([^}]*)\})?").unwrap();
    let resolve = |p: &str| -> Option<String> {
        let segs: Vec<&str> = p.split("::").collect();
        (1..=segs.len())
            .rev()
            .map(|i| segs[..i].join("::"))
            .find(|m| mods.contains_key(m))
    };
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, file) in mods {
        if file.file_name().is_some_and(|n| n == "tests.rs") || m.ends_with("::tests") {
            continue;
        }
        let parent = m.rsplit_once("::").map_or("", |(p, _)| p);
        for c in path.captures_iter(&code(file)) {
            let base = if &c[1] == "crate" || parent.is_empty() {
                c[2].to_string()
            } else {
                format!("{parent}::{}", &c[2])
            };
            let mut targets = vec![base.clone()];
            if let Some(items) = c.get(3) {
                targets.extend(
                    items
                        .as_str()
                        .split(',')
                        .map(|i| i.split_whitespace().next().unwrap_or("").to_string())
                        .filter(|i| !i.is_empty() && i != "self")
                        .map(|i| format!("{base}::{i}")),
                );
            }
            for t in targets {
                if let Some(r) = resolve(&t)
                    && r != *m
                    && !m.starts_with(&format!("{r}::"))
                    && !r.is_empty()
                {
                    out.entry(m.clone()).or_default().insert(r);
                }
            }
        }
    }
    out
}

fn room(m: &str) -> &str {
    m.split("::").next().unwrap_or(m)
}

#[test]
fn the_module_graph_has_no_cycle() {
    let mods = modules();
    let edges = edges(&mods);
    // Depth-first search with colours; a grey node met again closes a cycle.
    fn visit<'a>(
        n: &'a str,
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        colour: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        colour.insert(n, 1);
        stack.push(n);
        for next in edges.get(n).into_iter().flatten() {
            match colour.get(next.as_str()) {
                Some(1) => {
                    let from = stack.iter().position(|s| s == next).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        stack[from..].iter().map(|s| s.to_string()).collect();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(next, edges, colour, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        colour.insert(n, 2);
        None
    }
    let mut colour = BTreeMap::new();
    for m in mods.keys() {
        if !colour.contains_key(m.as_str())
            && let Some(cycle) = visit(m, &edges, &mut colour, &mut Vec::new())
        {
            panic!("import cycle: {}", cycle.join(" -> "));
        }
    }
    // Rooms (top-level modules) too: an arrow between two rooms points one way only.
    let mut rooms: BTreeSet<(String, String)> = BTreeSet::new();
    for (a, bs) in &edges {
        for b in bs {
            if room(a) != room(b) {
                rooms.insert((room(a).to_string(), room(b).to_string()));
            }
        }
    }
    for (a, b) in &rooms {
        assert!(
            !rooms.contains(&(b.clone(), a.clone())),
            "rooms {a} and {b} import each other"
        );
    }
}

#[test]
fn arrows_point_one_way() {
    let mods = modules();
    let edges = edges(&mods);
    for (from, targets) in &edges {
        let Some((_, banned)) = FORBIDDEN.iter().find(|(r, _)| *r == room(from)) else {
            continue;
        };
        for t in targets {
            assert!(
                !banned.contains(&room(t)),
                "{from} imports {t}: {} must not depend on {}",
                room(from),
                room(t)
            );
        }
    }
}

#[test]
fn every_module_says_what_it_holds_and_stays_small() {
    for (m, file) in modules() {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.starts_with("//!"),
            "{} ({m}) does not start with a //! line",
            file.display()
        );
        let lines = text.lines().count();
        assert!(
            lines <= MAX_LINES,
            "{} has {lines} lines (at most {MAX_LINES}): split it",
            file.display()
        );
    }
}
