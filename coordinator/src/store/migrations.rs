//! The numbered schema migrations. Each is one entry of [`MIGRATIONS`] with one `.sql` file per
//! dialect, embedded in the binary; an entry cannot exist for one backend alone. A database
//! records how many have run (SQLite: `PRAGMA user_version`; PostgreSQL: the table
//! `c960_schema`).

/// One schema migration.
#[derive(Clone, Copy, Debug)]
pub struct Migration {
    /// Its number (1-based, the schema version after it ran).
    pub number: u32,
    /// The SQLite statements.
    pub sqlite: &'static str,
    /// The PostgreSQL statements.
    pub postgres: &'static str,
}

macro_rules! migration {
    ($number:literal, $name:literal) => {
        Migration {
            number: $number,
            sqlite: include_str!(concat!("migrations/sqlite/", $name, ".sql")),
            postgres: include_str!(concat!("migrations/postgres/", $name, ".sql")),
        }
    };
}

/// Every migration, in order.
pub const MIGRATIONS: &[Migration] = &[
    migration!(1, "0001_initial"),
    migration!(2, "0002_analysis"),
    migration!(3, "0003_split"),
    migration!(4, "0004_quarantine"),
    migration!(5, "0005_counters"),
    migration!(6, "0006_integrity"),
    migration!(7, "0007_counter_masks"),
    migration!(8, "0008_families"),
    migration!(9, "0009_campaign_management"),
    migration!(10, "0010_enrolment_tokens"),
    migration!(11, "0011_resplits"),
    migration!(12, "0012_worker_credit"),
    migration!(13, "0013_self_play"),
    migration!(14, "0014_counter_shards"),
    migration!(15, "0015_credit_with_votes"),
    migration!(16, "0016_counters_per_statement"),
    migration!(17, "0017_probes"),
    migration!(18, "0018_results_keys"),
    migration!(19, "0019_counters_without_joins"),
    migration!(20, "0020_result_counts_per_workunit"),
    migration!(21, "0021_renewals_and_stalls"),
    migration!(22, "0022_audits_and_spaced_trust"),
    migration!(23, "0023_worker_builds"),
    migration!(24, "0024_boinc_hosts"),
    migration!(25, "0025_disputes"),
    migration!(26, "0026_program_versions"),
    migration!(27, "0027_table_pages"),
    migration!(28, "0028_worker_minutes"),
    migration!(29, "0029_waiting_for_trust"),
];

/// This program as `program_versions` records it.
pub fn this_program() -> String {
    format!("c960-coordinator {}", c960_cli::build_info::VERSION)
}

/// The refusal of a database at schema `found`, newer than this program's, which the program
/// `written_by` migrated (when it says).
pub fn newer_database(found: i64, written_by: Option<&str>) -> String {
    let by = written_by.map_or_else(String::new, |p| format!(" (written by {p})"));
    format!(
        "the database has schema version {found}{by}, newer than this {} knows (schema {}): run \
         that version or a newer one on it, or restore a backup taken before the upgrade",
        this_program(),
        MIGRATIONS.len()
    )
}

/// The schema version that brought lease renewals (heartbeats).
const RENEWALS: u32 = 21;

/// Leases issued before migration 21 carry their whole life (an hour) as their deadline, and
/// their workers (older than heartbeats) never renew them: a database migrated across it gives
/// each open lease at most one renewal window from the upgrade (`?1`: now plus the default
/// window), as if issued then and never renewed, so that a replica leased before the upgrade
/// goes out again within minutes, not an hour (issue 55's upgrade from 0.1.0).
pub fn lapse_unrenewable_leases(from_version: u32) -> Option<String> {
    (from_version < RENEWALS).then(|| {
        format!(
            "UPDATE results SET deadline_ms = ?1 WHERE state = {} AND deadline_ms > ?1",
            super::codes::REPLICA_IN_PROGRESS
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_database_is_refused_naming_both_programs() {
        let text = newer_database(99, Some("c960-coordinator 9.9.9"));
        assert!(text.contains("schema version 99 (written by c960-coordinator 9.9.9)"));
        assert!(text.contains(&this_program()));
        assert!(!text.contains('\n'));
        assert!(lapse_unrenewable_leases(20).is_some());
        assert!(lapse_unrenewable_leases(21).is_none());
    }

    #[test]
    fn migrations_are_numbered_in_order_without_gaps() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.number as usize, i + 1);
            assert!(
                m.sqlite.contains(&format!("-- {}:", m.number)),
                "{}",
                m.number
            );
        }
    }
}
