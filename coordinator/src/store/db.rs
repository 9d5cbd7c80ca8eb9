//! The small database interface the store's logic ([`super::sql`]) is written against, so that
//! every rule exists once and both backends run it: statements with `?N` placeholders (the
//! PostgreSQL backend rewrites them to `$N`), parameters and rows as [`Value`]s.
//!
//! The SQL in [`super::sql`] is the common subset of SQLite and PostgreSQL (`RETURNING`,
//! `ON CONFLICT ... DO UPDATE`, `FILTER`, `NULLS FIRST`, `IS NOT DISTINCT FROM`, `CAST`); the
//! few differences (row locks) come from [`Dialect`].

use super::{StoreError, StoreResult};

/// A parameter or column value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// Any integer (every integer column is 64-bit).
    I64(i64),
    /// A boolean (SQLite stores it as 0/1).
    Bool(bool),
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
    /// A one-dimensional array of the values above: a batch's column on PostgreSQL (see
    /// [`Batch`]). SQLite has no arrays and refuses it.
    Array(Vec<Value>),
}

/// Something that binds as a parameter.
pub trait Param {
    /// The value bound.
    fn value(&self) -> Value;
}

macro_rules! int_param {
    ($($t:ty),*) => {$(
        impl Param for $t {
            fn value(&self) -> Value {
                Value::I64(i64::from(*self))
            }
        }
    )*};
}
int_param!(i64, i32, u32, u16, u8);

impl Param for bool {
    fn value(&self) -> Value {
        Value::Bool(*self)
    }
}
impl Param for str {
    fn value(&self) -> Value {
        Value::Text(self.to_string())
    }
}
impl Param for String {
    fn value(&self) -> Value {
        Value::Text(self.clone())
    }
}
impl Param for [u8] {
    fn value(&self) -> Value {
        Value::Blob(self.to_vec())
    }
}
impl Param for Vec<u8> {
    fn value(&self) -> Value {
        Value::Blob(self.clone())
    }
}
impl<const N: usize> Param for [u8; N] {
    fn value(&self) -> Value {
        Value::Blob(self.to_vec())
    }
}
impl<T: Param + ?Sized> Param for &T {
    fn value(&self) -> Value {
        (**self).value()
    }
}
impl<T: Param> Param for Option<T> {
    fn value(&self) -> Value {
        self.as_ref().map_or(Value::Null, Param::value)
    }
}

/// `params![a, b, ...]`: a parameter list for [`Conn`].
macro_rules! params {
    () => { &[] as &[&dyn $crate::store::db::Param] };
    ($($p:expr),+ $(,)?) => { &[$(&$p as &dyn $crate::store::db::Param),+] as &[&dyn $crate::store::db::Param] };
}
pub(crate) use params;

/// One result row.
#[derive(Clone, Debug, Default)]
pub struct Row(pub Vec<Value>);

fn bad(i: usize, want: &str, got: &Value) -> StoreError {
    StoreError::Db(format!("column {i}: expected {want}, found {got:?}"))
}

impl Row {
    fn at(&self, i: usize) -> StoreResult<&Value> {
        self.0
            .get(i)
            .ok_or_else(|| StoreError::Db(format!("no column {i}")))
    }

    /// An integer column (NULL is an error).
    pub fn i64(&self, i: usize) -> StoreResult<i64> {
        self.opt_i64(i)?
            .ok_or_else(|| StoreError::Db(format!("column {i} is NULL")))
    }

    /// A nullable integer column.
    pub fn opt_i64(&self, i: usize) -> StoreResult<Option<i64>> {
        match self.at(i)? {
            Value::Null => Ok(None),
            Value::I64(v) => Ok(Some(*v)),
            Value::Bool(b) => Ok(Some(i64::from(*b))),
            v => Err(bad(i, "an integer", v)),
        }
    }

    /// A u64 stored bit-for-bit in an integer column.
    pub fn u64(&self, i: usize) -> StoreResult<u64> {
        Ok(super::codes::db_to_u64(self.i64(i)?))
    }

