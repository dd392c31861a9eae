//! Statements per transaction, counted by the server itself.
//!
//! MySQL and MariaDB count every statement a session sends in its session
//! status (`Questions`, and per kind `Com_select`, `Com_insert`,
//! `Com_update`). The transactions run on a pool of one connection, between
//! two readings of that connection's counters; the readings' own cost is
//! measured (two readings back to back) and taken off.
//!
//! PostgreSQL has no per-session statement counter: only `pg_stat_statements`,
//! which needs `shared_preload_libraries` and a restart, and counts every
//! session of the database at once. The benchmark does not change the
//! server's configuration, so on PostgreSQL the server's counts are
//! missing, and it says so.
//!
//! [`client_per_txn`] counts on the other side, on every server: the
//! statements SeaORM sends, seen by `DatabaseConnection::set_metric_callback`
//! on a pool of one connection. That callback sees every statement run
//! through the connection or its transactions (hierlock's lock statements
//! included) but not `BEGIN` and `COMMIT`, which SeaORM sends through sqlx's
//! transaction manager: a client count is the statements between the two,
//! where `Questions` is that plus 2.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};

use super::{Bench, BoxError, connect_pool};

/// The counters read, in the order printed.
const COUNTERS: [&str; 4] = ["Questions", "Com_select", "Com_insert", "Com_update"];

/// Statements per transaction, by counter.
pub struct Counted {
    per_txn: Vec<(&'static str, f64)>,
}

impl Counted {
    /// `Questions`: every statement the client sent, `BEGIN` and `COMMIT` included.
    pub fn questions(&self) -> f64 {
        self.per_txn.first().map_or(f64::NAN, |(_, n)| *n)
    }

