//! How a report is printed: JSON for programs, text for people (`snapshot`, `diff`, `explain`).

use clap::ValueEnum;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Json,
    Text,
}
