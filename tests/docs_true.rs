//! The documentation stays true to the binary: every subcommand and flag the command line defines
//! is in the guide, every key of the keymap is on the keys page, `gpumon man DIR` writes a page for
//! every subcommand and gpumon.1's KEYS are the keymap's, every relative link and anchor resolves,
//! every format version the docs name is one the code writes or reads, and scripts and fixtures are
//! named by what they hold.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use gpumon::cli::Cli;
use gpumon::input::KEYMAP;
use regex_lite::Regex;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn files_under(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

/// README.md, CHANGELOG.md and every page under docs/, as (path from the root, text).
fn pages() -> BTreeMap<String, String> {
    let mut paths = vec![root().join("README.md"), root().join("CHANGELOG.md")];
    files_under(&root().join("docs"), "md", &mut paths);
    paths
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (rel, fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// The lines outside fenced code blocks, with their numbers (code is shown, not linked or
/// titled).
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((n + 1, line));
        }
    }
    out
}

/// Whether `text` holds `token` standing alone (no letter, digit or `-` glued to either side).
fn names(text: &str, token: &str) -> bool {
    let glued = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    text.match_indices(token).any(|(i, _)| {
        !text[..i].chars().next_back().is_some_and(glued)
            && !text[i + token.len()..].chars().next().is_some_and(glued)
    })
}

/// Every command of the command line with its path (`[]` is `gpumon` itself), leaving out clap's
/// own `help` subcommands.
fn commands() -> Vec<(Vec<String>, clap::Command)> {
    fn walk(path: Vec<String>, cmd: &clap::Command, out: &mut Vec<(Vec<String>, clap::Command)>) {
        out.push((path.clone(), cmd.clone()));
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let mut p = path.clone();
            p.push(sub.get_name().to_owned());
            walk(p, sub, out);
        }
    }
    let mut cmd = Cli::command();
    cmd.build();
    let mut out = Vec::new();
    walk(Vec::new(), &cmd, &mut out);
    out
}

/// The flags `--help` prints for a command: long and short forms, hidden ones and clap's own
/// `--help` left out.
fn flags(cmd: &clap::Command) -> Vec<String> {
    let mut out = Vec::new();
    for arg in cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && a.get_id() != "help")
    {
        out.extend(arg.get_long().map(|l| format!("--{l}")));
        out.extend(arg.get_short().map(|s| format!("-{s}")));
    }
    out
}

/// The section of commands.md for a command: from its `## gpumon PATH` heading to the next `## `.
fn section<'a>(commands_md: &'a str, path: &[String]) -> Option<&'a str> {
    let title = std::iter::once("gpumon")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let start = commands_md.lines().position(|l| {
        l.strip_prefix("## ")
            .is_some_and(|h| h == title || h.starts_with(&format!("{title} (")))
    })?;
    let offset: usize = commands_md.lines().take(start).map(|l| l.len() + 1).sum();
    let rest = &commands_md[offset..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 4);
    Some(&rest[..end])
}

#[test]
fn every_subcommand_and_flag_is_in_the_commands_page() {
    let page = fs::read_to_string(root().join("docs/guide/commands.md")).unwrap();
    let mut drift = Vec::new();
    for (path, cmd) in commands() {
        let name = format!("gpumon {}", path.join(" "));
        let name = name.trim_end();
        if cmd.has_subcommands() && flags(&cmd).is_empty() {
            // A command that only groups others (`gpumon probe`): its subcommands are checked.
            if !page.contains(name) {
                drift.push(format!(
                    "`{name}` is a command, but docs/guide/commands.md never names it"
                ));
            }
            continue;
        }
        let Some(text) = section(&page, &path) else {
            drift.push(format!(
                "`{name}` is a command, but docs/guide/commands.md has no `## {name}` section"
            ));
            continue;
        };
        for flag in flags(&cmd) {
            if !names(text, &flag) {
                drift.push(format!(
                    "`{name} --help` prints {flag}, but the `## {name}` section of docs/guide/commands.md does not name it"
                ));
            }
        }
    }
    assert!(
        drift.is_empty(),
        "the guide drifted from the binary:\n{}",
        drift.join("\n")
    );
}

