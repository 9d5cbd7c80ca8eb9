//! `export --format replicas`: a perft table's provenance, one CSV row per returned replica of
//! every start — which worker counted it (and its build: `BOINC 7.20.5` marks a BOINC host), with which engine build and perft-table Zobrist seed
//! (named by workers since 0.2: `c960-worker 0.2.0 zobrist 0123456789abcdef`), the count, the
//! digest, whether it agreed, when its lease was issued and when it came back, and the wall
//! time its worker reported for the count. A researcher checks from it that every value was
//! counted twice, independently, with different hash keys; an operator reads each replica's cost
//! from it, even for a campaign resumed across restarts.

use c960_common::text::csv_text;

use crate::model::{ResultOutcome, StoreResult, TableRow};
use crate::store::Store;

/// The header of [`csv`].
/// The columns before `issued_utc` are those of the first version (0.2), so that a reader of
/// its files reads these too.
pub const HEADER: &str = "sp,fen,depth,workunit,result,worker,worker_build,engine,zobrist_seed,outcome,nodes,digest,returned_utc,issued_utc,elapsed_ms";

/// The replicas of `rows` (a table of whole starts) as CSV, header first.
pub fn csv(store: &dyn Store, rows: &[TableRow]) -> StoreResult<String> {
    let mut out = String::from(HEADER);
    out.push('\n');
    // The build each worker runs (`BOINC 7.20.5` for a BOINC host), read once per worker.
    let mut builds = std::collections::HashMap::<u64, String>::new();
    for row in rows {
        for r in store.results(row.workunit_id)? {
            let Some(digest) = &r.digest else {
                continue; // never returned
            };
            let engine = r.engine.as_deref().unwrap_or("");
            if let std::collections::hash_map::Entry::Vacant(e) = builds.entry(r.worker_id) {
                e.insert(
                    store
                        .worker(r.worker_id)?
                        .and_then(|w| w.build)
                        .unwrap_or_default(),
                );
            }
            let outcome = match r.outcome {
                ResultOutcome::Valid => "valid",
                ResultOutcome::Invalid => "invalid",
                ResultOutcome::Pending => "pending",
            };
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                row.sp.map(|s| s.to_string()).unwrap_or_default(),
                csv_text(&row.fen),
                row.depth,
                row.workunit_id,
                r.id,
                r.worker_id,
                csv_text(&builds[&r.worker_id]),
                csv_text(engine),
                zobrist_seed(engine).unwrap_or(""),
                outcome,
                r.nodes.map(|n| n.to_string()).unwrap_or_default(),
                digest,
                r.returned_ms.map(utc).unwrap_or_default(),
                utc(r.issued_ms),
                r.elapsed_ms.map(|ms| ms.to_string()).unwrap_or_default(),
            ));
        }
    }
    Ok(out)
}

/// The Zobrist seed an engine label names (`… zobrist HEX`), if any.
pub fn zobrist_seed(engine: &str) -> Option<&str> {
    let (_, seed) = engine.rsplit_once(" zobrist ")?;
    (seed.len() == 16 && seed.bytes().all(|b| b.is_ascii_hexdigit())).then_some(seed)
}

/// `2026-12-03T20:41:07Z` from Unix milliseconds.
fn utc(ms: i64) -> String {
    format!("{}Z", crate::clock::utc(ms).replace(' ', "T"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_seed_and_writes_utc() {
        assert_eq!(
            zobrist_seed("c960-worker 0.2.0 zobrist 00ff00ff00ff00ff"),
            Some("00ff00ff00ff00ff")
        );
        assert_eq!(zobrist_seed("c960-worker 0.1.0"), None);
        assert_eq!(zobrist_seed("x zobrist 12"), None);
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(1_796_328_650_067), "2026-12-03T20:10:50Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29T00:00:00Z");
    }
}