    /// A boolean: a PostgreSQL boolean or a SQLite integer (non-zero is true).
    pub fn bool(&self, i: usize) -> StoreResult<bool> {
        match self.at(i)? {
            Value::Bool(b) => Ok(*b),
            Value::I64(v) => Ok(*v != 0),
            v => Err(bad(i, "a boolean", v)),
        }
    }

    /// A text column (NULL is an error).
    pub fn text(&self, i: usize) -> StoreResult<String> {
        self.opt_text(i)?
            .ok_or_else(|| StoreError::Db(format!("column {i} is NULL")))
    }

    /// A nullable text column.
    pub fn opt_text(&self, i: usize) -> StoreResult<Option<String>> {
        match self.at(i)? {
            Value::Null => Ok(None),
            Value::Text(s) => Ok(Some(s.clone())),
            v => Err(bad(i, "text", v)),
        }
    }

    /// A bytes column (NULL is an error).
    pub fn blob(&self, i: usize) -> StoreResult<Vec<u8>> {
        self.opt_blob(i)?
            .ok_or_else(|| StoreError::Db(format!("column {i} is NULL")))
    }

    /// A nullable bytes column.
    pub fn opt_blob(&self, i: usize) -> StoreResult<Option<Vec<u8>>> {
        match self.at(i)? {
            Value::Null => Ok(None),
            Value::Blob(b) => Ok(Some(b.clone())),
            v => Err(bad(i, "bytes", v)),
        }
    }
}

/// Which SQL dialect a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite: one writer at a time (`BEGIN IMMEDIATE`), so no row locks.
    Sqlite,
    /// PostgreSQL: several coordinators at once, so rows are locked where decisions are made.
    Postgres,
}

impl Dialect {
    /// The row lock of a `SELECT` that decides on the rows it reads (`FOR UPDATE`).
    pub fn for_update(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE",
        }
    }

    /// The index the assignment query walks, named where the planner needs it: without
    /// statistics SQLite would pick `workunits_campaign`, which also walks a campaign's
    /// workunits that have every replica out; PostgreSQL plans from its statistics.
    pub fn ready_index(self) -> &'static str {
        match self {
            Dialect::Sqlite => " INDEXED BY workunits_ready_by_campaign",
            Dialect::Postgres => "",
        }
    }

    /// What refreshes the planner's statistics after a campaign added its workunits in bulk:
    /// PostgreSQL plans from statistics, and with those of an empty database it walks every
    /// result of a worker for each workunit it considers (autovacuum would catch up only a
    /// minute later). SQLite plans from its indexes (see [`Dialect::ready_index`]).
    pub fn refresh_statistics(self) -> Option<&'static str> {
        match self {
            Dialect::Sqlite => None,
            Dialect::Postgres => Some("ANALYZE workunits, results, workers"),
        }
    }

    /// The row lock of the assignment query: workunits another coordinator is handing out
    /// right now are skipped, not waited for.
    pub fn skip_locked(self, table: &str) -> String {
        match self {
            Dialect::Sqlite => String::new(),
            Dialect::Postgres => format!(" FOR UPDATE OF {table} SKIP LOCKED"),
        }
    }
}

/// The parameters of one statement over a batch of rows, and the placeholders that bind them:
/// a batch of 256 results is then a few statements, not a few per result (a round trip each
/// on PostgreSQL).
///
/// On PostgreSQL each column of a batch is one array parameter (`unnest` turns the arrays back
/// into rows), so a statement's text is the same whatever the batch's size: each connection
/// parses and prepares it once, and planning it does not grow with the batch. (With a
/// placeholder per value, a batch of 256 results was a statement of 2,048 parameters, planned
/// again on most executions.) SQLite binds a placeholder per value, and its lists are padded
/// with NULLs to a power of two, so that the statements it caches stay few whatever the batch
/// sizes; a NULL matches no row.
///
/// ```text
/// SQLite:     WITH v(id, o) AS (VALUES (?1, ?2), (?3, ?4)) UPDATE results SET outcome = v.o FROM v WHERE results.id = v.id
/// PostgreSQL: WITH v(id, o) AS (SELECT * FROM unnest(CAST(?1 AS BIGINT[]), CAST(?2 AS BIGINT[]))) UPDATE ...
/// ```
pub struct Batch {
    dialect: Dialect,
    values: Vec<Value>,
}

