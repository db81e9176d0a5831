//! `gpumon completions SHELL` and `gpumon man [DIR]`: generated from the clap definitions and
//! the keymap, so they never disagree with the command line or the keys. The man pages are
//! gpumon.1 and one per subcommand (gpumon-explain.1, gpumon-probe-env.1, …), each with the exit
//! statuses; the screen's pages (gpumon.1, gpumon-run.1) list the keys.

use std::path::Path;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::Man;
use roff::{Roff, bold, roman};

use super::Fail;
use crate::cli::Cli;
use crate::input::KEYMAP;

/// The completion script for `shell`.
pub(super) fn completions(shell: Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "gpumon", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// gpumon.1, in roff.
pub(super) fn man() -> String {
    pages().swap_remove(0).1
}

/// Every page, gpumon.1 first: (file name, roff).
pub(super) fn pages() -> Vec<(String, String)> {
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    let mut out = Vec::new();
    collect(&root, true, &mut out);
    out
}

/// The page of `cmd`, then those of its subcommands (hidden ones left out).
fn collect(cmd: &clap::Command, root: bool, out: &mut Vec<(String, String)>) {
    let man = Man::new(cmd.clone());
    out.push((man.get_filename(), page(&man, cmd, root)));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect(sub, false, out);
    }
}

/// clap_mangen's sections, with KEYS (on the screen's pages), EXIT STATUS and SEE ALSO.
fn page(man: &Man, cmd: &clap::Command, root: bool) -> String {
    let mut w = Vec::new();
    let mut render = || -> std::io::Result<()> {
        man.render_title(&mut w)?;
        man.render_name_section(&mut w)?;
        man.render_synopsis_section(&mut w)?;
        man.render_description_section(&mut w)?;
        if cmd.get_arguments().any(|a| !a.is_hide_set()) {
            man.render_options_section(&mut w)?;
        }
        if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
            man.render_subcommands_section(&mut w)?;
        }
        if cmd.get_after_long_help().is_some() || cmd.get_after_help().is_some() {
            man.render_extra_section(&mut w)?;
        }
        let screen = root || cmd.get_name() == "run";
        let mut more = Roff::new();
        if screen {
            keys(&mut more);
        }
        exit_status(&mut more);
        if !root {
            more.control("SH", ["SEE ALSO"])
                .text([bold("gpumon"), roman("(1)")]);
        }
        more.to_writer(&mut w)?;
        if cmd.get_version().is_some() {
            man.render_version_section(&mut w)?;
        }
        Ok(())
    };
    // Writing into a Vec cannot fail.
    render().unwrap_or_else(|e| unreachable!("roff into memory: {e}"));
    String::from_utf8_lossy(&w).into_owned()
}

/// The keymap, one entry a binding, as the help overlay (`?`) lists it.
fn keys(r: &mut Roff) {
    r.control("SH", ["KEYS"]).text([roman(format!(
        "On the screen (also under gpumon run), which needs a terminal of at least {}x{} \
         cells. The number keys count from 1: 1 focuses GPU0, 2 GPU1 and so on (on the fleet \
         overview, 1 shows the first host).",
        crate::view::MIN_WIDTH,
        crate::view::MIN_HEIGHT
    ))]);
    for b in KEYMAP {
        let keys: Vec<&str> = b.keys.split_whitespace().collect();
        r.control("TP", [])
            .text([bold(keys.join(", "))])
            .text([roman(b.help)]);
    }
}

/// The CLI contract's statuses (cmd::Fail).
fn exit_status(r: &mut Roff) {
    r.control("SH", ["EXIT STATUS"]);
    let statuses = [
        ("0", "Success."),
        (
            "1",
            "A failure at run time: a file that cannot be read or written, a server that cannot \
             be reached. gpumon explain: a file given could not be read, or is of a kind it does \
             not read (a snapshot, a binary file); the others are still reported. A cut or empty \
             file is read and said in the report, with 0.",
        ),
        (
            "2",
            "Bad usage (a flag, a value, a file of the wrong kind for --replay, snapshot \
             --replay or diff, a recording that cannot be replayed), or no usable GPU or NVML; \
             the message says which. A usage error ends with the command's usage.",
        ),
        (
            "128+N",
            "The screen (gpumon, gpumon run) ended by signal N: SIGTERM, SIGHUP, SIGINT. \
             gpumon serve and gpumon record stop on them with 0.",
        ),
        (
            "101",
            "An internal error (a panic), after its message; the terminal is restored first.",
        ),
    ];
    for (code, what) in statuses {
        r.control("TP", []).text([bold(code)]).text([roman(what)]);
    }
    r.control("PP", []).text([roman(
        "gpumon run exits with its command's status once the command has ended.",
    )]);
}

/// `gpumon man DIR`: every page written into DIR (created with its parents, as `mkdir -p` does,
/// when missing; each page atomically, mode 0600), their names on stderr.
pub(super) fn write_pages(dir: &Path) -> Result<ExitCode, Fail> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Fail::runtime(format!("cannot create {}: {e}", dir.display())))?;
    let pages = pages();
    for (name, text) in &pages {
        crate::snapshot::write_atomic(dir.join(name), text.as_bytes()).map_err(Fail::runtime)?;
    }
    crate::say!(
        "gpumon: {} man pages written to {}",
        pages.len(),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_and_man_name_the_subcommands_and_flags() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let script = completions(shell);
            for word in ["snapshot", "keep-exited", "read-only"] {
                assert!(script.contains(word), "{shell}: {word}");
            }
        }
        let page = man();
        assert!(page.contains(".TH gpumon"), "{page}");
        assert!(page.contains("keep\\-exited"), "{page}");
        for section in [".SH KEYS", ".SH \"EXIT STATUS\""] {
            assert!(page.contains(section), "{section}: {page}");
        }
    }

    #[test]
    fn every_subcommand_has_its_page_and_the_screens_list_the_keys() {
        let all = pages();
        let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
        for want in [
            "gpumon.1",
            "gpumon-explain.1",
            "gpumon-diff.1",
            "gpumon-probe-env.1",
        ] {
            assert!(names.contains(&want), "{want}: {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains("help")), "{names:?}");
        for (name, text) in &all {
            assert!(text.contains(".SH \"EXIT STATUS\""), "{name}");
            let keyed = matches!(name.as_str(), "gpumon.1" | "gpumon-run.1");
            assert_eq!(text.contains(".SH KEYS"), keyed, "{name}");
        }
    }
}
