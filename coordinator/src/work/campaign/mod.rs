//! Campaign definitions: position lists such as `0-9,518`, reproducible samples of a family's
//! starts, and what a new campaign holds.

use c960_common::family::Family;
use c960_common::wire::AnalysisEngine;
use c960_common::{perft, search};
use serde::{Deserialize, Serialize};

use crate::model::CampaignKind;
use crate::work::sizing::{self, Estimate};

mod workunits;

pub use workunits::NewWorkunit;

/// The table size of every analysis workunit, in MiB. Fixed per campaign because it is part of
/// the reproducibility contract: replicas searched with different tables may differ.
pub const ANALYSIS_HASH_MIB: u32 = search::DEFAULT_HASH_MIB as u32;

/// Parses a position list: comma-separated numbers and inclusive ranges in 0..=959.
pub fn parse_positions(text: &str) -> Result<Vec<u16>, String> {
    let numbers = parse_numbers(Family::Chess960, text)?;
    Ok(numbers.into_iter().map(|n| n as u16).collect())
}

/// Parses a list of start numbers of `family`: comma-separated numbers and inclusive ranges
/// below the family's count (for Chess960 the same as [`parse_positions`]).
pub fn parse_numbers(family: Family, text: &str) -> Result<Vec<u32>, String> {
    let count = family.count();
    let one = |s: &str| -> Result<u32, String> {
        let n: u32 = s
            .trim()
            .parse()
            .map_err(|_| format!("{s:?} is not a start position number"))?;
        if n >= count {
            return Err(format!(
                "{family} start position {n} is out of range 0..{}",
                count - 1
            ));
        }
        Ok(n)
    };
    let mut set = StartSet::new(count);
    for part in text.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(format!("empty item in position list {text:?}"));
        }
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (one(a)?, one(b)?),
            None => (one(part)?, one(part)?),
        };
        if lo > hi {
            return Err(format!("range {part} is backwards"));
        }
        if hi - lo >= 10_000_000 {
            return Err(format!("range {part} is too long"));
        }
        (lo..=hi).for_each(|n| {
            set.insert(n);
        });
    }
    Ok(set.numbers())
}

/// A set of start numbers below a family's count, one bit each (a family has at most
/// 8,294,400 starts: a megabyte), so that listing or sampling millions of them is quick enough
/// for `campaign add` to refuse such a campaign at once.
struct StartSet {
    bits: Vec<u64>,
}

impl StartSet {
    fn new(count: u32) -> StartSet {
        StartSet {
            bits: vec![0; count.div_ceil(64) as usize],
        }
    }

    /// Adds `n`; false when it was there already.
    fn insert(&mut self, n: u32) -> bool {
        let (word, bit) = ((n / 64) as usize, 1u64 << (n % 64));
        let fresh = self.bits[word] & bit == 0;
        self.bits[word] |= bit;
        fresh
    }

    /// The numbers in the set, ascending.
    fn numbers(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for (i, &word) in self.bits.iter().enumerate() {
            let mut w = word;
            while w != 0 {
                out.push(i as u32 * 64 + w.trailing_zeros());
                w &= w - 1;
            }
        }
        out
    }
}

