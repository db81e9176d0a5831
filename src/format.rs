//! How a report is printed: JSON for programs, text for people (`snapshot`, `diff`, `explain`),
//! and what every text leaving gpumon for a terminal goes through (`terminal`: one escape).

use clap::ValueEnum;

pub mod terminal;

pub use terminal::{escape, is_unsafe};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Json,
    Text,
}
