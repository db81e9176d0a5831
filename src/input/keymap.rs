//! The key table: what each key does, in the order the help overlay lists them.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{Action, Sig};

/// One line of the help overlay: the keys and what they do.
pub struct Binding {
    pub keys: &'static str,
    pub help: &'static str,
}

/// Every key gpumon understands; `map` below implements exactly these. Each help fits one line
/// of the overlay at 80 columns (58 characters), so the whole table shows at 80x24;
/// docs/guide/screen.md says the rest.
pub const KEYMAP: &[Binding] = &[
    Binding {
        keys: "q  Ctrl-C",
        help: "quit",
    },
    Binding {
        keys: "Up Down j k",
        help: "select a process, an alert, or an overview host",
    },
    Binding {
        keys: "/",
        help: "filter: PID (digits), command, user, job id; Enter applies",
    },
    Binding {
        keys: "Esc",
        help: "close an alert, the map or the prompt, or clear the filter",
    },
    Binding {
        keys: "f",
        help: "filter to the selected process's PID",
    },
    Binding {
        keys: "J",
        help: "group the table by distributed job: its ranks side by side",
    },
    Binding {
        keys: "o",
        help: "cycle the sort of the table or of the fleet's hosts",
    },
    Binding {
        keys: "p  Space",
        help: "pause / resume",
    },
    Binding {
        keys: "Tab  1-9",
        help: "focus the next GPU / GPU n (Tab past the last shows all)",
    },
    Binding {
        keys: "1-9  Enter",
        help: "fleet overview: show host n / the selected host",
    },
    Binding {
        keys: "h  Bksp  Esc",
        help: "back to the fleet overview (Esc once nothing else is open)",
    },
    Binding {
        keys: "a  Enter",
        help: "alerts: a moves there and back, Enter reads one whole",
    },
    Binding {
        keys: "PgUp PgDn",
        help: "scroll an open alert (Up Down too); Enter: its process",
    },
    Binding {
        keys: "K  F9",
        help: "signal the selected process (asks first: TERM, INT, KILL)",
    },
    Binding {
        keys: "c",
        help: "give the spare rows to the chart or to the process table",
    },
    Binding {
        keys: "g",
        help: "the chart's scale: fitted to the data / the whole GPU",
    },
    Binding {
        keys: "-  + =",
        help: "zoom the chart and sparklines out / in: 1 minute to 3 days",
    },
    Binding {
        keys: "mouse",
        help: "click selects a process, an alert or a GPU; wheel scrolls",
    },
    Binding {
        keys: "m  M R e",
        help: "block map of a probed process; M new, R record, e export",
    },
    Binding {
        keys: "r  s",
        help: "reset peaks / write a snapshot to --snapshot-dir",
    },
    Binding {
        keys: "Ctrl-Z",
        help: "suspend gpumon; the shell's fg brings it back",
    },
    Binding {
        keys: "?",
        help: "this help",
    },
];

/// The action for a key; `prompt` is true while the filter prompt is open.
pub fn map(key: KeyEvent, prompt: bool) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return match key.code {
            KeyCode::Char('c') => Some(Action::Quit),
            KeyCode::Char('z') => Some(Action::Suspend),
            _ => None,
        };
    }
    if prompt {
        return match key.code {
            KeyCode::Enter => Some(Action::PromptApply),
            KeyCode::Esc => Some(Action::Escape),
            KeyCode::Backspace => Some(Action::PromptBackspace),
            KeyCode::Char(c) => Some(Action::PromptChar(c)),
            _ => None,
        };
    }
    Some(match key.code {
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::Char('/') => Action::FilterPrompt,
        KeyCode::Esc => Action::Escape,
        KeyCode::Char('f') => Action::FilterSelected,
        KeyCode::Char('o') => Action::CycleSort,
        KeyCode::Char('J') => Action::ToggleJobs,
        KeyCode::Char('p' | ' ') => Action::TogglePause,
        KeyCode::Tab => Action::FocusNext,
        KeyCode::Char(c @ '1'..='9') => Action::FocusGpu(c as u8 - b'1'),
        KeyCode::Char('a') => Action::TogglePane,
        KeyCode::Char('h') | KeyCode::Backspace => Action::Overview,
        KeyCode::Char('r') => Action::ResetPeaks,
        KeyCode::Char('m') => Action::MapPane,
        KeyCode::Char('M') => Action::AskMap,
        KeyCode::Char('R') => Action::ToggleRecording,
        KeyCode::Char('e') => Action::Export,
        KeyCode::Char('c') => Action::ToggleChart,
        KeyCode::Char('g') => Action::ToggleScale,
        KeyCode::Char('-') => Action::Zoom(true),
        KeyCode::Char('+' | '=') => Action::Zoom(false),
        KeyCode::Char('s') => Action::Snapshot,
        KeyCode::Char('?') => Action::ToggleHelp,
        KeyCode::Char('K') | KeyCode::F(9) => Action::Signal,
        KeyCode::Enter => Action::Enter,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown => Action::PageDown,
        _ => return None,
    })
}