/// A reproducible sample of `k` distinct start numbers of `family`, sorted: Floyd's algorithm
/// driven by SplitMix64 seeded with `seed`, so the same `(k, seed)` gives the same sample on
/// every machine and in every version.
pub fn sample_numbers(family: Family, k: u32, seed: u64) -> Result<Vec<u32>, String> {
    let n = family.count();
    if k == 0 || k > n {
        return Err(format!("--sample {k} must be in 1..{n} for {family}"));
    }
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut chosen = StartSet::new(n);
    for j in n - k..n {
        // Uniform in 0..=j by rejection (no modulo bias).
        let range = u64::from(j) + 1;
        let zone = u64::MAX - u64::MAX % range;
        let t = loop {
            let x = next();
            if x < zone {
                break (x % range) as u32;
            }
        };
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    Ok(chosen.numbers())
}

/// The largest family a campaign covers whole when neither a list nor a sample is given.
pub const MAX_WHOLE_FAMILY: u32 = 5040;

/// The starts a campaign covers: `--positions` (a list), `--sample K --seed S`, or else the
/// whole family when it has at most [`MAX_WHOLE_FAMILY`] starts.
pub fn select_starts(
    family: &str,
    positions: Option<&str>,
    sample: Option<u32>,
    seed: u64,
) -> Result<(Family, Vec<u32>), String> {
    let family = Family::parse(family).map_err(|e| e.to_string())?;
    let numbers = match (positions, sample) {
        (Some(_), Some(_)) => return Err("give --positions or --sample, not both".into()),
        (Some(list), None) => parse_numbers(family, list)?,
        (None, Some(k)) => sample_numbers(family, k, seed)?,
        (None, None) if family.count() <= MAX_WHOLE_FAMILY => (0..family.count()).collect(),
        (None, None) => {
            return Err(format!(
                "{family} has {} starts: choose some with --positions or --sample K --seed S",
                family.count()
            ));
        }
    };
    Ok((family, numbers))
}

/// The canonical text of a position list (`0-959`, `0-9,518`), used to recognise a campaign
/// when `run` is started again with the same arguments.
pub fn format_positions(positions: &[u16]) -> String {
    let numbers: Vec<u32> = positions.iter().map(|&p| u32::from(p)).collect();
    format_numbers(&numbers)
}

/// [`format_positions`] for start numbers of any family.
pub fn format_numbers(positions: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < positions.len() {
        let start = positions[i];
        let mut end = start;
        while i + 1 < positions.len() && positions[i + 1] == end + 1 {
            i += 1;
            end = positions[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

pub use crate::work::sizing::MAX_SPLIT_PLY;

/// A campaign to create: perft, or analysis with one engine kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewCampaign {
    /// `None`: perft. `Some(engine)`: fixed-depth analysis with this engine kind.
    pub analysis: Option<AnalysisEngine>,
    /// Perft only: split each start position at this ply (0: one workunit per start position).
    pub split_ply: u32,
    /// Depth in plies, ≥ 1.
    pub depth: u32,
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
    /// Self-play: games per workunit and nodes per move, played with the engine `analysis`
    /// names (depth is then 0).
    pub self_play: Option<SelfPlayBudget>,
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
    /// Checks the parameters; the cap defaults to quorum + 2 (room for two disagreements). The
    /// depth's upper bound depends on the kind: [`NewCampaign::split_at`] holds a perft campaign
    /// to [`perft::MAX_DEPTH`], [`NewCampaign::analyse`] an analysis to [`search::MAX_DEPTH`].
    pub fn new(
        depth: u32,
        quorum: u32,
        max_results: Option<u32>,
        positions: Vec<u16>,
    ) -> Result<NewCampaign, String> {
        if depth == 0 {
            return Err("depth 0: a campaign searches or counts at least one ply".into());
        }
        if quorum == 0 || quorum > 16 {
            return Err(format!("quorum {quorum} is out of range 1..16"));
        }
        let max_results = max_results.unwrap_or(quorum + 2);
        if max_results < quorum {
            return Err(format!(
                "max results {max_results} is below the quorum {quorum}"
            ));
        }
        if positions.is_empty() {
            return Err("no start positions".into());
        }
        Ok(NewCampaign {
            analysis: None,
            split_ply: 0,
            depth,
            quorum,
            max_results,
            positions,
            family: Family::Chess960,
            numbers: Vec::new(),
            name: None,
            priority: 0,
            self_play: None,
        })
    }

    /// [`NewCampaign::new`] over start numbers of any family. The workunits of families other
    /// than Chess960 carry their start as a FEN, so workers compute them without knowing the
    /// family; the store keeps the family and number for the exports.
    pub fn in_family(
        family: Family,
        depth: u32,
        quorum: u32,
        max_results: Option<u32>,
        numbers: Vec<u32>,
    ) -> Result<NewCampaign, String> {
        if family == Family::Chess960 {
            let positions = numbers.iter().map(|&n| n as u16).collect();
            return NewCampaign::new(depth, quorum, max_results, positions);
        }
        if numbers.is_empty() {
            return Err("no start positions".into());
        }
        let mut c = NewCampaign::new(depth, quorum, max_results, vec![0])?;
        c.positions.clear();
        c.family = family;
        c.numbers = numbers;
        Ok(c)
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
}

impl NewCampaign {
    /// What sizing needs to know of this campaign.
    pub fn shape(&self) -> sizing::Shape {
        sizing::Shape {
            starts: (self.positions.len() + self.numbers.len()) as u64,
            depth: self.depth,
            split_ply: self.split_ply,
            perft: self.analysis.is_none() && self.self_play.is_none(),
            quorum: self.quorum,
        }
    }

    /// The estimate of this campaign as it is specified (its split ply already chosen).
    pub fn estimate(&self) -> Estimate {
        sizing::estimate(self.shape())
    }

    /// Turns the campaign into an analysis campaign searched with `engine` to its depth.
    pub fn analyse(mut self, engine: AnalysisEngine) -> Result<NewCampaign, String> {
        if self.depth > search::MAX_DEPTH {
            return Err(format!(
                "analysis depth {} is out of range 1..{}",
                self.depth,
                search::MAX_DEPTH
            ));
        }
        self.analysis = Some(engine);
        Ok(self)
    }

    /// Turns the campaign into a self-play campaign: `budget.games` games per start, the
    /// engine kind `engine` against itself at `budget.nodes` nodes a move.
    pub fn play(
        mut self,
        engine: AnalysisEngine,
        budget: SelfPlayBudget,
    ) -> Result<NewCampaign, String> {
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
        self.analysis = Some(engine);
        self.self_play = Some(budget);
        self.depth = 0;
        Ok(self)
    }

    /// Splits each start position's perft at `ply` with transposition merging
    /// ([`c960_common::split`]): one workunit per distinct position, depth − ply deep.
    pub fn split_at(mut self, ply: u32) -> Result<NewCampaign, String> {
        if self.kind() == CampaignKind::Perft && self.depth > perft::MAX_DEPTH {
            return Err(format!(
                "depth {} is out of range 1..{}",
                self.depth,
                perft::MAX_DEPTH
            ));
        }
        if self.analysis.is_some() && ply > 0 {
            return Err("--split-ply applies to perft campaigns only".into());
        }
        if ply > 0 && self.family != Family::Chess960 {
            return Err(format!(
                "split campaigns are for chess960; a {} campaign needs --split-ply 0",
                self.family
            ));
        }
        if ply > 0 && (ply >= self.depth || ply > MAX_SPLIT_PLY) {
            return Err(format!(
                "split ply {ply} must be below the depth {} and at most {MAX_SPLIT_PLY}",
                self.depth
            ));
        }
        self.split_ply = ply;
        Ok(self)
    }

    /// Splits at `choice`: a ply number, or `auto` for [`sizing::auto_split_ply`] (never for
    /// analysis).
    pub fn split_by(self, choice: &str) -> Result<NewCampaign, String> {
        let ply = match choice {
            "auto" if self.analysis.is_some() => 0,
            "auto" => sizing::auto_split_ply(self.depth),
            n => n
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
    /// Perft, analysis or self-play.
    /// `perft`, `analysis` or `selfplay`, as stored.
    pub fn kind(&self) -> CampaignKind {
        match (self.analysis, self.self_play) {
            (_, Some(_)) => CampaignKind::SelfPlay,
            (Some(_), None) => CampaignKind::Analysis,
            (None, None) => CampaignKind::Perft,
        }
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
    pub kind: Option<String>,
    /// Analysis and self-play: `builtin` (default) or `uci`.
    pub engine: Option<String>,
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

/// A split ply as JSON gives it: a number, or text (`auto`, or a number as text).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum SplitPly {
    /// A ply.
    Ply(u32),
    /// `auto` or a ply as text.
    Text(String),
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
        let kind = self.kind.as_deref().unwrap_or("perft");
        let self_play = kind == "selfplay";
        if self_play && self.depth != 0 {
            return Err("a self-play campaign has games and nodes, not a depth".into());
        }
        if !self_play && (self.games.is_some() || self.nodes.is_some()) {
            return Err("games and nodes are for self-play campaigns only".into());
        }
        let mut spec = NewCampaign::in_family(
            family,
            if self_play { 1 } else { self.depth },
            self.quorum.unwrap_or(2),
            self.max_results,
            numbers,
        )?;
        let engine = || {
            let name = self.engine.as_deref().unwrap_or("builtin");
            AnalysisEngine::parse(name)
                .ok_or_else(|| format!("engine {name:?}: use builtin or uci"))
        };
        match kind {
            "perft" if self.engine.is_some() => {
                return Err("an engine is for analysis and self-play campaigns only".into());
            }
            "perft" => {}
            "analysis" => spec = spec.analyse(engine()?)?,
            "selfplay" => {
                let budget = SelfPlayBudget {
                    games: self.games.ok_or("a self-play campaign needs games")?,
                    nodes: self.nodes.ok_or("a self-play campaign needs nodes")?,
                };
                spec = spec.play(engine()?, budget)?;
            }
            other => return Err(format!("kind {other:?}: use perft, analysis or selfplay")),
        }
        let split = match &self.split_ply {
            None => "auto".to_string(),
            Some(SplitPly::Ply(n)) => n.to_string(),
            Some(SplitPly::Text(t)) => t.clone(),
        };
        Ok(spec
            .split_by(&split)?
            .named(self.name.clone())?
            .with_priority(self.priority.unwrap_or(0)))
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
        let req = |json: &str| {
            serde_json::from_str::<CampaignRequest>(json)
                .unwrap()
                .build()
        };
        let c = req(r#"{"depth": 3, "positions": "0-9,518"}"#).unwrap();
        assert_eq!(
            (c.analysis, c.split_ply, c.quorum, c.positions.len()),
            (None, 0, 2, 11)
        );
        let c = req(r#"{"depth": 4, "positions": "518", "split_ply": 2}"#).unwrap();
        assert_eq!(c.split_ply, 2);
        let c =
            req(r#"{"depth": 4, "positions": "518", "split_ply": "1", "priority": -3}"#).unwrap();
        assert_eq!((c.split_ply, c.priority), (1, -3));
        let c =
            req(r#"{"depth": 2, "kind": "analysis", "engine": "uci", "positions": "1"}"#).unwrap();
        assert_eq!(c.analysis, Some(AnalysisEngine::Uci));
        let c = req(r#"{"depth": 2, "family": "shuffle", "sample": 5, "seed": 7, "name": " s "}"#)
            .unwrap();
        assert_eq!(
            (c.family, c.numbers.len(), c.name.as_deref()),
            (Family::Shuffle, 5, Some("s"))
        );
        let c = req(r#"{"kind": "selfplay", "engine": "uci", "games": 8, "nodes": 2000, "positions": "518"}"#)
            .unwrap();
        assert_eq!(
            (c.kind(), c.depth, c.analysis, c.self_play),
            (
                CampaignKind::SelfPlay,
                0,
                Some(AnalysisEngine::Uci),
                Some(SelfPlayBudget {
                    games: 8,
                    nodes: 2000
                })
            )
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
            (a.kind(), a.analysis),
            (CampaignKind::Analysis, Some(AnalysisEngine::Builtin))
        );
        let base = NewCampaign::new(5, 2, None, vec![1]).unwrap();
        assert_eq!(base.clone().split_at(2).unwrap().split_ply, 2);
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
