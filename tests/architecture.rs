//! The shape of `src/` (docs/ARCHITECTURE.md): the module import graph has no cycle, the rooms'
//! arrows point one way (sources → model → analysis → screen → view), every module says what it
//! holds in a `//!` line, and no file grows past the size a reader can hold. The allocator
//! probe's Python modules (`python/gpumon/probe/_gpumon_probe/`) have no import cycle either.

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
    // Painting a frame knows cells, not what they show.
    ("paint", &["app", "view", "screen", "model", "cmd"]),
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

/// The paths a module's code names, each from the crate's root: every `crate::`, `super::`
/// (`super::super::`) and `self::` path, use trees expanded at any depth (`super::{a, b::{c,
/// d}}` names `super::a`, `super::b::c` and `super::b::d`). `module` is the one whose code it is.
fn named_paths(code: &str, module: &str) -> Vec<String> {
    let start = Regex::new(r"\b(?:crate|super|self)::").unwrap();
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for m in start.find_iter(code) {
        if code[..m.start()].ends_with("::") {
            continue; // the second `super` of `super::super::`, read with the first
        }
        let mut base: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
        let mut i = m.start();
        loop {
            let rest = &code[i..];
            if let Some(r) = rest.strip_prefix("crate::") {
                base.clear();
                i = code.len() - r.len();
            } else if let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                i = code.len() - r.len();
            } else if let Some(r) = rest.strip_prefix("self::") {
                i = code.len() - r.len();
            } else {
                break;
            }
        }
        use_tree(bytes, &mut i, base.join("::"), &mut out);
    }
    out
}

/// Reads one use tree at `bytes[*i..]` under `prefix`, pushing every path it names.
fn use_tree(bytes: &[u8], i: &mut usize, prefix: String, out: &mut Vec<String>) {
    let skip_space = |i: &mut usize| {
        while *i < bytes.len() && bytes[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    let mut path = prefix;
    loop {
        skip_space(i);
        if bytes.get(*i) == Some(&b'{') {
            *i += 1;
            loop {
                skip_space(i);
                match bytes.get(*i) {
                    None => return,
                    Some(b'}') => {
                        *i += 1;
                        return;
                    }
                    _ => use_tree(bytes, i, path.clone(), out),
                }
                // past a rename (`a as b`) to the next item or the end of the group
                while *i < bytes.len() && !matches!(bytes[*i], b',' | b'}') {
                    *i += 1;
                }
                if bytes.get(*i) == Some(&b',') {
                    *i += 1;
                }
            }
        }
        let from = *i;
        while *i < bytes.len() && (bytes[*i].is_ascii_alphanumeric() || bytes[*i] == b'_') {
            *i += 1;
        }
        let ident = std::str::from_utf8(&bytes[from..*i]).unwrap_or_default();
        if ident.is_empty() || ident == "self" {
            out.push(path);
            return;
        }
        path = if path.is_empty() {
            ident.to_string()
        } else {
            format!("{path}::{ident}")
        };
        if bytes[*i..].starts_with(b"::") {
            *i += 2;
        } else {
            out.push(path);
            return;
        }
    }
}

/// Each module's code (its test part and test modules left out: tests may reach anywhere).
fn codes(mods: &BTreeMap<String, PathBuf>) -> BTreeMap<String, String> {
    mods.iter()
        .filter(|(m, file)| {
            !(file.file_name().is_some_and(|n| n == "tests.rs") || m.ends_with("::tests"))
        })
        .map(|(m, file)| (m.clone(), code(file)))
        .collect()
}

/// Which modules each module uses (`crate::a::b`, `super::{b, c::{d}}`, `self::x`), from each
/// module's code.
fn edges(codes: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let resolve = |p: &str| -> Option<String> {
        let segs: Vec<&str> = p.split("::").collect();
        (1..=segs.len())
            .rev()
            .map(|i| segs[..i].join("::"))
            .find(|m| codes.contains_key(m))
    };
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, code) in codes {
        for t in named_paths(code, m) {
            if let Some(r) = resolve(&t)
                && r != *m
                && !m.starts_with(&format!("{r}::"))
                && !r.is_empty()
            {
                out.entry(m.clone()).or_default().insert(r);
            }
        }
    }
    out
}

fn room(m: &str) -> &str {
    m.split("::").next().unwrap_or(m)
}

#[test]
fn the_paths_a_module_names_are_read_whole() {
    let code = "use super::{PoolReader, file::{self, MAX_BYTES}, map_file as m};\n\
                use super::super::sizes::Size;\nuse crate::{a::b, c};\nuse self::x::Y;\n\
                let v = crate::d::e(super::f::g);";
    assert_eq!(
        named_paths(code, "source::probe::dir"),
        [
            "source::probe::PoolReader",
            "source::probe::file",
            "source::probe::file::MAX_BYTES",
            "source::probe::map_file",
            "source::sizes::Size",
            "a::b",
            "c",
            "source::probe::dir::x::Y",
            "d::e",
            "source::probe::f::g",
        ]
    );
}

/// The import cycle the probe's reader once had (`dir` -> `map_file` -> `request` -> `dir`,
/// through `super::{…}` imports), as a test of the test.
#[test]
fn a_cycle_through_grouped_imports_is_found() {
    let codes: BTreeMap<String, String> = [
        ("p", "pub mod dir; pub mod map_file; pub mod request;"),
        ("p::dir", "use super::{PoolReader, map_file};"),
        ("p::map_file", "let x = super::request::purpose_of(id);"),
        ("p::request", "use super::dir::ProbeDirs;"),
    ]
    .into_iter()
    .map(|(m, c)| (m.to_string(), c.to_string()))
    .collect();
    let found = cycle(&edges(&codes)).map(|c| c.join(" -> "));
    assert_eq!(
        found.as_deref(),
        Some("p::dir -> p::map_file -> p::request -> p::dir")
    );
}

/// The first import cycle of the graph (depth-first, with colours: a grey node met again
/// closes a cycle), as the modules on it, its first repeated at its end.
fn cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
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
    for m in edges.keys() {
        if !colour.contains_key(m.as_str())
            && let Some(cycle) = visit(m, edges, &mut colour, &mut Vec::new())
        {
            return Some(cycle);
        }
    }
    None
}

