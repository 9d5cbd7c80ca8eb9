//! [`PgStore`]: the PostgreSQL backend, for several coordinators on one database. The store's
//! logic is in [`super::sql`] (the same as SQLite's); this module holds the connection pool,
//! the PostgreSQL side of [`super::db::Conn`], transactions with retry, and the migrations.
//!
//! Driver: the synchronous [`postgres`] crate with an [`r2d2`] pool. The [`super::Store`]
//! trait is synchronous and the coordinator calls it from `spawn_blocking` threads (and from
//! plain threads on the command line), so a blocking client keeps every transaction
//! straight-line code shared with SQLite; a pooled connection per blocking thread lets
//! transactions of one coordinator run side by side. (The client must not be called from
//! inside an async task: it runs its own small runtime per connection.)

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, NoTls, Statement};

mod gate;
mod url;

use url::take_own_params;
pub use url::{is_postgres_url, redact_url};

use gate::Gate;

use super::db::{Backend, Conn, Dialect, Param, Row, Value};
use super::migrations::{self, MIGRATIONS};
use super::{StoreError, StoreResult};

impl From<postgres::Error> for StoreError {
    fn from(e: postgres::Error) -> Self {
        if e.code() == Some(&postgres::error::SqlState::DISK_FULL) {
            return StoreError::StorageFull(e.to_string());
        }
        StoreError::backend("postgres", e)
    }
}

impl From<r2d2::Error> for StoreError {
    fn from(e: r2d2::Error) -> Self {
        StoreError::backend("postgres pool", e)
    }
}

/// Which clock transactions decide by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// The database's (`now()` of the transaction): leases expire by one clock however many
    /// coordinators there are and whatever their clocks say. The default.
    Database,
    /// The caller's `now_ms` (tests that play with time, as on SQLite).
    Caller,
}

/// How to open a [`PgStore`].
#[derive(Clone, Debug)]
pub struct PgOptions {
    /// Connections in the pool (at least 1).
    pub pool_size: u32,
    /// Writing transactions at once (at least 1): see [`gate`]. Reads and exports take a
    /// connection without waiting here.
    pub writers: u32,
    /// A schema to keep the tables in (created if missing), instead of `public`: the tests give
    /// each test its own.
    pub schema: Option<String>,
    /// The clock.
    pub clock: Clock,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            pool_size: 16,
            writers: default_writers(),
            schema: None,
            clock: Clock::Database,
        }
    }
}

/// Writing transactions of one coordinator at once, by default: as many as this machine has
/// cores. With two coordinators and PostgreSQL on one 2-core machine that is 2 each: in the
/// store benchmark 1 and 2 ran alike, and faster than 3, 4 or 16 (BENCHMARKS.md, issue 15).
/// The database's cores are what counts, and the coordinator cannot see them: on a database
/// server with more cores than the coordinators' machines, give more with `?writers=N` in the
/// URL (about twice the database's cores shared among the coordinators).
pub fn default_writers() -> u32 {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 64) as u32)
}

/// One pooled connection with its prepared statements.
pub struct PgConnection {
    client: Client,
    statements: HashMap<String, Statement>,
}

/// The planner's cost of a page read out of order on the store's sessions, where nobody set
/// one: PostgreSQL's default (4) is priced for spinning disks (see `Manager::connect`).
const RANDOM_PAGE_COST: f64 = 1.1;

/// Opens connections for the pool (in the store's schema).
#[derive(Debug)]
struct Manager {
    config: postgres::Config,
    schema: Option<String>,
}

impl r2d2::ManageConnection for Manager {
    type Connection = PgConnection;
    type Error = postgres::Error;

    fn connect(&self) -> Result<PgConnection, postgres::Error> {
        let mut client = self.config.connect(NoTls)?;
        if let Some(s) = &self.schema {
            client.batch_execute(&format!("SET search_path TO {}", quote_ident(s)))?;
        }
        // PostgreSQL's default random_page_cost (4) prices a page read out of order as four read
        // in sequence, as on a spinning disk. The store's tables are hot in memory and nearly
        // every statement probes keys; at 4 the planner joined a batch of 256 keys to a small
        // table by reading the whole table (a hash join over a seq scan, kept in the cached plan
        // while the table grows) and checked each lease's worker key by reading the workers
        // table. 1.1 is the usual value for SSDs and cached data. Set for this store's sessions
        // only, and only where nobody set it (server, database, role or URL options).
        let source = client.query_one(
            "SELECT source FROM pg_settings WHERE name = 'random_page_cost'",
            &[],
        )?;
        if source.get::<_, &str>(0) == "default" {
            client.batch_execute(&format!("SET random_page_cost = {RANDOM_PAGE_COST}"))?;
        }
        Ok(PgConnection {
            client,
            statements: HashMap::new(),
        })
    }

