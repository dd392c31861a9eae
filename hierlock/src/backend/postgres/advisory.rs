//! PostgreSQL's transaction-scoped advisory locks: a plan tried key by key
//! without waiting, then taken waiting if a key was held.

use sea_orm::{ConnectionTrait, QueryResult};

use super::{MAX_PROBED_KEYS, on_standby, probe_granted};
use crate::backend::cancel::Canceller;
use crate::backend::run::Run;
use crate::config::Wait;
use crate::error::{Error, Result, TxnState};
use crate::model::plan::LockPlan;


/// Advisory locks: try the plan key by key without waiting (one
/// statement, stopping at the first key taken, whose row also names the
/// backend and transaction for a cancellation); if a key is taken, take
/// the plan, waiting
/// (PostgreSQL's advisory locks are reentrant: the prefix the attempt
/// took is taken again, and released with the transaction).
pub(crate) async fn take_probing(
    run: &mut Run<'_, impl ConnectionTrait>,
    plan: &LockPlan,
    canceller: &Canceller,
) -> Result<()> {
    if run.wait != Wait::NoWait && plan.locks().len() <= MAX_PROBED_KEYS {
        let name_waiter = canceller.can_cancel();
        let stmt = run
            .dialect
            .advisory_probe_statement(plan.locks(), run.lease, name_waiter);
        let rows = run.query(stmt, plan.locks().len() > 1, None).await?;
        if on_standby(&rows) {
            return Err(run.on_standby().await);
        }
        if probe_granted(&rows) {
            return Ok(());
        }
        run.holds_prefix = plan.locks().len() > 1;
        // The attempt's row named the waiter: no round trip of its own.
        run.named(canceller, rows.first())?;
    } else {
        run.prepare_cancel(canceller).await?;
    }
    take(run, plan).await
}

/// The whole plan in one statement (split past
/// [`max_rows_per_statement`](crate::backend::dialect::Dialect::max_rows_per_statement) keys, in
/// order); with no-wait, try-locks that report.
async fn take(run: &mut Run<'_, impl ConnectionTrait>, plan: &LockPlan) -> Result<()> {
    let try_only = run.wait == Wait::NoWait;
    for (i, locks) in plan
        .locks()
        .chunks(run.dialect.max_rows_per_statement())
        .enumerate()
    {
        let partial = i > 0 || locks.len() > 1;
        let bound = super::server_bound(run.statement_wait(partial)?);
        let fence = run.fence();
        let stmt = run
            .dialect
            .advisory_lock_statement(locks, try_only, run.lease, fence.as_ref().map(|f| f.own), bound);
        let rows = run
            .query_bounded(stmt, partial, fence, bound.is_some())
            .await?;
        if on_standby(&rows) {
            return Err(run.on_standby().await);
        }
        if try_only && !all_granted(&rows, locks.len()) {
            return Err(Error::WouldBlock {
                what: run.what(),
                txn_state: TxnState::PartiallyLocked,
                source: None,
            });
        }
    }
    Ok(())
}

/// Whether every column of the try-lock row is `true`.
fn all_granted(rows: &[QueryResult], columns: usize) -> bool {
    rows.first()
        .is_some_and(|row| (0..columns).all(|i| row.try_get_by_index::<bool>(i).unwrap_or(false)))
}