    /// One line for the report.
    pub fn describe(&self) -> String {
        self.per_txn
            .iter()
            .map(|(name, n)| format!("{name} {n:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Print what the counting measures on this server, `about` the
/// transactions counted; the counts' lines follow where there are any.
pub fn print_header(bench: &Bench, about: &str) {
    if bench.dialect.is_mysql_family() {
        println!(
            "  statements per transaction ({about}), from the server's SHOW SESSION STATUS \
             deltas on one connection (Questions = every statement sent, BEGIN and COMMIT included):"
        );
    } else {
        println!(
            "  statements not counted: PostgreSQL has no per-session statement counter \
             (pg_stat_statements needs shared_preload_libraries and counts all sessions)"
        );
    }
}

/// Run `run(db, i)` for `i` in `0..txns` on one connection of its own and
/// return the server's statement counters per call; `None` where the server
/// has no such counter.
///
/// # Errors
/// A statement failed.
pub async fn per_txn(
    bench: &Bench,
    txns: u64,
    mut run: impl AsyncFnMut(&DatabaseConnection, u64) -> Result<(), BoxError>,
) -> Result<Option<Counted>, BoxError> {
    if !bench.dialect.is_mysql_family() || txns == 0 {
        return Ok(None);
    }
    let db = connect_pool(&bench.url, 1).await?;
    // Warm up: statements prepared once per connection are not counted.
    run(&db, 0).await?;
    let first = read(bench, &db).await?;
    let second = read(bench, &db).await?;
    for i in 0..txns {
        run(&db, i + 1).await?;
    }
    let third = read(bench, &db).await?;
    let per_txn = COUNTERS
        .iter()
        .map(|&name| {
            let reading = (second[name] - first[name]) as f64;
            let delta = (third[name] - second[name]) as f64 - reading;
            (name, delta / txns as f64)
        })
        .collect();
    db.close().await?;
    Ok(Some(Counted { per_txn }))
}

/// The session's counters now.
async fn read(
    bench: &Bench,
    db: &DatabaseConnection,
) -> Result<HashMap<&'static str, i64>, BoxError> {
    status(bench, db, "SESSION", &COUNTERS).await
}

/// The server's status variables `names`, of the session or `GLOBAL`
/// (`scope`): every one must be there.
///
/// # Errors
/// The statement failed, or a variable is missing or not a number.
pub async fn status(
    bench: &Bench,
    db: &DatabaseConnection,
    scope: &str,
    names: &[&'static str],
) -> Result<HashMap<&'static str, i64>, BoxError> {
    let list = names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!("SHOW {scope} STATUS WHERE Variable_name IN ({list})");
    let rows = db
        .query_all_raw(Statement::from_string(bench.dialect.backend(), sql))
        .await?;
    let mut counters = HashMap::new();
    for row in rows {
        let name: String = row.try_get_by_index(0)?;
        let value: String = row.try_get_by_index(1)?;
        if let Some(&known) = names.iter().find(|c| c.eq_ignore_ascii_case(&name)) {
            counters.insert(known, value.parse()?);
        }
    }
    for name in names {
        if !counters.contains_key(name) {
            return Err(format!("the server's {scope} status has no {name}").into());
        }
    }
    Ok(counters)
}

/// Statements per transaction as the client sent them (see
/// [`client_per_txn`]): `BEGIN` and `COMMIT` not included.
pub struct ClientCounted {
    /// Statements sent per transaction, on average.
    pub per_txn: f64,
    /// What the last transaction sent, each statement in short (see [`shape`]).
    pub last: Vec<String>,
}

impl ClientCounted {
    /// One line for the report: the count and the last transaction's statements.
    pub fn describe(&self) -> String {
        format!("{:.2}: {}", self.per_txn, self.last.join("; "))
    }
}

/// Run `run(db, i)` for `i` in `0..txns` on one connection of its own,
/// after one warm-up call, and count the statements SeaORM sent through it
/// per call with its metric callback, on any server.
///
/// # Errors
/// A statement failed, or `txns` is 0.
pub async fn client_per_txn(
    bench: &Bench,
    txns: u64,
    mut run: impl AsyncFnMut(&DatabaseConnection, u64) -> Result<(), BoxError>,
) -> Result<ClientCounted, BoxError> {
    if txns == 0 {
        return Err("no transactions to count statements of".into());
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut db = connect_pool(&bench.url, 1).await?;
    let sink = Arc::clone(&seen);
    db.set_metric_callback(move |info| {
        // A poisoned list (a panic while pushing) only loses the count; the
        // length check below reports it.
        if let Ok(mut seen) = sink.lock() {
            seen.push(shape(&info.statement.sql));
        }
    });
    let sent = || {
        seen.lock()
            .map(|s| s.len())
            .map_err(|_| "statement list poisoned")
    };
    // Warm up as `per_txn` does, so that both count the same transactions.
    run(&db, 0).await?;
    let first = sent()?;
    let mut last_start = first;
    for i in 0..txns {
        last_start = sent()?;
        run(&db, i + 1).await?;
    }
    let end = sent()?;
    db.close().await?;
    let last = seen.lock().map_err(|_| "statement list poisoned")?[last_start..end].to_vec();
    Ok(ClientCounted {
        per_txn: (end - first) as f64 / txns as f64,
        last,
    })
}

/// A statement in short: its first word, and the row or advisory locks it
/// asks for (hierlock's lock statements are long; this says what they do).
/// A `UNION` of parenthesised blocks reads as its first block's word.
fn shape(sql: &str) -> String {
    let mut out = sql
        .trim_start_matches(|c: char| c == '(' || c.is_whitespace())
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_uppercase();
    let upper = sql.to_uppercase();
    for (needle, label) in [
        ("ADVISORY", "advisory locks"),
        ("FOR SHARE", "FOR SHARE"),
        ("LOCK IN SHARE MODE", "LOCK IN SHARE MODE"),
        ("FOR UPDATE", "FOR UPDATE"),
    ] {
        if upper.contains(needle) {
            out.push_str(" … ");
            out.push_str(label);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::shape;

    #[test]
    fn shape_is_the_first_word_and_the_locks_asked_for() {
        assert_eq!(shape("SELECT a FROM t WHERE id = ?"), "SELECT");
        assert_eq!(
            shape("select a from t where id = $1 for update"),
            "SELECT … FOR UPDATE"
        );
        assert_eq!(
            shape(
                "SELECT 1 FROM b WHERE k = ? FOR SHARE UNION ALL SELECT 1 FROM b WHERE k = ? FOR UPDATE"
            ),
            "SELECT … FOR SHARE … FOR UPDATE"
        );
        assert_eq!(
            shape("SELECT pg_try_advisory_xact_lock($1)"),
            "SELECT … advisory locks"
        );
        assert_eq!(shape("UPDATE t SET a = ?"), "UPDATE");
        assert_eq!(
            shape("(SELECT 1 FROM b LOCK IN SHARE MODE) UNION ALL (SELECT 1 FROM b FOR UPDATE)"),
            "SELECT … LOCK IN SHARE MODE … FOR UPDATE"
        );
    }
}
