//! Text that comes from outside Walkie (a tool server's names and errors, a provider's codes)
//! on its way to the status line, a card or a log line.
//!
//! Why: such text is someone else's, and the window shows it in Walkie's voice. Line breaks would
//! break a one-line status; bidirectional controls can make "Allow it?" read as something else
//! (or hide what follows them); and a server may send megabytes. So it is made one line of
//! plain characters, at most a bounded length, before anyone reads it.

/// The most characters of outside text a sentence carries.
pub const MAX_OUTSIDE_TEXT_CHARS: usize = 300;

/// `text` as one line of plain characters: control characters become spaces (line breaks and
/// tabs included), bidirectional and zero-width controls go, runs of spaces become one, and
/// past `max_chars` the rest is cut, marked "…".
pub fn outside_text(text: &str, max_chars: usize) -> String {
    let mut line = String::with_capacity(text.len().min(max_chars * 4));
    let mut kept = 0;
    let mut space_pending = false;
    for character in text.chars() {
        if is_invisible_control(character) {
            continue;
        }
        if character.is_control() || character.is_whitespace() {
            space_pending = !line.is_empty();
            continue;
        }
        if kept + usize::from(space_pending) + 1 > max_chars {
            line.push('…');
            return line;
        }
        if std::mem::take(&mut space_pending) {
            line.push(' ');
            kept += 1;
        }
        line.push(character);
        kept += 1;
    }
    line
}

/// Characters that change how text around them is shown without showing themselves: the
/// bidirectional marks, embeddings, overrides and isolates, and the zero-width ones.
fn is_invisible_control(character: char) -> bool {
    matches!(
        character,
        '\u{061C}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_and_tabs_become_single_spaces_and_the_ends_are_trimmed() {
        assert_eq!(
            outside_text("\n  disk full\r\n\tat /tmp \n", 100),
            "disk full at /tmp"
        );
    }

    #[test]
    fn bidirectional_and_zero_width_controls_are_dropped() {
        // "echo" with an override that would show "Allow" reversed after it.
        assert_eq!(
            outside_text("echo\u{202E}wolla\u{202C}\u{200B}, on test\u{2066}", 100),
            "echowolla, on test"
        );
        assert_eq!(outside_text("\u{061C}\u{FEFF}a\u{200F}b", 100), "ab");
    }

    #[test]
    fn text_past_the_bound_is_cut_on_a_character_and_marked() {
        let long = "é".repeat(1_000);
        let cut = outside_text(&long, 10);
        assert_eq!(cut, format!("{}…", "é".repeat(10)));
        assert_eq!(outside_text("one two three", 7), "one two…");
        assert_eq!(outside_text("exactly", 7), "exactly");
    }
}
