//! Campaign definitions: position lists such as `0-9,518`, reproducible samples of a family's
//! starts, and what a new campaign holds.

use c960_common::family::Family;
use c960_common::wire::AnalysisEngine;
use c960_common::{perft, search};
use serde::{Deserialize, Serialize};

use crate::model::CampaignKind;
use crate::work::sizing::{self, Estimate};

mod starts;
mod workunits;

pub use starts::{
    MAX_WHOLE_FAMILY, format_numbers, format_positions, parse_numbers, parse_positions,
    sample_numbers, select_starts,
};
pub use workunits::NewWorkunit;

/// The table size of every analysis workunit, in MiB. Fixed per campaign because it is part of
/// the reproducibility contract: replicas searched with different tables may differ.
pub const ANALYSIS_HASH_MIB: u32 = search::DEFAULT_HASH_MIB as u32;

pub use crate::work::sizing::MAX_SPLIT_PLY;

/// What a campaign computes, with what only that kind has (fishnet's `enum Work`): the one
/// place a campaign's kind is decided. Every other view of it — the stored kind and workunit
/// kind codes, the exports' `kind`, the pages — is read from this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CampaignWork {
    /// Perft of each start to `depth`, split at `split_ply` (0: one workunit per start).
    Perft {
        /// Depth in plies, 1..=[`perft::MAX_DEPTH`].
        depth: u32,
        /// Split each start position at this ply, below the depth and at most
        /// [`MAX_SPLIT_PLY`] (Chess960 only).
        split_ply: u32,
    },
    /// A fixed-depth search of each start.
    Analysis {
        /// The engine kind every replica is searched with.
        engine: AnalysisEngine,
        /// Search depth in plies, 1..=[`search::MAX_DEPTH`].
        depth: u32,
    },
    /// Self-play games from each start, the engine against itself.
    SelfPlay {
        /// The engine kind that plays.
        engine: AnalysisEngine,
        /// Games per workunit and nodes per move.
        budget: SelfPlayBudget,
    },
}

impl CampaignWork {
    /// Perft, analysis or self-play, as stored and exported.
    pub fn kind(self) -> CampaignKind {
        match self {
            CampaignWork::Perft { .. } => CampaignKind::Perft,
            CampaignWork::Analysis { .. } => CampaignKind::Analysis,
            CampaignWork::SelfPlay { .. } => CampaignKind::SelfPlay,
        }
    }

    /// The perft or search depth (0 for self-play, which has a budget instead).
    pub fn depth(self) -> u32 {
        match self {
            CampaignWork::Perft { depth, .. } | CampaignWork::Analysis { depth, .. } => depth,
            CampaignWork::SelfPlay { .. } => 0,
        }
    }

    /// The split ply (0 unless a split perft campaign).
    pub fn split_ply(self) -> u32 {
        match self {
            CampaignWork::Perft { split_ply, .. } => split_ply,
            _ => 0,
        }
    }

    /// The engine kind of an analysis or self-play campaign.
    pub fn engine(self) -> Option<AnalysisEngine> {
        match self {
            CampaignWork::Perft { .. } => None,
            CampaignWork::Analysis { engine, .. } | CampaignWork::SelfPlay { engine, .. } => {
                Some(engine)
            }
        }
    }

    /// A self-play campaign's budget.
    pub fn self_play(self) -> Option<SelfPlayBudget> {
        match self {
            CampaignWork::SelfPlay { budget, .. } => Some(budget),
            _ => None,
        }
    }

    /// The bounds of each kind: a perft or search depth in its range, a self-play budget in the
    /// worker's limits. The split ply is checked with the starts ([`NewCampaign::split_at`]).
    pub fn check(self) -> Result<CampaignWork, String> {
        let depth_in = |depth: u32, max: u32, what: &str| {
            at_least_one_ply(depth)?;
            match depth {
                d if d > max => Err(format!("{what}depth {d} is out of range 1..{max}")),
                _ => Ok(()),
            }
        };
        match self {
            CampaignWork::Perft { depth, .. } => depth_in(depth, perft::MAX_DEPTH, "")?,
            CampaignWork::Analysis { depth, .. } => {
                depth_in(depth, search::MAX_DEPTH, "analysis ")?
            }
            CampaignWork::SelfPlay { budget, .. } => {
                if budget.games == 0 || budget.games > MAX_SELF_PLAY_GAMES {
                    return Err(format!(
                        "games {} is out of range 1..{MAX_SELF_PLAY_GAMES}",
                        budget.games
                    ));
                }
                if budget.nodes == 0 || budget.nodes > MAX_SELF_PLAY_NODES {
                    return Err(format!(
                        "nodes per move {} is out of range 1..{MAX_SELF_PLAY_NODES}",
                        budget.nodes
                    ));
                }
            }
        }
        Ok(self)
    }
}

