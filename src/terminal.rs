//! The only code that changes the terminal: raw mode, the alternate screen, the cursor, mouse
//! capture, bracketed paste (a paste arrives as one text event, never as keys), and putting all
//! of it back on quit, on error, on a panic in any thread, and on signals.

use std::io::{self, BufWriter, Stdout, stdout};

use crossterm::cursor::{Hide, Show};
use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};

/// A frame's escapes are gathered in memory and written with one `write` when ratatui flushes
/// the frame: the standard output's own line buffer wrote them 1 KiB at a time, through a lock
/// taken for every escape.
pub type Tui = Terminal<CrosstermBackend<BufWriter<Stdout>>>;

/// Room for a whole frame's escapes (a 200x50 frame redrawn in full is about 40 KB).
const FRAME_BUFFER: usize = 64 * 1024;

/// Owns the terminal while the screen runs; dropping it restores the terminal.
pub struct Guard {
    pub terminal: Tui,
}

/// Enters raw mode and the alternate screen (capturing the mouse when `mouse` is on), and makes
/// any panic restore the terminal first.
pub fn enter(mouse: bool) -> io::Result<Guard> {
    install_panic_hook();
    enable_raw_mode()?;
    let guard_on_error = RestoreOnDrop;
    execute!(stdout(), EnterAlternateScreen, Hide, EnableBracketedPaste)?;
    if mouse {
        execute!(stdout(), EnableMouseCapture)?;
    }
    // A fixed viewport, resized on the terminal's resize events (`app`): a full-screen one asks
    // the terminal its size before every frame (crossterm opens /dev/tty for it each time).
    let (width, height) = crossterm::terminal::size()?;
    let viewport = Viewport::Fixed(Rect::new(0, 0, width, height));
    let terminal = Terminal::with_options(
        CrosstermBackend::new(BufWriter::with_capacity(FRAME_BUFFER, stdout())),
        TerminalOptions { viewport },
    )?;
    std::mem::forget(guard_on_error);
    Ok(Guard { terminal })
}

/// Cooked mode, main screen, cursor shown, mouse released, bracketed paste off. Safe to call more than once (and
/// without the mouse captured: terminals ignore a release they did not need); errors are
/// ignored because the terminal may already be gone (a dropped SSH link).
pub fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(
        stdout(),
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        Show
    );
}

/// Ctrl-Z: puts the terminal back, stops gpumon with SIGTSTP as the terminal's own Ctrl-Z would
/// (the shell takes over), and once continued (`fg`) sets the screen up again; the caller then
/// redraws all of it. The mouse is captured again when `mouse` is on.
pub fn suspend(mouse: bool) -> io::Result<()> {
    use rustix::process::{Signal, getpid, kill_process};
    restore();
    // The stop takes effect before `kill` returns: this line runs again after SIGCONT.
    kill_process(getpid(), Signal::TSTP)?;
    enable_raw_mode()?;
    execute!(stdout(), EnterAlternateScreen, Hide, EnableBracketedPaste)?;
    if mouse {
        execute!(stdout(), EnableMouseCapture)?;
    }
    Ok(())
}

impl Drop for Guard {
    fn drop(&mut self) {
        // What a frame left unwritten goes to the alternate screen, before it is left.
        let _ = ratatui::backend::Backend::flush(self.terminal.backend_mut());
        restore();
    }
}

struct RestoreOnDrop;

impl Drop for RestoreOnDrop {
    fn drop(&mut self) {
        restore();
    }
}

/// A panic anywhere (the sampler task included) restores the terminal, prints the panic, and
/// ends the program with status 101: a half-working screen in cooked mode would be worse.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
            std::process::exit(101);
        }));
    });
}
