//! Locks as row locks on the bucket table (MySQL, MariaDB; PostgreSQL with
//! `PostgresLocks::BucketTable`): a plan's statements, in key order, and
//! the check that every planned row was there to lock.

use sea_orm::{ConnectionTrait, QueryResult};

use super::cancel::Canceller;
use super::dialect::Dialect;
use super::postgres::MAX_PROBED_KEYS;
use super::run::Run;
use crate::config::{TableName, Wait};
use crate::error::{Error, ErrorKind, Result, TxnState};
use crate::model::plan::{KeyKind, LockPlan, PlannedLock};

/// Try the plan without waiting; if a row is taken, wait for it (the rows
/// the attempt locked stay locked: a prefix of the plan, in order, which
/// the waiting statements take again). The MySQL family tries with
/// `NOWAIT`; PostgreSQL, whose failed statement would abort the
/// transaction, with `SKIP LOCKED` (see `postgres::bucket_probe`).
pub(crate) async fn take_probing(
    run: &mut Run<'_, impl ConnectionTrait>,
    plan: &LockPlan,
    table: &TableName,
    canceller: &Canceller,
) -> Result<()> {
    if run.wait == Wait::NoWait {
        return take(run, plan, table).await;
    }
    if run.dialect == Dialect::Postgres {
        return take_probing_postgres(run, plan, table, canceller).await;
    }
    let wait = std::mem::replace(&mut run.wait, Wait::NoWait);
    let probe = take(run, plan, table).await;
    run.wait = wait;
    match probe {
        Err(err) if err.kind() == ErrorKind::WouldBlock => {
            run.holds_prefix = plan.locks().len() > 1;
            run.prepare_cancel(canceller).await?;
            take(run, plan, table).await
        }
        other => other,
    }
}

/// PostgreSQL: the plan tried row by row with `SKIP LOCKED`, stopping at
/// the first row taken, in one statement whose row also names the waiter
/// for a cancellation; if a row was taken, the plan taken waiting. Plans
/// past [`MAX_PROBED_KEYS`] rows name the waiter first and wait at once.
async fn take_probing_postgres(
    run: &mut Run<'_, impl ConnectionTrait>,
    plan: &LockPlan,
    table: &TableName,
    canceller: &Canceller,
) -> Result<()> {
    if plan.locks().len() > MAX_PROBED_KEYS {
        run.prepare_cancel(canceller).await?;
        return take(run, plan, table).await;
    }
    let stmt = run
        .dialect
        .bucket_probe_statement(table, plan.locks(), run.lease, canceller.can_cancel());
    let rows = run.query(stmt, plan.locks().len() > 1, None).await?;
    if super::postgres::probe_granted(&rows) {
        return Ok(());
    }
    run.holds_prefix = plan.locks().len() > 1;
    // The attempt's row named the waiter: no round trip of its own.
    run.named(canceller, rows.first())?;
    // It set the lease too, for the rest of the transaction: the
    // statements that wait need not set it again.
    let lease = run.lease.take();
    let taken = take(run, plan, table).await;
    run.lease = lease;
    taken
}

/// The plan's statements (see [`Dialect::split_bucket_plan`](super::dialect::Dialect::split_bucket_plan)), in key
/// order: mixed modes in one statement (on PostgreSQL each row, or each
/// run of equal modes of a large plan, a `WITH` query of it).
async fn take(
    run: &mut Run<'_, impl ConnectionTrait>,
    plan: &LockPlan,
    table: &TableName,
) -> Result<()> {
    let statements = run.dialect.split_bucket_plan(plan.locks());
    let last = statements.len().saturating_sub(1);
    for (i, locks) in statements.into_iter().enumerate() {
        // The read rides on the last statement, once every lock is held.
        let read = run.read.as_ref().filter(|_| i == last);
        let reads = read.is_some();
        let partial = run.holds_prefix || i > 0;
        let wait = run.statement_wait(partial)?;
        let fence = run.fence();
        let stmt = run
            .dialect
            .bucket_lock_statement(table, locks, wait, run.lease, fence.as_ref(), read);
        // Earlier statements, or earlier rows of this one, may hold locks
        // (a statement that also reads holds them when its read fails).
        let partial = partial || locks.len() > 1 || reads;
        // PostgreSQL's timed statement bounds its own waits.
        let server_bound = run.dialect == super::dialect::Dialect::Postgres
            && super::postgres::server_bound(wait).is_some();
        let mut rows = run.query_bounded(stmt, partial, fence, server_bound).await?;
        if reads {
            let (locked, read) = super::row_read::split(rows);
            rows = locked;
            run.read_rows = read;
        }
        if run.dialect.is_mysql_family() && super::mysql::on_read_only(&rows) {
            return Err(run.on_read_only_server().await);
        }
        check_provisioned(table, locks, &rows, partial || !rows.is_empty())?;
    }
    Ok(())
}

/// Fail closed: every planned row must have been returned, hence locked.
fn check_provisioned(
    table: &TableName,
    locks: &[PlannedLock],
    rows: &[QueryResult],
    partial: bool,
) -> Result<()> {
    if rows.len() == locks.len() {
        return Ok(());
    }
    let found: std::collections::HashSet<(i64, i64)> = rows
        .iter()
        .filter_map(|row| {
            Some((
                row.try_get("", "locked_level").ok()?,
                row.try_get("", "locked_bucket").ok()?,
            ))
        })
        .collect();
    let missing = locks
        .iter()
        .find(|lock| !found.contains(&(i64::from(lock.key.table_level()), lock.key.slot)))
        .unwrap_or(&locks[0]);
    let (key, bucket) = (missing.key, missing.key.slot);
    let (row, stripe) = match key.kind {
        KeyKind::Node => (u32::try_from(bucket).ok().map(|b| (key.level, b)), ""),
        KeyKind::Stripe => (None, " stripes"),
    };
    Err(Error::NotProvisioned {
        what: format!(
            "bucket row (level {} = {}{stripe}, bucket {bucket}) of `{}`",
            key.table_level(),
            key.level,
            table
        ),
        row,
        txn_state: if partial {
            TxnState::PartiallyLocked
        } else {
            TxnState::Unchanged
        },
    })
}