/// A perft or search depth's lower bound, whatever the kind.
fn at_least_one_ply(depth: u32) -> Result<(), String> {
    match depth {
        0 => Err("depth 0: a campaign searches or counts at least one ply".into()),
        _ => Ok(()),
    }
}

/// A campaign to create: what it computes over which starts, and how it is validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewCampaign {
    /// What it computes.
    pub work: CampaignWork,
    /// Agreeing results from distinct workers needed per workunit.
    pub quorum: u32,
    /// Results per workunit after which it fails without a quorum.
    pub max_results: u32,
    /// Chess960 start positions, sorted and distinct (empty for other families).
    pub positions: Vec<u16>,
    /// The family of the start positions.
    pub family: Family,
    /// Start numbers of another family, sorted and distinct (empty for Chess960).
    pub numbers: Vec<u32>,
    /// The operator's name for it (not part of its identity).
    pub name: Option<String>,
    /// Scheduling priority (higher served first; default 0).
    pub priority: i64,
}

/// What a self-play campaign plays per start: games per workunit, nodes per engine move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelfPlayBudget {
    /// Games per workunit (one workunit per start), 1..=[`MAX_SELF_PLAY_GAMES`].
    pub games: u32,
    /// `go nodes` of every engine move, 1..=[`MAX_SELF_PLAY_NODES`].
    pub nodes: u64,
}

/// The most games per self-play workunit (the worker's limit).
pub const MAX_SELF_PLAY_GAMES: u32 = c960_compute::selfplay::MAX_GAMES;

/// The largest node budget per move (the worker's limit).
pub const MAX_SELF_PLAY_NODES: u64 = c960_compute::selfplay::MAX_NODES_PER_MOVE;

impl NewCampaign {
    /// The campaign computing `work` over start numbers of `family` (the workunits of families
    /// other than Chess960 carry their start as a FEN, so workers compute them without knowing
    /// the family; the store keeps the family and number for the exports). Checks the work's
    /// bounds ([`CampaignWork::check`]) and the split against the family; the cap defaults to
    /// quorum + 2 (room for two disagreements).
    pub fn of(
        work: CampaignWork,
        family: Family,
        numbers: Vec<u32>,
        quorum: u32,
        max_results: Option<u32>,
    ) -> Result<NewCampaign, String> {
        // split_at checks the work's bounds, then the split against the family.
        NewCampaign::unchecked(work, family, numbers, quorum, max_results)?
            .split_at(work.split_ply())
    }

    /// A Chess960 perft campaign, unsplit; [`NewCampaign::analyse`] makes it an analysis, whose
    /// depths go deeper, so the perft depth's upper bound is checked by
    /// [`NewCampaign::split_at`].
    pub fn new(
        depth: u32,
        quorum: u32,
        max_results: Option<u32>,
        positions: Vec<u16>,
    ) -> Result<NewCampaign, String> {
        let numbers = positions.into_iter().map(u32::from).collect();
        NewCampaign::in_family(Family::Chess960, depth, quorum, max_results, numbers)
    }

    /// [`NewCampaign::new`] over start numbers of any family.
    pub fn in_family(
        family: Family,
        depth: u32,
        quorum: u32,
        max_results: Option<u32>,
        numbers: Vec<u32>,
    ) -> Result<NewCampaign, String> {
        at_least_one_ply(depth)?;
        let work = CampaignWork::Perft {
            depth,
            split_ply: 0,
        };
        NewCampaign::unchecked(work, family, numbers, quorum, max_results)
    }

