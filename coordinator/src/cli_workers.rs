//! `worker list` and `worker show ID`: the leaderboard and one worker's history on the
//! command line, from the same store queries as the web pages.

use anyhow::{Result, anyhow};
use c960_coordinator::model::standings::{StandingsQuery, WorkerStanding};
use c960_coordinator::net::api::pages::format::{ago, grouped};
use c960_coordinator::net::api::pages::now_ms;
use c960_coordinator::store::Store;

fn state(w: &WorkerStanding) -> &'static str {
    if w.banned {
        "banned"
    } else if w.quarantined {
        "quarantined"
    } else {
        "active"
    }
}

/// Untrusted names are printed with control characters escaped.
fn clean(text: &str) -> String {
    text.escape_debug().to_string()
}

/// Prints every worker, most credit (validated nodes, then results) first; a header line, tab-separated columns.
pub fn list(store: &dyn Store) -> Result<()> {
    let now = now_ms();
    let rows = store.standings(&StandingsQuery {
        seen_since_ms: None,
        recent_since_ms: now,
        offset: 0,
        limit: u64::MAX >> 1,
    })?;
    c960_cli::outln!(
        "id\tname\tstate\tvalid_results\tcredit_nodes\tlost_votes\trefused\tlast_seen\tbuild"
    )?;
    for w in &rows {
        c960_cli::outln!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            w.id,
            clean(&w.name),
            state(w),
            w.valid_results,
            w.valid_nodes,
            w.lost_votes,
            w.refused,
            ago(now, w.last_seen_ms),
            w.build_label()
        )?;
    }
    if rows.is_empty() {
        eprintln!("no worker has registered");
    }
    Ok(())
}

/// Prints one worker and its 20 latest results; an unknown id is an error.
pub fn show(store: &dyn Store, id: u64) -> Result<()> {
    let now = now_ms();
    let h = store
        .worker_history(id, now, 20)?
        .ok_or_else(|| anyhow!("unknown worker {id}"))?;
    let w = &h.standing;
    c960_cli::outln!("worker {} ({})", w.id, clean(&w.name))?;
    c960_cli::outln!("engine         {}", clean(&w.engine))?;
    c960_cli::outln!("build          {}", w.build_label())?;
    c960_cli::outln!("state          {}", state(w))?;
    c960_cli::outln!("valid results  {}", grouped(w.valid_results.into()))?;
    c960_cli::outln!("credit (nodes) {}", grouped(w.valid_nodes))?;
    c960_cli::outln!("lost votes     {}", w.lost_votes)?;
    c960_cli::outln!("refused        {}", w.refused)?;
    c960_cli::outln!("last seen      {}", ago(now, w.last_seen_ms))?;
    c960_cli::outln!()?;
    c960_cli::outln!("result\tcampaign\tworkunit\tsp\treplica\toutcome\tnodes")?;
    for r in &h.results {
        c960_cli::outln!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}",
            r.id,
            r.campaign_id,
            r.workunit_id,
            r.sp.map(|s| s.to_string()).unwrap_or_default(),
            r.state,
            r.outcome,
            r.nodes.map(|n| n.to_string()).unwrap_or_default()
        )?;
    }
    Ok(())
}
