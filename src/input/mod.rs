//! Keys to actions: one keymap table, also read by the help overlay.

pub mod keymap;

pub use keymap::{KEYMAP, map, map_answer};

/// Everything a key can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Up,
    Down,
    /// Open the filter prompt.
    FilterPrompt,
    /// A character typed into the prompt.
    PromptChar(char),
    PromptBackspace,
    /// Apply what the prompt holds.
    PromptApply,
    /// Esc: close the prompt, or clear the filter.
    Escape,
    /// Filter to the selected process's PID.
    FilterSelected,
    CycleSort,
    TogglePause,
    /// Tab: next GPU, then all GPUs.
    FocusNext,
    /// `1`-`9`: focus that GPU (by position); in the fleet overview, show that host.
    FocusGpu(u8),
    /// Enter: in the fleet overview, show the selected host.
    Open,
    /// `h`, Backspace: back to the fleet overview.
    Overview,
    ResetPeaks,
    ToggleHelp,
    /// Move between the process table and the alerts list.
    TogglePane,
    Snapshot,
    /// Quit question of `gpumon run`: stop the command.
    StopRun,
    /// Quit question of `gpumon run`: leave the command running.
    LeaveRun,
}