/// The SQL type of a column of [`Batch::rows`]: PostgreSQL infers no type for a parameter in
/// `VALUES` or `unnest`, so it is cast there; SQLite keeps the bound value's type.
#[derive(Clone, Copy, Debug)]
pub enum SqlType {
    /// `BIGINT`.
    BigInt,
    /// `BYTEA` (a SQLite blob).
    Bytes,
    /// `TEXT`.
    Text,
}

impl SqlType {
    fn name(self) -> &'static str {
        match self {
            SqlType::BigInt => "BIGINT",
            SqlType::Bytes => "BYTEA",
            SqlType::Text => "TEXT",
        }
    }
}

impl Batch {
    /// An empty parameter list.
    pub fn new(dialect: Dialect) -> Batch {
        Batch {
            dialect,
            values: Vec::new(),
        }
    }

    /// Binds one value; returns its placeholder.
    pub fn param(&mut self, v: impl Param) -> String {
        self.values.push(v.value());
        format!("?{}", self.values.len())
    }

    /// Binds `values` as one array of `ty` (PostgreSQL); returns the typed placeholder.
    fn array(&mut self, values: Vec<Value>, ty: SqlType) -> String {
        let p = self.param(Value::Array(values));
        format!("CAST({p} AS {}[])", ty.name())
    }

    /// The rest of a predicate that holds for a column equal to one of `ids`:
    /// `IN (?a, ?b, ...)` on SQLite, `= ANY(CAST(?a AS BIGINT[]))` on PostgreSQL.
    ///
    /// ```text
    /// format!("UPDATE workunits SET check_state = {CHECK_WANTED} WHERE id {}", b.in_ids(&ids))
    /// ```
    pub fn in_ids(&mut self, ids: &[u64]) -> String {
        let id = |id: u64| Value::I64(super::codes::u64_to_db(id));
        match self.dialect {
            Dialect::Sqlite => {
                let out: Vec<String> = (0..padded(ids.len()))
                    .map(|i| self.param(ids.get(i).map_or(Value::Null, |&v| id(v))))
                    .collect();
                format!("IN ({})", out.join(", "))
            }
            Dialect::Postgres => {
                let array = self.array(ids.iter().map(|&v| id(v)).collect(), SqlType::BigInt);
                format!("= ANY({array})")
            }
        }
    }

    /// A `FROM` item: the rows of `table` whose `column` is one of `ids`, named `alias`, for a
    /// column that is not unique. On PostgreSQL each id is its own index probe (a `LATERAL`
    /// subquery fenced with `OFFSET 0`, so that the planner cannot flatten it into a join).
    /// As `column IN (...)`, a connection that had run the statement five times could switch
    /// to a generic plan, made while the table was small, that reads every row (a seq scan, or
    /// every result of every worker); it keeps that plan while the table grows (the results
    /// of a running campaign), and on a store benchmark with 4 connections per coordinator
    /// this one lookup took 60 % of the database's CPU. A probe stays a probe once the table
    /// is more than a few pages (`replicas_are_probed_by_index_under_a_generic_plan`). SQLite
    /// takes `IN` to its index itself. An id named twice gives its rows once, as with `IN`
    /// (a replica read twice would be a second vote).
    pub fn rows_where_in(&mut self, table: &str, column: &str, ids: &[u64], alias: &str) -> String {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let ids = &ids;
        match self.dialect {
            Dialect::Sqlite => {
                let in_ids = self.in_ids(ids);
                format!("(SELECT * FROM {table} WHERE {column} {in_ids}) AS {alias}")
            }
            Dialect::Postgres => {
                let keys = self.rows(
                    &[SqlType::BigInt],
                    ids.iter()
                        .map(|&id| vec![Value::I64(super::codes::u64_to_db(id))])
                        .collect(),
                );
                format!(
                    "({keys}) AS {alias}_keys(key) CROSS JOIN LATERAL \
                     (SELECT * FROM {table} WHERE {column} = {alias}_keys.key OFFSET 0) AS {alias}"
                )
            }
        }
    }