    /// The campaign with the quorum, cap and starts checked, the work as given.
    fn unchecked(
        work: CampaignWork,
        family: Family,
        numbers: Vec<u32>,
        quorum: u32,
        max_results: Option<u32>,
    ) -> Result<NewCampaign, String> {
        if quorum == 0 || quorum > 16 {
            return Err(format!("quorum {quorum} is out of range 1..16"));
        }
        let max_results = max_results.unwrap_or(quorum + 2);
        if max_results < quorum {
            return Err(format!(
                "max results {max_results} is below the quorum {quorum}"
            ));
        }
        if numbers.is_empty() {
            return Err("no start positions".into());
        }
        let (positions, numbers) = if family == Family::Chess960 {
            (numbers.into_iter().map(|n| n as u16).collect(), Vec::new())
        } else {
            (Vec::new(), numbers)
        };
        Ok(NewCampaign {
            work,
            quorum,
            max_results,
            positions,
            family,
            numbers,
            name: None,
            priority: 0,
        })
    }

    /// The canonical text of the campaign's position list: `0-9,518` for Chess960, the numbers
    /// of another family the same way (its family is stored beside it).
    pub fn positions_text(&self) -> String {
        if self.family == Family::Chess960 {
            format_positions(&self.positions)
        } else {
            format_numbers(&self.numbers)
        }
    }

    /// Perft, analysis or self-play.
    pub fn kind(&self) -> CampaignKind {
        self.work.kind()
    }

    /// What sizing needs to know of this campaign.
    pub fn shape(&self) -> sizing::Shape {
        sizing::Shape {
            starts: (self.positions.len() + self.numbers.len()) as u64,
            depth: self.work.depth(),
            split_ply: self.work.split_ply(),
            perft: self.kind() == CampaignKind::Perft,
            quorum: self.quorum,
        }
    }

    /// The estimate of this campaign as it is specified (its split ply already chosen).
    pub fn estimate(&self) -> Estimate {
        sizing::estimate(self.shape())
    }

    /// Turns an unsplit perft campaign into an analysis campaign searched with `engine` to the
    /// same depth.
    pub fn analyse(mut self, engine: AnalysisEngine) -> Result<NewCampaign, String> {
        let CampaignWork::Perft {
            depth,
            split_ply: 0,
        } = self.work
        else {
            return Err("only an unsplit perft campaign becomes an analysis".into());
        };
        self.work = CampaignWork::Analysis { engine, depth }.check()?;
        Ok(self)
    }

    /// Splits each start position's perft at `ply` with transposition merging
    /// ([`c960_common::split`]): one workunit per distinct position, depth − ply deep.
    pub fn split_at(mut self, ply: u32) -> Result<NewCampaign, String> {
        let CampaignWork::Perft { depth, .. } = self.work.check()? else {
            return match ply {
                0 => Ok(self),
                _ => Err("--split-ply applies to perft campaigns only".into()),
            };
        };
        if ply > 0 && self.family != Family::Chess960 {
            return Err(format!(
                "split campaigns are for chess960; a {} campaign needs --split-ply 0",
                self.family
            ));
        }
        if ply > 0 && (ply >= depth || ply > MAX_SPLIT_PLY) {
            return Err(format!(
                "split ply {ply} must be below the depth {depth} and at most {MAX_SPLIT_PLY}"
            ));
        }
        self.work = CampaignWork::Perft {
            depth,
            split_ply: ply,
        };
        Ok(self)
    }

    /// Splits at `choice`: a ply number, or `auto` for [`sizing::auto_split_ply`] (never for
    /// analysis or self-play).
    pub fn split_by(self, choice: &str) -> Result<NewCampaign, String> {
        let ply = match (choice, self.work) {
            ("auto", CampaignWork::Perft { depth, .. }) => sizing::auto_split_ply(depth),
            ("auto", _) => 0,
            (n, _) => n
                .parse()
                .map_err(|_| format!("--split-ply {n:?}: use a ply number or auto"))?,
        };
        self.split_at(ply)
    }

    /// The same campaign with this name (checked by [`check_name`]).
    pub fn named(mut self, name: Option<String>) -> Result<NewCampaign, String> {
        self.name = name.map(|n| check_name(&n)).transpose()?;
        Ok(self)
    }

    /// The same campaign with this scheduling priority.
    pub fn with_priority(mut self, priority: i64) -> NewCampaign {
        self.priority = priority;
        self
    }
}