    fn is_valid(&self, conn: &mut PgConnection) -> Result<(), postgres::Error> {
        conn.client.simple_query("").map(|_| ())
    }

    fn has_broken(&self, conn: &mut PgConnection) -> bool {
        conn.client.is_closed()
    }
}

fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// The PostgreSQL store. See the module documentation.
pub struct PgStore {
    pool: r2d2::Pool<Manager>,
    /// Writing transactions wait here before they take a connection.
    writers: Gate,
    clock: Clock,
    disk: crate::store::disk::DiskWatch,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("clock", &self.clock)
            .finish()
    }
}

/// SQLSTATEs after which a transaction is simply run again: serialization failure, deadlock.
fn is_retryable(e: &StoreError) -> bool {
    let StoreError::Backend { cause, .. } = e else {
        return false;
    };
    cause
        .downcast_ref::<postgres::Error>()
        .and_then(|e| e.code())
        .is_some_and(|c| {
            *c == postgres::error::SqlState::T_R_SERIALIZATION_FAILURE
                || *c == postgres::error::SqlState::T_R_DEADLOCK_DETECTED
        })
}

impl PgStore {
    /// Connects to `url` (`postgres://user:password@host:port/database`) and runs pending
    /// migrations (one coordinator at a time: they take an advisory lock).
    pub fn open(url: &str) -> StoreResult<PgStore> {
        PgStore::open_with(url, &PgOptions::default())
    }

