//! `c960-coordinator backup` and `restore`: checked copies of a live SQLite store
//! (`c960_coordinator::store::backup`; the package's daily timer runs `backup`).

use std::path::PathBuf;

use anyhow::{Result, bail};
use c960_coordinator::clock::{now_ms, utc};
use c960_coordinator::store::{backup, postgres::is_postgres_url};

/// `backup`'s flags.
#[derive(clap::Args)]
pub struct BackupArgs {
    /// The SQLite database to copy (`serve` may be running on it).
    #[arg(long)]
    db: PathBuf,
    /// Where to write the copy: a new file, or a directory (the copy is then named
    /// c960-YYYYMMDDTHHMMSSZ.sqlite there).
    #[arg(long)]
    out: PathBuf,
    /// With --out a directory: keep this many copies there, deleting the oldest (0: keep all).
    #[arg(long, default_value_t = 0)]
    keep: usize,
}

/// `restore`'s flags.
#[derive(clap::Args)]
pub struct RestoreArgs {
    /// The copy to restore (written by `backup`).
    #[arg(long)]
    from: PathBuf,
    /// The SQLite database to replace (stop `serve` first); what is there is moved aside.
    #[arg(long)]
    db: PathBuf,
}

fn sqlite_only(db: &std::path::Path) -> Result<()> {
    if is_postgres_url(&db.to_string_lossy()) {
        bail!(
            "a PostgreSQL store is backed up with pg_dump -Fc and restored with pg_restore \
             (docs/operators.md, \"Backups\")"
        );
    }
    Ok(())
}

/// Takes a checked copy and says what it wrote.
pub fn run_backup(args: BackupArgs) -> Result<()> {
    sqlite_only(&args.db)?;
    let now = now_ms();
    let dest = backup::destination(&args.out, now);
    let report = backup::backup(&args.db, &dest, now)?;
    c960_cli::outln!("backup: wrote {report}")?;
    if args.keep > 0 && args.out.is_dir() {
        for old in backup::prune(&args.out, args.keep)? {
            c960_cli::outln!("backup: deleted {} (keeping {})", old.display(), args.keep)?;
        }
    }
    Ok(())
}

/// Restores a checked copy and says what becomes of the work done since it was taken.
pub fn run_restore(args: RestoreArgs) -> Result<()> {
    sqlite_only(&args.db)?;
    let r = backup::restore(&args.from, &args.db, now_ms())?;
    c960_cli::outln!("restore: checked {}", r.copy)?;
    if let Some(aside) = &r.moved_aside {
        c960_cli::outln!(
            "restore: the database that was at {} is now {} (with its WAL files)",
            args.db.display(),
            aside.display()
        )?;
    }
    let taken = r.copy.taken_ms.map_or_else(
        || "when the copy was taken".to_string(),
        |ms| format!("{} UTC", utc(ms)),
    );
    c960_cli::outln!(
        "restore: {} holds the copy. Work accepted after {taken} is not in it and is earned \
         again: workers' results for leases the copy does not know are refused (unknown_lease) \
         and they fetch anew, workers registered since register again, the copy's open leases \
         lapse at their renewal deadline and go out again. Start serve on it.",
        args.db.display()
    )?;
    Ok(())
}