/// A campaign as the operator asks for it, on the command line (`campaign add`) or over HTTP
/// (`POST /api/v1/admin/campaigns`, this struct as JSON): the same fields, defaults and checks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignRequest {
    /// Perft depth, or search depth of an analysis (not given for self-play).
    #[serde(default)]
    pub depth: u32,
    /// `perft` (default), `analysis` or `selfplay`.
    pub kind: Option<Named<CampaignKind>>,
    /// Analysis and self-play: `builtin` (default) or `uci`.
    pub engine: Option<Named<AnalysisEngine>>,
    /// Self-play: games per start (one workunit each).
    pub games: Option<u32>,
    /// Self-play: nodes per engine move (`go nodes`).
    pub nodes: Option<u64>,
    /// Perft only: a ply number (0: no split) or `auto` (default).
    pub split_ply: Option<SplitPly>,
    /// Agreeing results needed (default 2).
    pub quorum: Option<u32>,
    /// Results after which a workunit fails (default quorum + 2).
    pub max_results: Option<u32>,
    /// Start numbers, e.g. `0-9,518` (default: the whole family, up to 5040 starts).
    pub positions: Option<String>,
    /// The family the numbers are in (default `chess960`; docs/families.md).
    pub family: Option<String>,
    /// A reproducible sample of this many starts instead of `positions`.
    pub sample: Option<u32>,
    /// The seed of `sample` (default 0).
    pub seed: Option<u64>,
    /// The operator's name for the campaign.
    pub name: Option<String>,
    /// Scheduling priority, higher first (default 0).
    pub priority: Option<i64>,
    /// Create it even past the bound of [`sizing::Estimate::refusal`] (default false).
    pub force: Option<bool>,
}

/// Why a campaign request creates nothing.
#[derive(Clone, Debug, PartialEq)]
pub enum Unplanned {
    /// A bad or inconsistent value (one line).
    Invalid(String),
    /// Too large to create without `force`.
    TooLarge(sizing::Refusal),
}

impl Unplanned {
    /// The refusal as the command line says it (`campaign add`, `run`).
    pub fn for_command_line(self) -> String {
        match self {
            Unplanned::Invalid(why) => why,
            Unplanned::TooLarge(r) => format!("{r}; add --force to create it anyway"),
        }
    }
}

/// A split ply as JSON gives it: a number, or text (`auto`, or a number as text).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum SplitPly {
    /// A ply.
    Ply(u32),
    /// `auto` or a ply as text.
    Text(String),
}

/// A name as a request gives it: one of the names of `T`, or the text of another, which
/// [`CampaignRequest::build`] refuses as a bad value (400 `bad_field` over HTTP), not as a body
/// that does not fit the request (422 `bad_body`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Named<T> {
    /// A name of `T`.
    Known(T),
    /// Any other text.
    Unknown(String),
}

/// A type whose values are named in requests.
pub trait ByName: Sized {
    /// The value of this name, if it is one.
    fn by_name(name: &str) -> Option<Self>;
}

impl ByName for CampaignKind {
    fn by_name(name: &str) -> Option<CampaignKind> {
        CampaignKind::parse(name)
    }
}

impl ByName for AnalysisEngine {
    fn by_name(name: &str) -> Option<AnalysisEngine> {
        AnalysisEngine::parse(name)
    }
}

impl<T: ByName> Named<T> {
    /// The value of `name`, or the text.
    pub fn of_name(name: String) -> Named<T> {
        T::by_name(&name).map_or(Named::Unknown(name), Named::Known)
    }
}

impl<'de, T: ByName> Deserialize<'de> for Named<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Named<T>, D::Error> {
        String::deserialize(d).map(Named::of_name)
    }
}

impl<T: Copy> Named<T> {
    /// The value, or why this name is none (`what`: the field; `choices`: the names).
    fn known(&self, what: &str, choices: &str) -> Result<T, String> {
        match self {
            Named::Known(t) => Ok(*t),
            Named::Unknown(name) => Err(format!("{what} {name:?}: use {choices}")),
        }
    }
}

