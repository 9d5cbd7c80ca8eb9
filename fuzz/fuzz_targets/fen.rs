//! Any text parsed as a FEN: an error or a position, never a panic; a parsed position generates
//! its legal moves and survives a FEN round trip.
#![no_main]

use c960_common::{CastlingNotation, Position};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = Position::from_fen(text) {
        let _ = p.legal_moves();
        let again = p.to_fen(CastlingNotation::Shredder);
        let q = Position::from_fen(&again).expect("a FEN we print parses");
        assert_eq!(q.to_fen(CastlingNotation::Shredder), again);
    }
});