#[test]
fn the_module_graph_has_no_cycle() {
    let edges = edges(&codes(&modules()));
    if let Some(cycle) = cycle(&edges) {
        panic!("import cycle: {}", cycle.join(" -> "));
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

/// The probe's modules and what each imports of the others: `from .x import …`, `from . import
/// x, y` (at the top or inside a function: both run), and the parts imported at their first use
/// (`part("x")`, `_reader("x")`).
fn probe_edges(sources: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let from = Regex::new(r"^from \.(\w+)").unwrap();
    let names = Regex::new(r"^from \. import \(?([\w, ]+)").unwrap();
    let lazy = Regex::new(r#"(?:part|_reader)\("(\w+)"\)"#).unwrap();
    let mut edges = BTreeMap::new();
    for (module, text) in sources {
        let mut to = BTreeSet::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if let Some(c) = from.captures(line) {
                to.insert(c[1].to_string());
            }
            if let Some(c) = names.captures(line) {
                to.extend(c[1].split(',').map(|n| n.trim().to_string()));
            }
            to.extend(lazy.captures_iter(line).map(|c| c[1].to_string()));
        }
        to.retain(|t| t != module && sources.contains_key(t));
        edges.insert(module.clone(), to);
    }
    edges
}

#[test]
fn the_probes_modules_have_no_import_cycle() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/gpumon/probe/_gpumon_probe");
    let mut sources = BTreeMap::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "py") {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            sources.insert(stem, std::fs::read_to_string(&p).unwrap());
        }
    }
    assert!(sources.contains_key("read_torch") && sources.contains_key("common"));
    let edges = probe_edges(&sources);
    assert!(edges["probe"].contains("read_torch"), "{edges:?}");
    if let Some(cycle) = cycle(&edges) {
        panic!("import cycle in the probe: {}", cycle.join(" -> "));
    }
    // The circle its split once made, as a test of the test.
    let once: BTreeMap<String, String> = [
        (
            "read_torch",
            "from .common import num\nfrom .torch_history import history_on",
        ),
        (
            "torch_history",
            "def arm():\n    from . import maps, torch_map  # noqa: F401",
        ),
        ("torch_map", "from .read_torch import uuid"),
        ("maps", ""),
        ("common", ""),
    ]
    .into_iter()
    .map(|(m, c)| (m.to_string(), c.to_string()))
    .collect();
    let found = cycle(&probe_edges(&once)).map(|c| c.join(" -> "));
    assert_eq!(
        found.as_deref(),
        Some("read_torch -> torch_history -> torch_map -> read_torch")
    );
}

#[test]
fn arrows_point_one_way() {
    let edges = edges(&codes(&modules()));
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
