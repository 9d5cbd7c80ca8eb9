//! c960-common: the pure core shared by the coordinator and the worker.
//!
//! Rules, bitboards, legal move generation, perft, Scharnagl numbering, FEN, and (later) the wire
//! types and result digests. No async runtime and no I/O live here, so both programs agree on
//! rules and protocol by construction.
//!
//! The path from text to a position always goes through [`Setup`] → [`Position::from_setup`],
//! which checks every rule; a [`Position`] is legal by construction.
//!
//! # Examples
//!
//! From a Scharnagl number to a position to its perft, with and without a hash table:
//!
//! ```
//! use c960_common::{PerftEngine, PerftOptions, StartPosition, perft};
//!
//! let pos = StartPosition::new(518)?.position();
//! assert_eq!(perft(&pos, 3), 8_902);
//! let engine = PerftEngine::new(PerftOptions::default());
//! assert_eq!(engine.perft(&pos, 5), 4_865_609);
//! # Ok::<(), c960_common::StartPositionError>(())
//! ```

#![warn(missing_docs)]

pub mod attacks;
pub mod balance;
pub mod chess_move;
pub mod codec;
pub mod digest;
pub mod draw;
pub mod epd;
pub mod error_code;
pub mod family;
pub mod fen;
pub mod game;
pub mod movegen;
pub mod perft;
pub mod position;
pub mod search;
pub mod split;
pub mod startpos;
pub mod text;
pub mod types;
pub mod uci;
pub mod wait;
pub mod wire;
pub mod zobrist;

pub use chess_move::{Move, MoveKind};
pub use fen::{CastlingNotation, FenError};
pub use movegen::{MoveBatch, MoveList};
pub use perft::{PerftEngine, PerftOptions, PerftTable, divide, perft};
pub use position::{Position, PositionError, Setup};
pub use startpos::{Scharnagl, StartPosition, StartPositionError};
pub use types::{Bitboard, Color, Piece, Role, Square};
