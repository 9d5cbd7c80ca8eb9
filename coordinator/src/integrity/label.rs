//! Text that people chose and the pages show: worker names, engine names and versions, the
//! engine ids of analysis and self-play results, campaign names. One rule for what such a label
//! may hold ([`check_label`], used wherever one enters the store), and one way to show text
//! stored before the rule existed without letting it act on the page ([`inert`]).
//!
//! Refused: control characters (C0, DEL, C1), the line and paragraph separators, the
//! bidirectional controls (embeddings, overrides, isolates and marks), which reorder the text
//! around them: a worker named `\u{202E}gnp.exe` reads as `exe.png` and can reverse the
//! columns next to it on the leaderboard; and the invisible characters that print nothing
//! (zero-width space, word joiner and invisible operators, byte order mark, soft hyphen,
//! interlinear annotation marks), with which two labels that look alike differ: `alice` and
//! `al\u{200B}ice` on one leaderboard. The zero-width joiner and non-joiner stay: scripts and
//! emoji sequences need them.

use c960_common::error_code::ErrorCode;
use std::borrow::Cow;
use std::fmt;

/// Longest label accepted, in bytes: labels are stored with the worker and with every result.
pub const MAX_LABEL_BYTES: usize = 100;

/// Why a label is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelFault {
    /// Longer than [`MAX_LABEL_BYTES`].
    TooLong,
    /// A control character (Unicode category Cc: C0, DEL, C1).
    Control(char),
    /// U+2028 LINE SEPARATOR or U+2029 PARAGRAPH SEPARATOR.
    LineBreak(char),
    /// A bidirectional control: U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069.
    Bidi(char),
    /// A character that prints nothing: U+00AD, U+180E, U+200B, U+2060–U+2064, U+FEFF,
    /// U+FFF9–U+FFFB.
    Invisible(char),
}

impl LabelFault {
    /// Machine-readable: `bad_field` for the length (as before this rule), `bad_label` for a
    /// character.
    pub fn code(&self) -> ErrorCode {
        match self {
            LabelFault::TooLong => ErrorCode::BadField,
            _ => ErrorCode::BadLabel,
        }
    }
}

impl fmt::Display for LabelFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabelFault::TooLong => write!(f, "is longer than {MAX_LABEL_BYTES} bytes"),
            LabelFault::Control(c) => write!(f, "holds the control character U+{:04X}", *c as u32),
            LabelFault::LineBreak(c) => write!(f, "holds the line break U+{:04X}", *c as u32),
            LabelFault::Bidi(c) => write!(
                f,
                "holds the bidirectional control U+{:04X}, which reorders the text around it",
                *c as u32
            ),
            LabelFault::Invisible(c) => write!(
                f,
                "holds the invisible character U+{:04X}, which prints nothing",
                *c as u32
            ),
        }
    }
}

/// The fault of one character, if it has one.
pub fn char_fault(c: char) -> Option<LabelFault> {
    match c {
        '\u{061C}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}' => Some(LabelFault::Bidi(c)),
        '\u{2028}' | '\u{2029}' => Some(LabelFault::LineBreak(c)),
        '\u{00AD}'
        | '\u{180E}'
        | '\u{200B}'
        | '\u{2060}'..='\u{2064}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}' => Some(LabelFault::Invisible(c)),
        c if c.is_control() => Some(LabelFault::Control(c)),
        _ => None,
    }
}

/// A label as the store takes it: at most [`MAX_LABEL_BYTES`] bytes, no character with a
/// [`char_fault`]. (Whether it may be empty is the caller's rule.)
pub fn check_label(text: &str) -> Result<(), LabelFault> {
    if text.len() > MAX_LABEL_BYTES {
        return Err(LabelFault::TooLong);
    }
    match text.chars().find_map(char_fault) {
        Some(fault) => Err(fault),
        None => Ok(()),
    }
}

/// `text` with every character [`check_label`] refuses shown as its code point, `[U+202E]`,
/// except tab, line feed and carriage return, which are only white space in HTML. Safe on a
/// whole HTML document: the replacement holds no markup character, and the pages' own
/// templates hold none of these characters.
pub fn inert(text: &str) -> Cow<'_, str> {
    let acts = |c: char| !matches!(c, '\t' | '\n' | '\r') && char_fault(c).is_some();
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if acts(c) {
            out.push_str(&format!("[U+{:04X}]", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_character_class_is_refused_with_its_code_point() {
        assert_eq!(check_label("alice"), Ok(()));
        assert_eq!(check_label("Stockfish 17.1 (ç, 象棋, 👩‍💻)"), Ok(()));
        assert_eq!(check_label(""), Ok(()));
        let bidi = [
            '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}',
            '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
        ];
        for c in bidi {
            let fault = check_label(&format!("a{c}b")).unwrap_err();
            assert_eq!(fault, LabelFault::Bidi(c));
            assert_eq!(fault.code(), ErrorCode::BadLabel);
            assert!(fault.to_string().contains(&format!("U+{:04X}", c as u32)));
        }
        for c in [
            '\0', '\u{7}', '\t', '\n', '\r', '\u{1B}', '\u{7F}', '\u{85}', '\u{9F}',
        ] {
            assert_eq!(check_label(&format!("a{c}")), Err(LabelFault::Control(c)));
        }
        for c in ['\u{2028}', '\u{2029}'] {
            assert_eq!(check_label(&format!("{c}b")), Err(LabelFault::LineBreak(c)));
        }
        for c in [
            '\u{00AD}', '\u{180E}', '\u{200B}', '\u{2060}', '\u{2064}', '\u{FEFF}', '\u{FFF9}',
            '\u{FFFB}',
        ] {
            let fault = check_label(&format!("al{c}ice")).unwrap_err();
            assert_eq!(fault, LabelFault::Invisible(c));
            assert_eq!(fault.code(), ErrorCode::BadLabel);
        }
        // Neighbours of the refused ranges are fine (zero-width joiner: emoji sequences).
        for c in [
            '\u{061B}', '\u{200C}', '\u{200D}', '\u{2027}', '\u{202F}', '\u{2065}', '\u{206A}',
            '\u{00AC}', '\u{FFFC}',
        ] {
            assert_eq!(check_label(&c.to_string()), Ok(()), "U+{:04X}", c as u32);
        }
        let long = "x".repeat(MAX_LABEL_BYTES + 1);
        assert_eq!(check_label(&long), Err(LabelFault::TooLong));
        assert_eq!(LabelFault::TooLong.code(), ErrorCode::BadField);
        assert_eq!(check_label(&long[1..]), Ok(()));
    }

    #[test]
    fn stored_text_is_shown_inert() {
        assert!(matches!(inert("plain <b>"), Cow::Borrowed("plain <b>")));
        assert_eq!(inert("evil\u{202E}gnp.exe"), "evil[U+202E]gnp.exe");
        assert_eq!(
            inert("a\u{2066}b\u{0}c\u{2028}"),
            "a[U+2066]b[U+0000]c[U+2028]"
        );
        // White space of an HTML document stays.
        assert_eq!(inert("<p>\n\t\r</p>"), "<p>\n\t\r</p>");
        // Nothing left that acts: every refused character but white space is gone.
        let shown = inert("\u{202A}\u{200F}\u{1B}[31m");
        assert!(shown.chars().all(|c| char_fault(c).is_none()), "{shown}");
    }
}