impl CampaignRequest {
    /// The campaign to create, or why not (one line).
    pub fn build(&self) -> Result<NewCampaign, String> {
        let (family, numbers) = select_starts(
            self.family.as_deref().unwrap_or("chess960"),
            self.positions.as_deref(),
            self.sample,
            self.seed.unwrap_or(0),
        )?;
        let kind = match &self.kind {
            Some(k) => k.known("kind", "perft, analysis or selfplay")?,
            None => CampaignKind::Perft,
        };
        if kind == CampaignKind::SelfPlay && self.depth != 0 {
            return Err("a self-play campaign has games and nodes, not a depth".into());
        }
        if kind != CampaignKind::SelfPlay && (self.games.is_some() || self.nodes.is_some()) {
            return Err("games and nodes are for self-play campaigns only".into());
        }
        let engine = match &self.engine {
            Some(e) => e.known("engine", "builtin or uci"),
            None => Ok(AnalysisEngine::Builtin),
        };
        let work = match kind {
            CampaignKind::Perft if self.engine.is_some() => {
                return Err("an engine is for analysis and self-play campaigns only".into());
            }
            CampaignKind::Perft => CampaignWork::Perft {
                depth: self.depth,
                split_ply: 0,
            },
            CampaignKind::Analysis => CampaignWork::Analysis {
                engine: engine?,
                depth: self.depth,
            },
            CampaignKind::SelfPlay => CampaignWork::SelfPlay {
                engine: engine?,
                budget: SelfPlayBudget {
                    games: self.games.ok_or("a self-play campaign needs games")?,
                    nodes: self.nodes.ok_or("a self-play campaign needs nodes")?,
                },
            },
        };
        let split = match &self.split_ply {
            None => "auto".to_string(),
            Some(SplitPly::Ply(n)) => n.to_string(),
            Some(SplitPly::Text(t)) => t.clone(),
        };
        let quorum = self.quorum.unwrap_or(2);
        Ok(
            NewCampaign::of(work, family, numbers, quorum, self.max_results)?
                .split_by(&split)?
                .named(self.name.clone())?
                .with_priority(self.priority.unwrap_or(0)),
        )
    }
}

impl CampaignRequest {
    /// The campaign to create with its estimate, or why not: a bad value, or (unless `force`)
    /// an estimate past the bound. Only the estimate is computed before refusing, so a huge
    /// request is refused at once.
    pub fn plan(&self) -> Result<(NewCampaign, Estimate), Unplanned> {
        let spec = self.build().map_err(Unplanned::Invalid)?;
        let estimate = spec.estimate();
        match estimate.refusal() {
            Some(refusal) if !self.force.unwrap_or(false) => Err(Unplanned::TooLarge(refusal)),
            _ => Ok((spec, estimate)),
        }
    }
}

/// A warning given with a new campaign (it is created all the same).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CampaignWarning {
    /// Machine-readable: `identical_campaign`.
    pub code: &'static str,
    /// For people.
    pub message: String,
    /// The campaign it concerns.
    pub campaign: u64,
}

impl CampaignWarning {
    /// `existing` (not cancelled) already computes exactly what the new campaign asks.
    pub fn identical(existing: u64) -> CampaignWarning {
        CampaignWarning {
            code: "identical_campaign",
            message: format!(
                "campaign {existing} has the same parameters and is not cancelled; this one computes the same again"
            ),
            campaign: existing,
        }
    }
}

/// Longest campaign name, in bytes (a label's).
pub const MAX_NAME_BYTES: usize = crate::integrity::label::MAX_LABEL_BYTES;

