//! What workunits a new campaign consists of, decided here in pure code: the store only inserts
//! them (`store/sql/campaigns.rs`), all in one transaction.

use c960_common::{CastlingNotation, StartPosition};

use super::{CampaignWork, NewCampaign};
use crate::work::transitioner::{self, QuorumPolicy, Transition};

/// One workunit of a new campaign, as the store inserts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NewWorkunit {
    /// A Chess960 start, whole: its number, FEN and, for perft, the published total where one is
    /// known (`crate::work::known`), which anchors a value without a trusted worker.
    Start {
        /// Scharnagl number.
        sp: u16,
        /// Shredder-FEN.
        fen: String,
        /// The published perft at the campaign's depth, for perft campaigns.
        known_nodes: Option<u64>,
    },
    /// A distinct position `split_ply` plies below a Chess960 start (issue 5's split).
    Split {
        /// The start it comes from.
        origin_sp: u16,
        /// Shredder-FEN, move counters normalised.
        fen: String,
        /// The remaining depth.
        depth: u32,
        /// Paths from the start that reach it.
        multiplicity: u64,
        /// Its paths per root move of the start, as JSON pairs (`[["e2e4", 3], …]`).
        first_moves: String,
    },
    /// A start of another family: the FEN is all a worker needs; the number is kept for exports.
    Family {
        /// The start's number in its family.
        number: u32,
        /// Its FEN.
        fen: String,
    },
}

impl NewCampaign {
    /// The replicas each new workunit needs at first: the transitioner's answer for a workunit
    /// with no replica yet.
    pub fn needed(&self) -> u32 {
        let policy = QuorumPolicy {
            quorum: self.quorum,
            max_results: self.max_results,
        };
        match transitioner::transition(policy, &[]) {
            Transition::Pending { needed } => needed,
            _ => self.quorum,
        }
    }

    /// Every workunit of this campaign, start by start (a split start's sub-positions are
    /// enumerated when it is reached, so a large split campaign is never held whole).
    pub fn workunits(&self) -> impl Iterator<Item = Result<NewWorkunit, String>> + '_ {
        let starts = self.positions.iter().flat_map(move |&sp| {
            let units: Vec<Result<NewWorkunit, String>> = match self.start_units(sp) {
                Ok(units) => units.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            };
            units
        });
        let family = self.numbers.iter().map(move |&n| {
            let start = self.family.start(u64::from(n)).map_err(|e| e.to_string())?;
            Ok(NewWorkunit::Family {
                number: n,
                fen: start.fen(),
            })
        });
        starts.chain(family)
    }

    /// The workunits of one Chess960 start: itself, or its split sub-positions.
    fn start_units(&self, sp: u16) -> Result<Vec<NewWorkunit>, String> {
        let start = StartPosition::new(u32::from(sp)).map_err(|e| e.to_string())?;
        let (depth, split_ply) = (self.work.depth(), self.work.split_ply());
        if split_ply == 0 {
            let known_nodes = match self.work {
                CampaignWork::Perft { depth, .. } => crate::work::known::perft(sp, depth),
                _ => None,
            };
            return Ok(vec![NewWorkunit::Start {
                sp,
                fen: start.position().to_fen(CastlingNotation::Shredder),
                known_nodes,
            }]);
        }
        c960_common::split::split(&start.position(), split_ply)
            .into_iter()
            .map(|node| {
                let moves: Vec<(&String, &u64)> = node.by_first_move.iter().collect();
                Ok(NewWorkunit::Split {
                    origin_sp: sp,
                    depth: depth - split_ply,
                    multiplicity: node.multiplicity,
                    first_moves: serde_json::to_string(&moves).map_err(|e| e.to_string())?,
                    fen: node.fen,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_campaign_is_its_starts_or_their_split_positions() {
        let whole = NewCampaign::new(5, 2, None, vec![518, 0]).unwrap();
        let units: Vec<_> = whole.workunits().map(Result::unwrap).collect();
        assert_eq!(units.len(), 2);
        let NewWorkunit::Start {
            sp,
            fen,
            known_nodes,
        } = &units[0]
        else {
            panic!("{units:?}");
        };
        assert_eq!((*sp, *known_nodes), (518, Some(4_865_609)));
        assert!(fen.starts_with("rnbqkbnr/"), "{fen}");
        assert_eq!(whole.needed(), 2);

        let split = whole.clone().split_at(2).unwrap();
        let units: Vec<_> = split.workunits().map(Result::unwrap).collect();
        let of_518: Vec<_> = units
            .iter()
            .filter_map(|u| match u {
                NewWorkunit::Split {
                    origin_sp: 518,
                    depth,
                    multiplicity,
                    ..
                } => Some((*depth, *multiplicity)),
                _ => None,
            })
            .collect();
        // 400 two-ply paths from the classical start, no transposition yet.
        assert_eq!(of_518.len(), 400);
        assert!(of_518.iter().all(|&(d, m)| d == 3 && m == 1));
    }
}