    /// A query giving `rows` (each of `types.len()` values), for `WITH v(...) AS (...)`:
    /// `VALUES (...), (...)` padded with rows of NULLs on SQLite, `SELECT * FROM unnest(...)`
    /// of one array per column on PostgreSQL.
    pub fn rows(&mut self, types: &[SqlType], rows: Vec<Vec<Value>>) -> String {
        match self.dialect {
            Dialect::Sqlite => {
                let n = padded(rows.len());
                let mut out = Vec::with_capacity(n);
                let mut rows = rows.into_iter();
                for _ in 0..n {
                    let row = rows.next().unwrap_or_default();
                    debug_assert!(row.is_empty() || row.len() == types.len());
                    let mut row = row.into_iter();
                    let cells: Vec<String> = types
                        .iter()
                        .map(|_| self.param(row.next().unwrap_or(Value::Null)))
                        .collect();
                    out.push(format!("({})", cells.join(", ")));
                }
                format!("VALUES {}", out.join(", "))
            }
            Dialect::Postgres => {
                let mut columns: Vec<Vec<Value>> =
                    vec![Vec::with_capacity(rows.len()); types.len()];
                for row in rows {
                    debug_assert_eq!(row.len(), types.len());
                    for (column, v) in columns.iter_mut().zip(row) {
                        column.push(v);
                    }
                }
                let arrays: Vec<String> = columns
                    .into_iter()
                    .zip(types)
                    .map(|(column, &ty)| self.array(column, ty))
                    .collect();
                format!("SELECT * FROM unnest({})", arrays.join(", "))
            }
        }
    }

    /// The parameters bound so far, for [`Conn`].
    pub fn params(&self) -> Vec<&dyn Param> {
        self.values.iter().map(|v| v as &dyn Param).collect()
    }
}

/// A node count as the two 32-bit halves the credit columns sum (exact for any u64 count).
pub fn credit_halves(nodes: u64) -> (i64, i64) {
    ((nodes >> 32) as i64, (nodes & 0xFFFF_FFFF) as i64)
}

/// The size a list of `n` is padded to: the next power of two (at least 1).
fn padded(n: usize) -> usize {
    n.max(1).next_power_of_two()
}

/// A connection (inside a transaction, where the logic writes).
pub trait Conn {
    /// The dialect.
    fn dialect(&self) -> Dialect;
    /// Runs a statement; returns the rows it changed.
    fn exec(&self, sql: &str, params: &[&dyn Param]) -> StoreResult<u64>;
    /// Runs a query and collects its rows.
    fn query(&self, sql: &str, params: &[&dyn Param]) -> StoreResult<Vec<Row>>;
    /// Runs a query and hands each row to `f` without collecting them.
    fn each(
        &self,
        sql: &str,
        params: &[&dyn Param],
        f: &mut dyn FnMut(Row) -> StoreResult<()>,
    ) -> StoreResult<()>;
    /// The time the transaction decides by: the caller's clock on SQLite (one process), the
    /// database's clock on PostgreSQL (several coordinators whose clocks may differ), unless
    /// the store was opened with the caller's clock (tests).
    fn now_ms(&self, caller_ms: i64) -> StoreResult<i64>;