#[test]
fn every_key_of_the_keymap_is_on_the_keys_page() {
    let page = fs::read_to_string(root().join("docs/guide/screen.md")).unwrap();
    let missing: Vec<String> = KEYMAP
        .iter()
        .flat_map(|b| b.keys.split_whitespace().map(move |k| (k, b.help)))
        .filter(|(key, _)| !page.contains(&format!("`{key}`")))
        .map(|(key, help)| {
            format!(
                "key `{key}` ({help}) is in src/input/keymap.rs but not in docs/guide/screen.md"
            )
        })
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// The text of a roff line as a reader sees it: font changes dropped, `\-` a hyphen.
fn unroff(line: &str) -> String {
    line.replace("\\fB", "")
        .replace("\\fR", "")
        .replace("\\fI", "")
        .replace("\\-", "-")
        .replace("\\&", "")
}

/// The section `name` of a roff page: its lines up to the next `.SH`.
fn roff_section<'a>(page: &'a str, name: &str) -> Vec<&'a str> {
    page.lines()
        .skip_while(|l| *l != format!(".SH {name}"))
        .skip(1)
        .take_while(|l| !l.starts_with(".SH "))
        .collect()
}

#[test]
fn the_man_pages_cover_every_subcommand_and_list_the_keymaps_keys() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .arg("man")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: BTreeSet<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let expected: BTreeSet<String> = commands()
        .iter()
        .map(|(path, _)| match path.as_slice() {
            [] => "gpumon.1".to_string(),
            p => format!("gpumon-{}.1", p.join("-")),
        })
        .collect();
    assert_eq!(written, expected, "a page per command, no more");
    let page = |name: &str| fs::read_to_string(dir.path().join(name)).unwrap();
    // gpumon.1's KEYS: each binding of the keymap, in its order, keys as `?` shows them.
    let main = page("gpumon.1");
    let keys = roff_section(&main, "KEYS");
    let listed: Vec<String> = keys
        .iter()
        .zip(keys.iter().skip(1))
        .filter(|(l, _)| **l == ".TP")
        .map(|(_, next)| unroff(next))
        .collect();
    let keymap: Vec<String> = KEYMAP
        .iter()
        .map(|b| b.keys.split_whitespace().collect::<Vec<_>>().join(", "))
        .collect();
    assert_eq!(listed, keymap, "man gpumon's KEYS are the keymap's");
    let intro = unroff(keys.first().copied().unwrap_or_default());
    assert!(
        intro.contains("72x20") && intro.contains("1 focuses GPU0"),
        "{intro}"
    );
    // Every page gives the exit statuses of the CLI contract.
    for name in &written {
        let text = page(name);
        let statuses: Vec<String> = roff_section(&text, "\"EXIT STATUS\"")
            .windows(2)
            .filter(|w| w[0] == ".TP")
            .map(|w| unroff(w[1]))
            .collect();
        for code in ["0", "1", "2"] {
            assert!(statuses.iter().any(|s| s == code), "{name}: {statuses:?}");
        }
    }
}

