//! The files a subcommand is given, opened through `infile` (once, `-` for standard input,
//! decompressed), and refused in words when they are not what the subcommand reads: "this is a
//! text log, not a gpumon recording: try `gpumon explain …`", never a parser's error.

use std::path::Path;

use crate::infile::{Input, Kind};

/// Opens `path`; the error is one line naming it.
pub(super) fn open(path: &Path) -> Result<Input, String> {
    Input::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// What a command reads, for its refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wants {
    /// `--replay`, `snapshot --replay`, `serve --replay`.
    Recording,
    /// `explain`.
    LogOrRecording,
    /// A side of `diff`.
    SnapshotOrRecording,
}

impl Wants {
    fn words(self) -> &'static str {
        match self {
            Wants::Recording => "a gpumon recording",
            Wants::LogOrRecording => "a log or a gpumon recording",
            Wants::SnapshotOrRecording => "a gpumon snapshot or recording",
        }
    }

    /// Whether the command reads this kind (its own reader then says what is wrong, if
    /// anything: a damaged recording or snapshot reads as JSON, an empty file as empty).
    fn reads(self, kind: &Kind) -> bool {
        match self {
            Wants::Recording => matches!(kind, Kind::Recording | Kind::Json | Kind::Empty),
            Wants::LogOrRecording => {
                matches!(kind, Kind::Recording | Kind::Json | Kind::Empty | Kind::Log)
            }
            Wants::SnapshotOrRecording => matches!(
                kind,
                Kind::Recording | Kind::Snapshot | Kind::Json | Kind::Empty
            ),
        }
    }
}

/// `Ok` when the command reads what `input` is; else the sentence that says what it is, what was
/// expected, and which command reads it.
pub(super) fn check(input: &Input, wants: Wants) -> Result<(), String> {
    if wants.reads(&input.kind) {
        return Ok(());
    }
    let name = &input.name;
    let hint = match &input.kind {
        Kind::Log => format!(": try `gpumon explain {name}`"),
        Kind::Snapshot => ": `gpumon diff` compares it with another snapshot or a recording".into(),
        // Every command reads recordings; empty files and other JSON go to its own reader.
        _ => String::new(),
    };
    Err(format!(
        "{name}: this is {}, not {}{hint}",
        input.kind.describe(),
        wants.words()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(bytes: &'static [u8], wants: Wants) -> Option<String> {
        let input = Input::from_reader("f", bytes).unwrap();
        check(&input, wants).err()
    }

    #[test]
    fn each_command_says_what_it_was_given_and_what_reads_it() {
        let log = b"epoch 1 loss 0.3\n";
        assert_eq!(
            refusal(log, Wants::Recording).unwrap(),
            "f: this is a text log, not a gpumon recording: try `gpumon explain f`"
        );
        assert_eq!(
            refusal(log, Wants::SnapshotOrRecording).unwrap(),
            "f: this is a text log, not a gpumon snapshot or recording: try `gpumon explain f`"
        );
        assert_eq!(refusal(log, Wants::LogOrRecording), None);
        let snap = b"{\n  \"schema\": \"gpumon.snapshot/3\",\n  \"x\": 1\n}\n";
        assert!(
            refusal(snap, Wants::LogOrRecording)
                .unwrap()
                .starts_with("f: this is a gpumon snapshot, not a log or a gpumon recording:")
        );
        assert_eq!(refusal(snap, Wants::SnapshotOrRecording), None);
        let elf = b"\x7fELF\x02\x01\x01\x00\x00";
        assert_eq!(
            refusal(elf, Wants::LogOrRecording).unwrap(),
            "f: this is a binary file (66 % of its first 9 bytes are not text), not a log or a gpumon \
             recording"
        );
    }
}
