//! Taking SQLite's one database-wide write lock, waiting as the acquisition
//! says: through hierlock's busy handler where the pool has it, else with
//! the connection's busy timeout set for the attempt and restored after.

use sea_orm::{ConnectionTrait, Statement};

use super::is_missing_lock_wait_function;
use super::waits::{Limit, Registration};
use crate::backend::run::Run;
use crate::config::{TableName, Wait};
use crate::error::{Error, Result};

/// SQLite's write lock. On a connection with hierlock's busy handler
/// (see `hierlock::sqlite`) the lock statement names this acquisition's
/// registered wait, which the handler follows and ends as soon as the
/// registration is dropped (with this future, if it is dropped): no
/// setting changes. Without the handler the statement fails to prepare
/// (its SQL function is missing), and the wait is the connection's busy
/// timeout, set for the attempt and restored after.
pub(crate) async fn take_write_lock(
    run: &mut Run<'_, impl ConnectionTrait>,
    table: &TableName,
) -> Result<()> {
    let limit = match (run.wait, run.deadline) {
        (Wait::NoWait, _) => Limit::Now,
        (_, Some(deadline)) => Limit::Until(deadline.into_std()),
        (_, None) => Limit::BusyTimeout,
    };
    let registration = Registration::new(limit);
    let stmt = run
        .dialect
        .sqlite_watched_write_lock_statement(table, registration.token());
    tracing::trace!(sql = %stmt.sql, "hierlock lock statement");
    match run.conn.query_all_raw(stmt).await {
        Ok(_) => {
            run.statements += 1;
            Ok(())
        }
        Err(e) if is_missing_lock_wait_function(&e) => {
            drop(registration);
            let restore = set_busy_timeout(run).await?;
            let stmt = run.dialect.sqlite_write_lock_statement(table);
            let outcome = run.query(stmt, false, None).await.map(drop);
            restore_wait(run, restore, outcome).await
        }
        Err(e) => {
            run.statements += 1;
            Err(run.conflict(e, false))
        }
    }
}

/// How to put a connection's lock wait back after an attempt.
enum Restore {
    Nothing,
    Statement(Statement),
}

/// On a SQLite connection without hierlock's busy handler, the lock wait
/// is the connection's busy timeout: read it, then set it for the
/// attempt. (Not on a connection with the handler: setting the busy
/// timeout replaces any busy handler.)
async fn set_busy_timeout(run: &mut Run<'_, impl ConnectionTrait>) -> Result<Restore> {
    let millis = match run.statement_wait(false)? {
        Wait::Block => return Ok(Restore::Nothing),
        Wait::NoWait => 0,
        // SQLite takes an int: at most about 24.8 days.
        Wait::Timeout(d) => d.as_millis().clamp(1, i32::MAX as u128),
    };
    let read = run.dialect.sqlite_busy_timeout_statement(None);
    let saved: i64 = match run.conn.query_one_raw(read).await {
        Ok(Some(row)) => row
            .try_get_by_index(0)
            .map_err(|e| Error::database("reading the busy timeout", e))?,
        Ok(None) => 0,
        Err(e) => return Err(Error::database("reading the busy timeout", e)),
    };
    let set = run.dialect.sqlite_busy_timeout_statement(Some(millis));
    run.exec(set, "setting the busy timeout").await?;
    let saved = u128::try_from(saved).unwrap_or(0);
    Ok(Restore::Statement(
        run.dialect.sqlite_busy_timeout_statement(Some(saved)),
    ))
}

/// Undo [`set_busy_timeout`]; the lock failure, if any, is the error worth reporting.
async fn restore_wait(
    run: &mut Run<'_, impl ConnectionTrait>,
    restore: Restore,
    outcome: Result<()>,
) -> Result<()> {
    let Restore::Statement(stmt) = restore else {
        return outcome;
    };
    let restored = run.exec(stmt, "restoring the lock wait timeout").await;
    if let Err(e) = &restored {
        tracing::warn!(error = %e, "hierlock could not restore the lock wait timeout");
    }
    outcome.and(restored)
}
