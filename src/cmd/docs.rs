//! `gpumon completions SHELL` and `gpumon man`: generated from the clap definitions, so they
//! never disagree with the command line.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

/// The completion script for `shell`.
pub(super) fn completions(shell: Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "gpumon", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The man page, in roff.
pub(super) fn man() -> std::io::Result<String> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
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
        let page = man().unwrap();
        assert!(
            page.starts_with(".ie") || page.contains(".TH gpumon"),
            "{page}"
        );
        assert!(page.contains("keep\\-exited"), "{page}");
    }
}