/// GitHub's anchor for a heading: its text without markup, lower-cased, every character but
/// letters, digits, spaces, `-` and `_` dropped, spaces turned into `-`.
fn slug(heading: &str) -> String {
    let link = Regex::new(r"\[([^\]]*)\]\([^)]*\)").unwrap();
    let text = link.replace_all(heading, "$1");
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings, with GitHub's `-1`, `-2` for repeated ones.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeMap::<String, usize>::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim());
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// Resolves `a/../b` and `./` in a path relative to the root.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let all = pages();
    let link = Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let code = Regex::new(r"`[^`]*`").unwrap();
    let mut broken = Vec::new();
    for (file, text) in &all {
        for (n, line) in prose(text) {
            let line = code.replace_all(line, "");
            for cap in link.captures_iter(&line) {
                let target = &cap[1];
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
                let dest = if path.is_empty() {
                    PathBuf::from(file)
                } else {
                    normalise(&Path::new(file).parent().unwrap().join(path))
                };
                let dest_str = dest.to_string_lossy().into_owned();
                let at = format!("{file}:{n}: ({target})");
                if !root().join(&dest).exists() {
                    broken.push(format!("{at}: {dest_str} does not exist"));
                    continue;
                }
                if anchor.is_empty() || !dest_str.ends_with(".md") {
                    continue;
                }
                let page = all
                    .get(&dest_str)
                    .cloned()
                    .unwrap_or_else(|| fs::read_to_string(root().join(&dest)).unwrap());
                if !anchors(&page).contains(anchor) {
                    broken.push(format!(
                        "{at}: {dest_str} has no heading with anchor #{anchor}"
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// `gpumon.FAMILY/N` named in the code outside comments and tests: family -> versions -> file.
fn versions_in_code() -> BTreeMap<String, BTreeMap<u32, String>> {
    let named = Regex::new(r"gpumon\.([a-z]+)/([0-9]+)").unwrap();
    let mut files = Vec::new();
    files_under(&root().join("src"), "rs", &mut files);
    files_under(&root().join("python/gpumon"), "py", &mut files);
    let mut out: BTreeMap<String, BTreeMap<u32, String>> = BTreeMap::new();
    for file in files {
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let rel = file
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = fs::read_to_string(&file).unwrap();
        for line in text.lines().take_while(|l| l.trim() != "#[cfg(test)]") {
            let t = line.trim_start();
            if t.starts_with("//") || t.starts_with('#') {
                continue;
            }
            for cap in named.captures_iter(line) {
                let n: u32 = cap[2].parse().unwrap();
                out.entry(cap[1].to_owned())
                    .or_default()
                    .entry(n)
                    .or_insert_with(|| rel.clone());
            }
        }
    }
    out
}

#[test]
fn every_format_version_the_docs_name_is_the_codes() {
    let code = versions_in_code();
    let named = Regex::new(r"gpumon\.([a-z]+)/([0-9N]+)").unwrap();
    let mut drift = Vec::new();
    for (file, text) in pages() {
        for (p, paragraph) in text.split("\n\n").enumerate() {
            for cap in named.captures_iter(paragraph) {
                let (family, version) = (&cap[1], &cap[2]);
                let Some(known) = code.get(family) else {
                    drift.push(format!("{file} (paragraph {}) names gpumon.{family}/{version}, but no code in src/ or python/gpumon/ writes or reads a gpumon.{family}/ format", p + 1));
                    continue;
                };
                let (&current, current_at) = known.last_key_value().unwrap();
                let Ok(n) = version.parse::<u32>() else {
                    continue;
                };
                if !known.contains_key(&n) {
                    drift.push(format!("{file} (paragraph {}) names gpumon.{family}/{n}, but the code knows only {:?} (current: gpumon.{family}/{current} in {current_at})", p + 1, known.keys().collect::<Vec<_>>()));
                } else if n != current && !paragraph.contains(&format!("gpumon.{family}/{current}"))
                {
                    drift.push(format!("{file} (paragraph {}) names gpumon.{family}/{n} as if current, but the code writes gpumon.{family}/{current} ({current_at}); name the current one beside an older one", p + 1));
                }
            }
        }
    }
    assert!(
        drift.is_empty(),
        "format versions drifted:\n{}",
        drift.join("\n")
    );
}

#[test]
fn the_version_is_cargos() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .arg("--version")
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        printed.trim(),
        format!("gpumon {}", env!("CARGO_PKG_VERSION"))
    );
    let changelog = fs::read_to_string(root().join("CHANGELOG.md")).unwrap();
    assert!(
        changelog.contains(&format!("## [{}]", env!("CARGO_PKG_VERSION"))),
        "CHANGELOG.md has no `## [{}]` section for the version Cargo.toml gives",
        env!("CARGO_PKG_VERSION")
    );
}

#[test]
fn anchors_follow_githubs_rules() {
    let page = "# Title\n## New in 0.2.0\n## gpumon (the screen)\n```\n# not a heading\n```\n\
                ## A column says `n/a`\n## [Serve](serve.md) and TLS\n## Title\n";
    let got: Vec<String> = anchors(page).into_iter().collect();
    assert_eq!(
        got,
        [
            "a-column-says-na",
            "gpumon-the-screen",
            "new-in-020",
            "serve-and-tls",
            "title",
            "title-1"
        ]
    );
}

#[test]
fn scripts_and_fixtures_are_named_by_what_they_hold() {
    let round = Regex::new(r"(?i)^round[-_ ]?[0-9]").unwrap();
    let mut found = Vec::new();
    fn walk(dir: &Path, round: &Regex, found: &mut Vec<String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if round.is_match(&name) {
                found.push(path.strip_prefix(root()).unwrap().display().to_string());
            }
            if path.is_dir() {
                walk(&path, round, found);
            }
        }
    }
    for dir in ["scripts", "tests/fixtures"] {
        walk(&root().join(dir), &round, &mut found);
    }
    assert!(
        found.is_empty(),
        "named after the order they were written in, not what they do or hold: {found:?}"
    );
}

#[test]
fn the_readme_stays_a_five_minute_read() {
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines (at most 250): move the detail into docs/guide/"
    );
}

/// The guide's launcher table names every variable gpumon reads of a rank's environment (and so
/// the first thing a user checks when a job is not grouped is there).
#[test]
fn the_launcher_table_names_every_variable_read() {
    let screen = std::fs::read_to_string(root().join("docs/guide/screen.md")).unwrap();
    let table = screen
        .split("### Which variables gpumon reads")
        .nth(1)
        .and_then(|t| t.split("\n## ").next())
        .expect("docs/guide/screen.md has the launcher table");
    for var in gpumon::source::launcher::LAUNCH_VARIABLES {
        assert!(
            table.contains(&format!("`{var}`")),
            "{var} is not in the table"
        );
    }
}