    /// [`PgStore::open`] with options. The parameters `pool_size` and `writers` in the URL's
    /// query override `options.pool_size` and `options.writers`
    /// (`--db 'postgres://host/db?pool_size=16&writers=4'`).
    pub fn open_with(url: &str, options: &PgOptions) -> StoreResult<PgStore> {
        let (url, own) = take_own_params(url)?;
        let pool_size = own.pool_size.unwrap_or(options.pool_size);
        let writers = own.writers.unwrap_or(options.writers);
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e: postgres::Error| StoreError::Bad(format!("bad PostgreSQL URL: {e}")))?;
        config.connect_timeout(Duration::from_secs(10));
        if config.get_application_name().is_none() {
            config.application_name("c960-coordinator");
        }
        if let Some(s) = &options.schema {
            let mut c = config.connect(NoTls)?;
            c.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {}", quote_ident(s)))?;
        }
        let pool = r2d2::Pool::builder()
            .max_size(pool_size.max(1))
            .min_idle(Some(1))
            // No round trip to test each connection as it is taken (an empty query: about 3 %
            // of a coordinator's CPU under load). A connection found closed is dropped when it
            // comes back (`has_broken`), so a server restart fails the calls on the connections
            // open at the time, once each, and the pool then opens new ones.
            .test_on_check_out(false)
            .connection_timeout(Duration::from_secs(30))
            .build(Manager {
                config,
                schema: options.schema.clone(),
            })?;
        let store = PgStore {
            pool,
            writers: Gate::new(writers),
            clock: options.clock,
            disk: crate::store::disk::DiskWatch::default(),
        };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&self) -> StoreResult<()> {
        let mut conn = self.pool.get()?;
        let mut tx = conn.client.transaction()?;
        // Coordinators starting together migrate one after the other.
        tx.batch_execute(
            "SELECT pg_advisory_xact_lock(960960);
             CREATE TABLE IF NOT EXISTS c960_schema (version BIGINT NOT NULL);",
        )?;
        let version: i64 = match tx.query_opt("SELECT version FROM c960_schema", &[])? {
            Some(r) => r.get(0),
            None => {
                tx.execute("INSERT INTO c960_schema (version) VALUES (0)", &[])?;
                0
            }
        };
        if version as usize > MIGRATIONS.len() {
            let written_by: Option<String> = tx
                .query_opt(
                    "SELECT program FROM program_versions ORDER BY schema_version DESC LIMIT 1",
                    &[],
                )
                .ok()
                .flatten()
                .map(|r| r.get(0));
            return Err(StoreError::Bad(migrations::newer_database(
                version,
                written_by.as_deref(),
            )));
        }
        for m in MIGRATIONS.iter().skip(version as usize) {
            tx.batch_execute(m.postgres)?;
            tx.execute(
                "UPDATE c960_schema SET version = $1",
                &[&i64::from(m.number)],
            )?;
        }
        if (version as usize) < MIGRATIONS.len() {
            let now = crate::clock::now_ms();
            if let Some(sql) = migrations::lapse_unrenewable_leases(version as u32) {
                let renewal = crate::integrity::trust::Integrity::default().lease_renewal_ms;
                tx.execute(&sql.replace("?1", "$1"), &[&(now + renewal as i64)])?;
            }
            tx.execute(
                "INSERT INTO program_versions (schema_version, program, migrated_ms)
                 VALUES ($1, $2, $3)
                 ON CONFLICT (schema_version) DO UPDATE SET program = excluded.program,
                     migrated_ms = excluded.migrated_ms",
                &[
                    &(MIGRATIONS.len() as i64),
                    &migrations::this_program(),
                    &now,
                ],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Runs `f` on a pooled connection. The synchronous client runs a small runtime of its own,
    /// which tokio refuses inside an async task: called from one (a handler that did not go
    /// through `spawn_blocking`), the call moves off the runtime with `block_in_place`.
    fn conn<T>(
        &self,
        access: Access,
        f: &mut dyn FnMut(&dyn Conn) -> StoreResult<T>,
    ) -> StoreResult<T> {
        match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| self.conn_here(access, f))
            }
            Ok(_) => Err(StoreError::Db(
                "the PostgreSQL store cannot be called on a current-thread runtime".into(),
            )),
            Err(_) => self.conn_here(access, f),
        }
    }

    fn conn_here<T>(
        &self,
        access: Access,
        f: &mut dyn FnMut(&dyn Conn) -> StoreResult<T>,
    ) -> StoreResult<T> {
        // Before the connection is taken, so a writer waiting here holds none.
        let _pass = (access == Access::Write).then(|| self.writers.enter());
        let mut pooled = self.pool.get()?;
        if access == Access::Plain {
            let c = PgConn {
                conn: RefCell::new(&mut pooled),
                clock: self.clock,
            };
            return f(&c);
        }
        let _timer = crate::net::metrics::store_transaction_timer();
        let mut attempt = 0;
        loop {
            pooled.client.batch_execute("BEGIN")?;
            let full_since = self.disk.full_since().filter(|_| access == Access::Write);
            let out = {
                let c = PgConn {
                    conn: RefCell::new(&mut pooled),
                    clock: self.clock,
                };
                let extended = match full_since {
                    Some(since) => c.now_ms(crate::clock::now_ms()).and_then(|now| {
                        super::sql::extend_leases_lapsed_since(&c, since, now).map(|_| ())
                    }),
                    None => Ok(()),
                };
                extended.and_then(|()| f(&c)).and_then(|v| {
                    c.conn.borrow_mut().client.batch_execute("COMMIT")?;
                    Ok(v)
                })
            };
            if access == Access::Write {
                self.disk.observe(&out, "postgres", crate::clock::now_ms());
            }
            match out {
                Ok(v) => return Ok(v),
                Err(e) => {
                    // A failed COMMIT has ended the transaction already; ROLLBACK then only
                    // warns.
                    let _ = pooled.client.batch_execute("ROLLBACK");
                    attempt += 1;
                    if attempt < 20 && is_retryable(&e) {
                        std::thread::sleep(Duration::from_millis(rand::random::<u64>() % 5));
                        continue;
                    }
                    return Err(e);
                }
            }
        }
    }
}

/// How a call uses its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// Statements one by one, no transaction (reads).
    Plain,
    /// A transaction that may write: passes the [`Gate`] of writers first.
    Write,
    /// A read-only transaction (exports: one snapshot, however long).
    ReadOnly,
}

impl Backend for PgStore {
    fn with_tx<T>(&self, f: &mut dyn FnMut(&dyn Conn) -> StoreResult<T>) -> StoreResult<T> {
        self.conn(Access::Write, f)
    }

    fn with_conn<T>(&self, f: &mut dyn FnMut(&dyn Conn) -> StoreResult<T>) -> StoreResult<T> {
        self.conn(Access::Plain, f)
    }

