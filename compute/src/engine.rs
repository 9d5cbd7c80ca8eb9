//! The analysis engines a worker can drive: the built-in searcher, or an external UCI engine
//! process, behind one [`Engine`] type shared by `c960-worker analyse` and the work loop.

use std::time::Duration;

use anyhow::Result;
use c960_common::Position;
use c960_common::search::{self, Analysis, SearchLimits};
use c960_common::wire::{AnalysisResult, DepthRecord};

use crate::uci_engine::{UciCommand, UciConfig, UciEngine};

/// The engine that answers: the built-in searcher or an external UCI process.
pub enum Engine {
    /// [`search::analyse`] with this table size in MiB.
    Builtin {
        /// Transposition-table size.
        hash_mib: usize,
    },
    /// A running UCI engine.
    Uci(UciEngine),
}

impl Engine {
    /// Starts the engine the arguments ask for.
    pub fn start(uci: Option<&UciCommand>, hash_mib: usize, timeout: Duration) -> Result<Engine> {
        match uci {
            None => Ok(Engine::Builtin { hash_mib }),
            Some(command) => {
                let config = UciConfig {
                    hash_mib,
                    // A healthy engine answers the handshake at once; a search may take long.
                    handshake_timeout: timeout.min(Duration::from_secs(30)),
                    search_timeout: timeout,
                };
                Ok(Engine::Uci(UciEngine::start(command, config)?))
            }
        }
    }

    /// The engine id recorded with each result.
    pub fn id(&self) -> String {
        match self {
            Engine::Builtin { .. } => search::ENGINE_ID.to_string(),
            Engine::Uci(e) => e.id(),
        }
    }

    /// Searches `pos` to `depth` plies; the score is from White's point of view.
    pub fn analyse(&mut self, pos: &Position, depth: u32) -> Result<Analysis> {
        match self {
            Engine::Builtin { hash_mib } => Ok(search::analyse(
                pos,
                &SearchLimits {
                    depth,
                    hash_mib: *hash_mib,
                },
            )),
            Engine::Uci(e) => e.analyse(pos, depth),
        }
    }
}

/// The wire form of an analysis: moves in UCI (king-takes-rook castling), scores from White's
/// point of view, and the engine id that the coordinator uses to keep quorums single-engine.
pub fn to_wire(a: &Analysis, engine_id: &str) -> AnalysisResult {
    AnalysisResult {
        score_cp: a.score.cp(),
        mate: a.score.mate(),
        best_move: a.best_move.map(|m| m.to_string()),
        pv: a.pv.iter().map(|m| m.to_string()).collect(),
        nodes: a.nodes,
        wdl: a.wdl.map(wdl_per_mille),
        engine_id: engine_id.to_string(),
        depths: a
            .depths
            .iter()
            .map(|d| DepthRecord {
                depth: d.depth,
                score_cp: d.score.cp(),
                mate: d.score.mate(),
                wdl: d.wdl.map(wdl_per_mille),
                nodes: d.nodes,
            })
            .collect(),
    }
}

fn wdl_per_mille(w: c960_common::search::Wdl) -> [u16; 3] {
    [w.win, w.draw, w.loss].map(|v| u16::try_from(v).unwrap_or(u16::MAX))
}
