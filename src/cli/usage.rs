//! A usage error in words: clap's message and tips as one line, then the usage it was measured
//! against as a hint (the command's own synopsis, and where its help is).

/// A usage error as one line (DESIGN.md §4): clap's message and tips, without the usage block.
pub fn one_line_error(e: &clap::Error) -> String {
    e.render()
        .to_string()
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .map(|l| l.trim_start_matches("error: "))
        .fold(String::new(), |mut out, l| {
            if !out.is_empty() {
                out.push_str(if out.ends_with(':') { " " } else { "; " });
            }
            out.push_str(l);
            out
        })
}

/// clap's usage line of the command the error is about, and where its help is: "usage: gpumon
/// explain <FILE>... (gpumon explain --help says more)"; where clap gave no usage line (a bad
/// value), where the usage is.
pub fn usage_hint(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let Some(usage) = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "))
        .map(str::trim)
    else {
        return "usage: gpumon --help says it".into();
    };
    let command: Vec<&str> = usage
        .split_whitespace()
        .take_while(|w| !w.starts_with(['[', '<', '-']))
        .collect();
    format!("usage: {usage} ({} --help says more)", command.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;

    #[test]
    fn usage_errors_are_one_line_with_their_tips() {
        use clap::Parser;
        for args in [
            &["gpumon", "--frobnicate"][..],
            &["gpumon", "--interval", "-5s"],
            &["gpumon", "--demo", "--replay", "x"],
            &["gpumon", "--interval", "5s", "record", "x.ndjson"],
        ] {
            let e = Cli::try_parse_from(args).unwrap_err();
            let line = one_line_error(&e);
            assert!(!line.is_empty() && !line.contains('\n'), "{args:?}: {line}");
            assert!(
                !line.contains("Usage") && !line.starts_with("error"),
                "{line}"
            );
            let hint = usage_hint(&e);
            assert!(hint.starts_with("usage: gpumon "), "{hint}");
        }
        let e = Cli::try_parse_from(["gpumon", "explain"]).unwrap_err();
        assert_eq!(
            usage_hint(&e),
            "usage: gpumon explain <FILE>... (gpumon explain --help says more)"
        );
        let e = Cli::try_parse_from(["gpumon", "--speed", "2"]).unwrap_err();
        assert!(one_line_error(&e).ends_with("provided: <--replay <REPLAY>|--demo>"));
        let e = Cli::try_parse_from(["gpumon", "--intervl", "1s"]).unwrap_err();
        assert!(one_line_error(&e).contains("tip: a similar argument exists: '--interval'"));
    }
}
