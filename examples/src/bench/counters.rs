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
//! server's configuration, so on PostgreSQL statements are not counted, and
//! it says so.

use std::collections::HashMap;

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
    let names = COUNTERS.map(|n| format!("'{n}'")).join(", ");
    let sql = format!("SHOW SESSION STATUS WHERE Variable_name IN ({names})");
    let rows = db
        .query_all_raw(Statement::from_string(bench.dialect.backend(), sql))
        .await?;
    let mut counters = HashMap::new();
    for row in rows {
        let name: String = row.try_get_by_index(0)?;
        let value: String = row.try_get_by_index(1)?;
        if let Some(&known) = COUNTERS.iter().find(|c| c.eq_ignore_ascii_case(&name)) {
            counters.insert(known, value.parse()?);
        }
    }
    for name in COUNTERS {
        if !counters.contains_key(name) {
            return Err(format!("the server's session status has no {name}").into());
        }
    }
    Ok(counters)
}