    fn with_reader<T>(&self, f: &mut dyn FnMut(&dyn Conn) -> StoreResult<T>) -> StoreResult<T> {
        // MVCC: a read never blocks a writer, so exports need no connection of their own; a
        // read-only transaction gives them one snapshot.
        self.conn(Access::ReadOnly, &mut |c| {
            c.exec("SET TRANSACTION READ ONLY", &[])?;
            f(c)
        })
    }

    fn storage_full_since(&self) -> Option<i64> {
        self.disk.full_since()
    }
}

/// A pooled connection as a [`Conn`].
struct PgConn<'a> {
    conn: RefCell<&'a mut PgConnection>,
    clock: Clock,
}

/// `?N` placeholders as PostgreSQL's `$N`.
fn dollar_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

#[derive(Debug)]
struct Bind(Value);

impl ToSql for Bind {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match &self.0 {
            Value::Null => Ok(IsNull::Yes),
            Value::I64(v) => match *ty {
                Type::INT2 => i16::try_from(*v)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
                Type::BOOL => (*v != 0).to_sql(ty, out),
                _ => v.to_sql(ty, out),
            },
            Value::Bool(b) => match *ty {
                Type::BOOL => b.to_sql(ty, out),
                _ => i64::from(*b).to_sql(ty, out),
            },
            Value::Text(s) => s.to_sql(ty, out),
            Value::Blob(b) => b.to_sql(ty, out),
            Value::Array(vs) => {
                // Elements as the array type asks (a batch's column, see Batch).
                match *ty {
                    Type::INT8_ARRAY => elements(vs, ty, |v| match v {
                        Value::I64(i) => Some(*i),
                        _ => None,
                    })?
                    .to_sql(ty, out),
                    Type::BYTEA_ARRAY => elements(vs, ty, |v| match v {
                        Value::Blob(b) => Some(b.as_slice()),
                        _ => None,
                    })?
                    .to_sql(ty, out),
                    Type::TEXT_ARRAY => elements(vs, ty, |v| match v {
                        Value::Text(t) => Some(t.as_str()),
                        _ => None,
                    })?
                    .to_sql(ty, out),
                    _ => Err(format!("an array bound as {ty}").into()),
                }
            }
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// The elements of an array parameter as `pick` reads them (NULL as `None`); an element of
/// another type is an error.
fn elements<'a, T>(
    vs: &'a [Value],
    ty: &Type,
    pick: impl Fn(&'a Value) -> Option<T>,
) -> Result<Vec<Option<T>>, Box<dyn std::error::Error + Sync + Send>> {
    vs.iter()
        .map(|v| match v {
            Value::Null => Ok(None),
            v => pick(v)
                .map(Some)
                .ok_or_else(|| format!("{v:?} in an array of {ty}").into()),
        })
        .collect()
}

fn value_of(r: &postgres::Row, i: usize) -> StoreResult<Value> {
    let ty = r.columns()[i].type_();
    let v = match *ty {
        Type::INT8 => r.try_get::<_, Option<i64>>(i)?.map(Value::I64),
        Type::INT4 => r
            .try_get::<_, Option<i32>>(i)?
            .map(|v| Value::I64(v.into())),
        Type::INT2 => r
            .try_get::<_, Option<i16>>(i)?
            .map(|v| Value::I64(v.into())),
        Type::BOOL => r.try_get::<_, Option<bool>>(i)?.map(Value::Bool),
        Type::BYTEA => r.try_get::<_, Option<Vec<u8>>>(i)?.map(Value::Blob),
        Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR => {
            r.try_get::<_, Option<String>>(i)?.map(Value::Text)
        }
        _ => {
            return Err(StoreError::Db(format!(
                "column {i} has a type the store does not read: {ty}"
            )));
        }
    };
    Ok(v.unwrap_or(Value::Null))
}

impl PgConn<'_> {
    fn run<T>(
        &self,
        sql: &str,
        params: &[&dyn Param],
        f: impl FnOnce(&mut Client, &Statement, &[&(dyn ToSql + Sync)]) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let mut conn = self.conn.borrow_mut();
        let PgConnection { client, statements } = &mut **conn;
        let st = match statements.get(sql) {
            Some(st) => st.clone(),
            None => {
                let st = client.prepare(&dollar_placeholders(sql))?;
                statements.insert(sql.to_string(), st.clone());
                st
            }
        };
        let binds: Vec<Bind> = params.iter().map(|p| Bind(p.value())).collect();
        let refs: Vec<&(dyn ToSql + Sync)> =
            binds.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
        f(client, &st, &refs)
    }
}

impl Conn for PgConn<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn exec(&self, sql: &str, params: &[&dyn Param]) -> StoreResult<u64> {
        self.run(sql, params, |c, st, p| Ok(c.execute(st, p)?))
    }