/// The action for a key while `gpumon run` asks whether to stop its command (the footer names
/// these keys): `k` stop it, `l` leave it running, Esc stay.
pub fn map_answer(key: KeyEvent) -> Option<Action> {
    if key.kind == KeyEventKind::Release
        || !key.modifiers.difference(KeyModifiers::SHIFT).is_empty()
    {
        return None;
    }
    match key.code {
        KeyCode::Char('k' | 'K') => Some(Action::StopRun),
        KeyCode::Char('l' | 'L') => Some(Action::LeaveRun),
        KeyCode::Esc => Some(Action::Escape),
        _ => None,
    }
}

/// The action for a key while the signal dialog is open: `t` SIGTERM, `i` SIGINT, `9`
/// SIGKILL, Esc cancels; nothing else (a stray key never sends a signal).
pub fn map_signal(key: KeyEvent) -> Option<Action> {
    if key.kind == KeyEventKind::Release
        || !key.modifiers.difference(KeyModifiers::SHIFT).is_empty()
    {
        return None;
    }
    match key.code {
        KeyCode::Char('t' | 'T') => Some(Action::SendSignal(Sig::Term)),
        KeyCode::Char('i' | 'I') => Some(Action::SendSignal(Sig::Int)),
        KeyCode::Char('9') => Some(Action::SendSignal(Sig::Kill)),
        KeyCode::Esc => Some(Action::Escape),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn prompt_takes_characters_that_are_keys_elsewhere() {
        assert_eq!(map(key(KeyCode::Char('q')), false), Some(Action::Quit));
        assert_eq!(
            map(key(KeyCode::Char('q')), true),
            Some(Action::PromptChar('q'))
        );
        assert_eq!(
            map(
                KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
                true
            ),
            Some(Action::Quit)
        );
        assert_eq!(
            map(key(KeyCode::Char('3')), false),
            Some(Action::FocusGpu(2))
        );
    }

    #[test]
    fn the_signal_dialog_takes_t_i_9_and_esc_only() {
        assert_eq!(
            map_signal(key(KeyCode::Char('t'))),
            Some(Action::SendSignal(Sig::Term))
        );
        assert_eq!(
            map_signal(key(KeyCode::Char('9'))),
            Some(Action::SendSignal(Sig::Kill))
        );
        assert_eq!(map_signal(key(KeyCode::Esc)), Some(Action::Escape));
        assert_eq!(map_signal(key(KeyCode::Char('K'))), None);
        assert_eq!(map_signal(key(KeyCode::Enter)), None);
        assert_eq!(map(key(KeyCode::F(9)), false), Some(Action::Signal));
        assert_eq!(map(key(KeyCode::Char('k')), false), Some(Action::Up));
        let ctrl_z = KeyEvent::new(KeyCode::Char('z'), KeyModifiers::CONTROL);
        assert_eq!(map(ctrl_z, false), Some(Action::Suspend));
    }

    #[test]
    fn the_run_question_takes_k_l_and_esc_only() {
        assert_eq!(map_answer(key(KeyCode::Char('k'))), Some(Action::StopRun));
        assert_eq!(map_answer(key(KeyCode::Char('l'))), Some(Action::LeaveRun));
        assert_eq!(map_answer(key(KeyCode::Esc)), Some(Action::Escape));
        assert_eq!(map_answer(key(KeyCode::Char('q'))), None);
        assert_eq!(
            map_answer(KeyEvent::new(KeyCode::Char('k'), KeyModifiers::CONTROL)),
            None
        );
    }
}
