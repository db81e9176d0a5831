//! A paste (the terminal's bracketed paste) is text, never keys: into an open text prompt its
//! characters go as typed ones, line breaks and other controls dropped, at most what the prompt
//! holds; anywhere else it does nothing, so a pasted `x\nq` or `…\nK9` presses no key.

use super::Action;

/// The most characters a text prompt holds (the filter's).
pub const PROMPT_MAX: usize = 64;

/// The actions a paste of `text` makes: typed characters while a text prompt is open (`prompt`),
/// none otherwise (a question, the signal dialog or the screen itself takes no paste).
pub fn map_paste(text: &str, prompt: bool) -> Vec<Action> {
    if !prompt {
        return Vec::new();
    }
    text.chars()
        .filter(|c| !c.is_control())
        .take(PROMPT_MAX)
        .map(Action::PromptChar)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paste_is_text_in_the_prompt_and_nothing_elsewhere() {
        assert_eq!(
            map_paste("x\nq", true),
            [Action::PromptChar('x'), Action::PromptChar('q')]
        );
        assert_eq!(
            map_paste("a\r\n\x1b[2J?", true).len(),
            5,
            "ESC dropped, the rest text"
        );
        assert!(map_paste("x\nq", false).is_empty());
        assert!(map_paste("\nK9", false).is_empty());
        assert_eq!(map_paste(&"y".repeat(10_000), true).len(), PROMPT_MAX);
    }
}
