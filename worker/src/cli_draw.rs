//! `c960-worker draw`: draw a start of a family by one of the sources' procedures, explain
//! every card or toss, or analyse a procedure exactly (`c960_common::draw`, docs/draws.md).

use anyhow::Result;
use c960_common::draw::analysis::analyse;
use c960_common::draw::{Method, Randomness, draw};
use c960_common::family::{Castling, Family};
use rand::TryRngCore;
use rand::rngs::OsRng;

/// Arguments of `draw`.
#[derive(clap::Args)]
pub struct DrawArgs {
    /// uniform (the operating system's randomness), cards (the 14-card draw), coins (the
    /// Polish coin-toss draw) or knuth-yao (uniform from the fewest coin tosses).
    #[arg(long, default_value = "uniform")]
    method: String,
    /// The family (docs/families.md).
    #[arg(long, default_value = "chess960")]
    family: String,
    /// Print every card or toss, as a person at a board would do it.
    #[arg(long)]
    explain: bool,
    /// Enumerate every outcome of the procedure with its exact probability instead of drawing.
    #[arg(long)]
    analyse: bool,
    /// JSON output (probabilities as exact fractions such as "1/960").
    #[arg(long)]
    json: bool,
}

/// The operating system's random generator.
struct Os(rand::rand_core::UnwrapErr<OsRng>);

impl Randomness for Os {
    fn coin(&mut self) -> bool {
        rand::Rng::random_bool(&mut self.0, 0.5)
    }
    fn below(&mut self, n: u64) -> u64 {
        rand::Rng::random_range(&mut self.0, 0..n)
    }
}

pub fn run(args: DrawArgs) -> Result<()> {
    let method = Method::parse(&args.method)?;
    let family = Family::parse(&args.family)?;
    if args.analyse {
        let a = analyse(method, family)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&a)?);
        } else {
            print!("{}", a.report());
        }
        return Ok(());
    }
    let mut rng = Os(OsRng.unwrap_err());
    let d = draw(method, family, &mut rng, args.explain || args.json)?;
    let spent = match method {
        Method::Cards => format!("cards: {}", d.cards),
        Method::Coins | Method::KnuthYao => format!("tosses: {}", d.tosses),
        Method::Uniform => "draws: 1".to_string(),
    };
    if args.json {
        let j = serde_json::json!({
            "method": method.name(),
            "family": family.name(),
            "number": d.start.number,
            "arrangement": d.start.arrangement_string(),
            "fen": d.start.fen(),
            "tosses": d.tosses,
            "cards": d.cards,
            "explanation": d.explanation,
        });
        println!("{}", serde_json::to_string_pretty(&j)?);
        return Ok(());
    }
    if args.explain {
        for line in &d.explanation {
            println!("{line}");
        }
    }
    println!("{spent}");
    print!(
        "{}",
        crate::cli_position::describe(&d.start, Castling::Default)?
    );
    Ok(())
}
