//! Keys to actions: one keymap table, also read by the help overlay; a paste to typed text.

pub mod keymap;
pub mod paste;

pub use keymap::{KEYMAP, map, map_answer, map_signal};
pub use paste::{PROMPT_MAX, map_paste};

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
    /// `J`: group the process table by distributed job, or not.
    ToggleJobs,
    TogglePause,
    /// Tab: next GPU, then all GPUs.
    FocusNext,
    /// `1`-`9`: focus that GPU (by position); in the fleet overview, show that host.
    FocusGpu(u8),
    /// `h`, Backspace: back to the fleet overview.
    Overview,
    ResetPeaks,
    ToggleHelp,
    /// Move between the process table and the alerts list.
    TogglePane,
    Snapshot,
    /// `c`: give the spare rows to the chart or to the table.
    ToggleChart,
    /// `g`: fit the chart's and sparklines' y axis to the data, or show the whole GPU.
    ToggleScale,
    /// `-` (true) and `+`: the chart's and sparklines' span out and in, a minute to three days.
    Zoom(bool),
    /// A click on row `n` of the process table (an index into the rows shown).
    SelectRow(usize),
    /// A click on GPU `n`'s bar (by position): focus it, or show all when it has the focus.
    ClickGpu(u8),
    /// The mouse wheel over the table: move the selection by this many rows.
    Scroll(isize),
    /// Quit question of `gpumon run`: stop the command.
    StopRun,
    /// Quit question of `gpumon run`: leave the command running.
    LeaveRun,
    /// Ctrl-Z: suspend gpumon (the shell's `fg` brings it back).
    Suspend,
    /// Open the signal dialog for the selected process.
    Signal,
    /// The signal dialog's answer.
    SendSignal(Sig),
    /// Enter: in the fleet overview, show the selected host; in the alerts, open the selected
    /// alert whole; over an open alert, select its process.
    Enter,
    /// PgUp, PgDn: scroll an open alert by a page.
    PageUp,
    PageDown,
    /// The open alert's first row: what the view makes of a scrolling key or the wheel over an
    /// open alert, at the screen's size (`view::alert_view::scroll`).
    AlertTop(usize),
    /// A click on alert `n` of the alerts list (its position in the rows shown).
    SelectAlert(usize),
    /// The wheel over the alerts list: move the alert selection by this many.
    WheelAlerts(isize),
    /// `m`: show or hide the selected process's block map.
    MapPane,
    /// `M`: ask the selected process's probe for a map now.
    AskMap,
    /// `R`: turn the selected process's allocation recording on or off.
    ToggleRecording,
    /// `e`: export the selected process's full map in its framework's own format.
    Export,
}

/// The signals the signal dialog offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sig {
    Term,
    Int,
    Kill,
}

impl Sig {
    pub fn name(self) -> &'static str {
        match self {
            Sig::Term => "SIGTERM",
            Sig::Int => "SIGINT",
            Sig::Kill => "SIGKILL",
        }
    }
}