    fn query(&self, sql: &str, params: &[&dyn Param]) -> StoreResult<Vec<Row>> {
        self.run(sql, params, |c, st, p| {
            c.query(st, p)?
                .iter()
                .map(|r| {
                    Ok(Row((0..r.len())
                        .map(|i| value_of(r, i))
                        .collect::<StoreResult<_>>()?))
                })
                .collect()
        })
    }

    fn each(
        &self,
        sql: &str,
        params: &[&dyn Param],
        f: &mut dyn FnMut(Row) -> StoreResult<()>,
    ) -> StoreResult<()> {
        self.run(sql, params, |c, st, p| {
            use postgres::fallible_iterator::FallibleIterator;
            let mut rows = c.query_raw(st, p.iter().copied())?;
            while let Some(r) = rows.next()? {
                f(Row((0..r.len())
                    .map(|i| value_of(&r, i))
                    .collect::<StoreResult<_>>()?))?;
            }
            Ok(())
        })
    }

    fn now_ms(&self, caller_ms: i64) -> StoreResult<i64> {
        match self.clock {
            Clock::Caller => Ok(caller_ms),
            Clock::Database => self
                .query_one(
                    "SELECT CAST(FLOOR(EXTRACT(EPOCH FROM now()) * 1000) AS BIGINT)",
                    &[],
                )?
                .i64(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With one writer's place, a second writing transaction waits until the first has ended,
    /// and a read goes through meanwhile.
    #[test]
    fn writers_wait_for_a_place_and_readers_do_not() {
        use std::sync::mpsc;
        use std::time::Instant;
        let Some(url) = crate::store::conformance::postgres_url() else {
            return;
        };
        let sep = if url.contains('?') { '&' } else { '?' };
        let options = PgOptions {
            schema: Some("t_writers_gate".into()),
            ..PgOptions::default()
        };
        let store = PgStore::open_with(&format!("{url}{sep}writers=1"), &options).unwrap();
        let store = &store;
        let (entered, first_in) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let first = s.spawn(move || {
                store.with_tx(&mut |_| {
                    entered.send(()).unwrap();
                    released.recv().unwrap();
                    Ok(())
                })
            });
            first_in.recv().unwrap();
            let one = store.with_conn(&mut |c| c.query_one("SELECT 1", &[])?.i64(0));
            assert_eq!(
                one.unwrap(),
                1,
                "a read while the only writer's place is taken"
            );
            let second = s.spawn(|| store.with_tx(&mut |_| Ok(Instant::now())));
            std::thread::sleep(Duration::from_millis(300));
            let let_go = Instant::now();
            release.send(()).unwrap();
            first.join().unwrap().unwrap();
            let second_in = second.join().unwrap().unwrap();
            assert!(
                second_in >= let_go,
                "the second writer began while the first held the place"
            );
        });
    }

    /// The replicas lookup keeps its index probes under a generic plan, in the state of a
    /// running campaign: its tables analysed when it was created, before any result, the
    /// generic plan made after the first batches, and the results grown tenfold since. The `IN`
    /// list it replaced is checked not to probe by workunit there (it walks every result of
    /// every worker), so that the test shows the difference.
    #[test]
    fn sessions_price_random_reads_as_cached_unless_someone_set_a_price() {
        let Some(url) = crate::store::conformance::postgres_url() else {
            return;
        };
        let sep = if url.contains('?') { '&' } else { '?' };
        let price = |url: &str| -> String {
            let options = PgOptions {
                schema: Some("t_page_cost".into()),
                ..PgOptions::default()
            };
            let store = PgStore::open_with(url, &options).unwrap();
            store
                .with_conn(&mut |c| c.query_one("SHOW random_page_cost", &[])?.text(0))
                .unwrap()
        };
        assert_eq!(price(&url), RANDOM_PAGE_COST.to_string());
        // Set by the operator (here in the URL's options): kept.
        assert_eq!(
            price(&format!("{url}{sep}options=-c%20random_page_cost%3D2.5")),
            "2.5"
        );
    }

    #[test]
    fn replicas_are_probed_by_index_under_a_generic_plan() {
        use crate::store::Store;
        use crate::store::db::Batch;
        use crate::work::campaign::NewCampaign;
        let Some(store) = crate::store::conformance::postgres_store("generic_replicas_plan") else {
            return;
        };
        store
            .create_campaign(
                &NewCampaign::new(1, 2, None, (0..960).collect()).unwrap(),
                0,
            )
            .unwrap();
        let worker = store.register_worker("w", b"h", "e", 0).unwrap();
        // A batch of 256, the protocol's largest.
        let ids: Vec<u64> = (1..=256).collect();
        let plans = store
            .with_tx(&mut |tx| {
                let abandoned = |per_workunit: u32, workunits: u32| {
                    // Abandoned replicas: outside the unique index of live ones.
                    format!(
                        "INSERT INTO results (workunit_id, worker_id, state, issued_ms, deadline_ms)
                         SELECT w.id, {worker}, 3, 0, 0 FROM workunits w, generate_series(1, {per_workunit})
                         WHERE w.id <= {workunits}"
                    )
                };
                tx.exec(&abandoned(2, 960), &[])?;
                // An id named twice gives its rows once, as with IN.
                let count = |ids: &[u64]| -> StoreResult<u64> {
                    let mut b = Batch::new(Dialect::Postgres);
                    let from = b.rows_where_in("results", "workunit_id", ids, "r");
                    tx.query_one(&format!("SELECT COUNT(*) FROM {from}"), &b.params())?
                        .u64(0)
                };
                assert_eq!(count(&[1, 2, 1, 2, 1])?, 4);
                tx.exec("SET LOCAL plan_cache_mode = force_generic_plan", &[])?;
                // At PostgreSQL's own price of a random read (a server whose operator kept it:
                // the store's sessions use RANDOM_PAGE_COST otherwise), where the IN list
                // degrades; at 1.1 the planner probes it too, some runs and not others.
                tx.exec("SET LOCAL random_page_cost = 4", &[])?;
                let select = "SELECT r.workunit_id, r.id, o.trusted FROM";
                let join = "JOIN workers o ON o.id = r.worker_id";
                let order = "ORDER BY r.workunit_id, r.id";
                // The ids as an IN list of placeholders, one per id.
                let by_in = format!(
                    "{select} results r {join} WHERE r.workunit_id IN ({}) {order}",
                    (1..=ids.len()).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
                );
                let mut b = Batch::new(Dialect::Postgres);
                let from = b.rows_where_in("results", "workunit_id", &ids, "r");
                let by_probe = dollar_placeholders(&format!("{select} {from} {join} {order}"));
                let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
                let statements = [
                    ("by_in", vec!["BIGINT"; ids.len()].join(", "), by_in, ids.join(", ")),
                    ("by_probe", "BIGINT[]".to_string(), by_probe, format!("'{{{}}}'", ids.join(","))),
                ];
                let explain = |name: &str, args: &str| -> StoreResult<String> {
                    Ok(tx
                        .query(&format!("EXPLAIN EXECUTE {name} ({args})"), &[])?
                        .iter()
                        .map(|r| r.text(0))
                        .collect::<StoreResult<Vec<_>>>()?
                        .join("\n"))
                };
                let mut plans = Vec::new();
                for (name, types, sql, args) in &statements {
                    tx.exec(&format!("PREPARE {name} ({types}) AS {sql}"), &[])?;
                    plans.push(explain(name, args)?);
                }
                tx.exec(&abandoned(20, 960), &[])?;
                for (name, _, _, args) in &statements {
                    plans.push(explain(name, args)?);
                    tx.exec(&format!("DEALLOCATE {name}"), &[])?;
                }
                Ok(plans)
            })
            .unwrap();
        // plans: the list and the probes with 1,920 results, then both with 21,120.
        let probes = "Index Cond: (workunit_id = ";
        for plan in [&plans[1], &plans[3]] {
            assert!(
                plan.contains(probes),
                "the probes under a generic plan:\n{plan}"
            );
        }
        assert!(
            !plans[2].contains(probes),
            "the IN list under a generic plan reads by another index or the whole table:\n{}",
            plans[2]
        );
    }
}