/// A campaign name as stored: trimmed, not empty, a label ([`crate::integrity::label::check_label`]: at
/// most [`MAX_NAME_BYTES`] bytes, no control, line-break or bidirectional character).
pub fn check_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("the name is empty".into());
    }
    crate::integrity::label::check_label(name).map_err(|fault| format!("the name {fault}"))?;
    Ok(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_campaign_request_builds_every_kind_and_refuses_nonsense() {
        // A kind or engine that is not one is refused as the request is read.
        let req = |json: &str| {
            serde_json::from_str::<CampaignRequest>(json)
                .map_err(|e| e.to_string())
                .and_then(|r| r.build())
        };
        let c = req(r#"{"depth": 3, "positions": "0-9,518"}"#).unwrap();
        assert_eq!(
            (
                c.work.engine(),
                c.work.split_ply(),
                c.quorum,
                c.positions.len()
            ),
            (None, 0, 2, 11)
        );
        let c = req(r#"{"depth": 4, "positions": "518", "split_ply": 2}"#).unwrap();
        assert_eq!(c.work.split_ply(), 2);
        let c =
            req(r#"{"depth": 4, "positions": "518", "split_ply": "1", "priority": -3}"#).unwrap();
        assert_eq!((c.work.split_ply(), c.priority), (1, -3));
        let c =
            req(r#"{"depth": 2, "kind": "analysis", "engine": "uci", "positions": "1"}"#).unwrap();
        assert_eq!(c.work.engine(), Some(AnalysisEngine::Uci));
        let c = req(r#"{"depth": 2, "family": "shuffle", "sample": 5, "seed": 7, "name": " s "}"#)
            .unwrap();
        assert_eq!(
            (c.family, c.numbers.len(), c.name.as_deref()),
            (Family::Shuffle, 5, Some("s"))
        );
        let c = req(r#"{"kind": "selfplay", "engine": "uci", "games": 8, "nodes": 2000, "positions": "518"}"#)
            .unwrap();
        assert_eq!(
            (c.kind(), c.work.depth(), c.work.split_ply()),
            (CampaignKind::SelfPlay, 0, 0)
        );
        assert_eq!(
            c.work,
            CampaignWork::SelfPlay {
                engine: AnalysisEngine::Uci,
                budget: SelfPlayBudget {
                    games: 8,
                    nodes: 2000
                }
            }
        );
        for bad in [
            r#"{"kind": "selfplay", "games": 8}"#,
            r#"{"kind": "selfplay", "games": 0, "nodes": 10}"#,
            r#"{"kind": "selfplay", "games": 8, "nodes": 10, "depth": 3}"#,
            r#"{"depth": 3, "games": 8}"#,
            r#"{"depth": 0}"#,
            r#"{"depth": 2, "kind": "mystery"}"#,
            r#"{"depth": 2, "engine": "uci"}"#,
            r#"{"depth": 2, "kind": "analysis", "engine": "gnu"}"#,
            r#"{"depth": 2, "family": "checkers"}"#,
            r#"{"depth": 2, "split_ply": "deep"}"#,
            r#"{"depth": 2, "name": ""}"#,
            r#"{"depth": 2, "name": "a\u202eb"}"#,
            r#"{"depth": 2, "name": "a\u0007b"}"#,
            r#"{"depth": 2, "positions": "1", "sample": 3}"#,
        ] {
            assert!(req(bad).is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<CampaignRequest>(r#"{"depth": 2, "colour": 1}"#).is_err());
    }

    #[test]
    fn parses_lists() {
        assert_eq!(parse_positions("0-3,518").unwrap(), vec![0, 1, 2, 3, 518]);
        assert_eq!(parse_positions(" 5 , 1-2,2 ").unwrap(), vec![1, 2, 5]);
        assert_eq!(parse_positions("0-959").unwrap().len(), 960);
        for bad in ["", "1,", "960", "3-1", "a", "1-", "-1"] {
            assert!(parse_positions(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn formats_lists() {
        assert_eq!(format_positions(&[0, 1, 2, 3, 518]), "0-3,518");
        assert_eq!(
            format_positions(&parse_positions("0-959").unwrap()),
            "0-959"
        );
        assert_eq!(format_positions(&[7]), "7");
    }

    #[test]
    fn campaign_checks() {
        assert!(NewCampaign::new(0, 2, None, vec![1]).is_err());
        // Perft goes to perft::MAX_DEPTH, analysis deeper (to search::MAX_DEPTH).
        let deepest = |depth| NewCampaign::new(depth, 2, None, vec![1]).unwrap();
        assert!(deepest(perft::MAX_DEPTH).split_by("0").is_ok());
        assert!(deepest(perft::MAX_DEPTH + 1).split_by("0").is_err());
        assert!(deepest(perft::MAX_DEPTH + 1).split_by("auto").is_err());
        for engine in [AnalysisEngine::Builtin, AnalysisEngine::Uci] {
            let analysis = deepest(search::MAX_DEPTH).analyse(engine).unwrap();
            assert!(analysis.split_by("auto").is_ok());
            assert!(deepest(search::MAX_DEPTH + 1).analyse(engine).is_err());
        }
        assert!(NewCampaign::new(3, 0, None, vec![1]).is_err());
        assert!(NewCampaign::new(3, 2, Some(1), vec![1]).is_err());
        assert!(NewCampaign::new(3, 2, None, vec![]).is_err());
        assert_eq!(
            NewCampaign::new(3, 2, None, vec![1]).unwrap().max_results,
            4
        );
        let a = NewCampaign::new(3, 2, None, vec![1])
            .unwrap()
            .analyse(AnalysisEngine::Builtin)
            .unwrap();
        assert_eq!(
            (a.kind(), a.work.engine()),
            (CampaignKind::Analysis, Some(AnalysisEngine::Builtin))
        );
        let base = NewCampaign::new(5, 2, None, vec![1]).unwrap();
        assert_eq!(base.clone().split_at(2).unwrap().work.split_ply(), 2);
        assert!(base.clone().split_at(5).is_err());
        assert!(base.clone().split_at(7).is_err());
        assert!(
            base.analyse(AnalysisEngine::Builtin)
                .unwrap()
                .split_at(1)
                .is_err()
        );
        assert!(
            NewCampaign::new(20, 2, None, vec![1])
                .unwrap()
                .analyse(AnalysisEngine::Uci)
                .is_ok()
        );
    }

    #[test]
    fn family_lists_and_samples() {
        assert_eq!(
            parse_numbers(Family::Shuffle, "0-2,5039").unwrap(),
            vec![0, 1, 2, 5039]
        );
        assert!(parse_numbers(Family::Shuffle, "5040").is_err());
        assert!(parse_numbers(Family::Chess960Nc, "480").is_err());
        assert_eq!(
            parse_numbers(Family::Transcendental, "8294399")
                .unwrap()
                .len(),
            1
        );
        let a = sample_numbers(Family::Transcendental, 100, 7).unwrap();
        assert_eq!(a, sample_numbers(Family::Transcendental, 100, 7).unwrap());
        assert_ne!(a, sample_numbers(Family::Transcendental, 100, 8).unwrap());
        assert_eq!(a.len(), 100);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert!(a.iter().all(|&n| n < 8_294_400));
        // A sample of everything is everything.
        assert_eq!(
            sample_numbers(Family::Chess960Nc, 480, 1).unwrap(),
            (0..480).collect::<Vec<_>>()
        );
        assert!(sample_numbers(Family::Dfrc, 0, 1).is_err());
        assert!(sample_numbers(Family::Chess960Nc, 481, 1).is_err());
        let c = NewCampaign::in_family(Family::Shuffle, 3, 2, None, vec![0, 1, 2, 7]).unwrap();
        assert_eq!(c.positions_text(), "0-2,7");
        assert!(c.positions.is_empty());
        let units: Vec<_> = c.workunits().map(Result::unwrap).collect();
        assert_eq!(
            units[0],
            NewWorkunit::Family {
                number: 0,
                fen: "bbknnqrr/pppppppp/8/8/8/8/PPPPPPPP/BBKNNQRR w - - 0 1".into()
            }
        );
        assert!(c.clone().split_at(1).unwrap_err().contains("chess960"));
        let (f, all) = select_starts("shuffle-nc", None, None, 0).unwrap();
        assert_eq!((f, all.len()), (Family::ShuffleNc, 2520));
        assert!(
            select_starts("dfrc", None, None, 0)
                .unwrap_err()
                .contains("--sample")
        );
        assert!(select_starts("dfrc", Some("1"), Some(2), 0).is_err());
        assert!(select_starts("fischer", None, None, 0).is_err());
        assert_eq!(select_starts("dfrc", None, Some(5), 3).unwrap().1.len(), 5);
        let c960 = NewCampaign::in_family(Family::Chess960, 3, 2, None, vec![518]).unwrap();
        assert_eq!((c960.positions.clone(), c960.numbers.len()), (vec![518], 0));
        assert!(
            c960.workunits()
                .all(|u| matches!(u, Ok(NewWorkunit::Start { sp: 518, .. })))
        );
    }
}