    /// Records a worker's vote on a result just graded: one more `valid` result (`good`), with
    /// its `nodes` added to the worker's credit (migration 15), or one more lost vote. By
    /// default at once; a transaction that settles many results defers these to its end
    /// ([`super::sql::deferring`]), so that other workers' rows are locked last, briefly and
    /// in id order.
    fn count_vote(&self, worker_id: u64, good: bool, nodes: u64) -> StoreResult<()> {
        let id = super::codes::u64_to_db(worker_id);
        if good {
            let (hi, lo) = credit_halves(nodes);
            self.exec(
                "UPDATE workers SET valid = valid + 1, credit_results = credit_results + 1,
                   credit_nodes_hi = credit_nodes_hi + ?2, credit_nodes_lo = credit_nodes_lo + ?3 WHERE id = ?1",
                params![id, hi, lo],
            )?;
        } else {
            self.exec(
                "UPDATE workers SET lost_votes = lost_votes + 1 WHERE id = ?1",
                params![id],
            )?;
        }
        Ok(())
    }

    /// Writes the vote counts deferred so far (before a statement that reads or clamps them).
    fn flush_deferred(&self) -> StoreResult<()> {
        Ok(())
    }

    /// The first row of a query, if any.
    fn query_opt(&self, sql: &str, params: &[&dyn Param]) -> StoreResult<Option<Row>> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// Exactly one row.
    fn query_one(&self, sql: &str, params: &[&dyn Param]) -> StoreResult<Row> {
        self.query_opt(sql, params)?
            .ok_or_else(|| StoreError::Db(format!("no row: {sql}")))
    }
}

/// A backend: how to get a transaction or a read-only connection. The [`super::Store`] trait is
/// implemented once, in [`super::sql`], for every backend.
pub trait Backend: Send + Sync {
    /// Runs `f` in one write transaction and commits it (PostgreSQL: again from the start when
    /// the database aborted it for a deadlock or a serialization failure, so `f` is `FnMut`).
    fn with_tx<T>(&self, f: &mut dyn FnMut(&dyn Conn) -> StoreResult<T>) -> StoreResult<T>;
    /// Runs `f` on a connection for reads that need no transaction of their own.
    fn with_conn<T>(&self, f: &mut dyn FnMut(&dyn Conn) -> StoreResult<T>) -> StoreResult<T>;
    /// Runs `f` in one read-only snapshot that neither waits for writers nor blocks them: long
    /// exports, and the pages and status, which must answer while workers keep the writer busy.
    fn with_reader<T>(&self, f: &mut dyn FnMut(&dyn Conn) -> StoreResult<T>) -> StoreResult<T>;
    /// Since when the database's disk has been full, if it was at the last write.
    fn storage_full_since(&self) -> Option<i64>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch_sql(dialect: Dialect, n: u64) -> (String, usize) {
        let mut b = Batch::new(dialect);
        let ids: Vec<u64> = (1..=n).collect();
        let in_ids = b.in_ids(&ids);
        let rows = b.rows(
            &[SqlType::BigInt, SqlType::Bytes],
            ids.iter()
                .map(|&id| vec![Value::I64(id as i64), Value::Blob(vec![1])])
                .collect(),
        );
        (format!("{in_ids} | {rows}"), b.params().len())
    }

    #[test]
    fn postgres_batches_are_one_statement_whatever_their_size() {
        let (three, params) = batch_sql(Dialect::Postgres, 3);
        assert_eq!(batch_sql(Dialect::Postgres, 256).0, three);
        assert_eq!(params, 3, "one array per list and per column");
        assert_eq!(
            three,
            "= ANY(CAST(?1 AS BIGINT[])) | SELECT * FROM unnest(CAST(?2 AS BIGINT[]), CAST(?3 AS BYTEA[]))"
        );
    }

    #[test]
    fn sqlite_batches_are_padded_to_a_power_of_two() {
        let (three, params) = batch_sql(Dialect::Sqlite, 3);
        assert_eq!(params, 4 + 4 * 2);
        assert_eq!(batch_sql(Dialect::Sqlite, 4).0, three);
        assert_ne!(batch_sql(Dialect::Sqlite, 5).0, three);
        assert!(
            three.starts_with("IN (?1, ?2, ?3, ?4) | VALUES (?5, ?6)"),
            "{three}"
        );
    }
}
