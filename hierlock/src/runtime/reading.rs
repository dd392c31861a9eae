//! Locks and the rows they protect, read in one acquisition:
//! [`Locker::acquire_reading`].

use sea_orm::sea_query::Expr;
use sea_orm::{
    DatabaseTransaction, DbBackend, EntityTrait, FromQueryResult, Iterable, QuerySelect,
    QueryTrait, Select,
};

use super::acquire::{Leased, LockSet, Locker};
use crate::backend::row_read::{LOCK_COLUMNS, RowRead};
use crate::backend::run::describe_requests;
use crate::config::Wait;
use crate::error::{Error, Result, TxnState};
use crate::model::plan::LockPlan;
use crate::model::target::Request;

impl Locker {
    /// [`Locker::acquire`], then `rows` read once every lock is held: the
    /// locks and the rows the transaction is about to check and write, as
    /// `SELECT … FOR UPDATE` gives them.
    ///
    /// On MySQL and MariaDB the read is the last part of the lock statement
    /// itself, sent after its locks are granted: an acquisition and its read
    /// are one round trip, one statement fewer than `acquire` then SeaORM's
    /// `all`, which is what makes a transaction on a hot key as fast as one
    /// that locks its rows with `FOR UPDATE` (see
    /// [benchmarks](crate::guide::benchmarks)). The read is a plain read,
    /// run after any wait: it sees what the transactions that held the
    /// locks before committed, and locks no row of `E` (the bucket locks
    /// exclude other hierlock users; a row that does not exist yet is not
    /// gap-locked, so two transactions inserting rows near each other do not
    /// deadlock). On PostgreSQL and SQLite, whose statements read as of
    /// their start, before a wait, the read is SeaORM's own statement sent
    /// after the acquisition.
    ///
    /// `rows` is any `E::find()` with its filters, joins and limit; its
    /// columns are `E`'s (a column list chosen with `select_only` or
    /// `column_as` is replaced by them). The rows come in no particular
    /// order.
    ///
    /// As with `acquire` and a read of your own, the rows are current only
    /// if the transaction has not read before (under `REPEATABLE READ` its
    /// first plain read fixes what all later ones see): lock first. On
    /// PostgreSQL use `READ COMMITTED`, its default: under `REPEATABLE
    /// READ` the lock statement itself takes the snapshot, before its wait
    /// (see [how it works](crate::guide::how_it_works)).
    ///
    /// ```no_run
    /// # use hierlock::sea_orm::{self, entity::prelude::*};
    /// # mod resource {
    /// #     use hierlock::sea_orm::entity::prelude::*;
    /// #     #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    /// #     #[sea_orm(table_name = "resources")]
    /// #     pub struct Model { #[sea_orm(primary_key)] pub id: i64, pub balance: i64 }
    /// #     #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    /// #     pub enum Relation {}
    /// #     impl ActiveModelBehavior for ActiveModel {}
    /// # }
    /// # async fn demo(locker: hierlock::Locker, txn: sea_orm::DatabaseTransaction) -> Result<(), hierlock::Error> {
    /// use hierlock::Target;
    ///
    /// let (locks, rows) = locker
    ///     .acquire_reading(
    ///         &txn,
    ///         [Target::resource(1, 10, 100).write(), Target::resource(1, 10, 101).write()],
    ///         resource::Entity::find().filter(resource::Column::Id.is_in([100, 101])),
    ///     )
    ///     .await?;
    /// assert_eq!(locks.statements(), 1); // on MySQL and MariaDB, uncontended
    /// # drop(rows); Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Locker::acquire`]. A read that fails (a missing column, a
    /// lost connection) is [`Error::Database`] (or [`Error::ConnectionLost`]);
    /// the locks may be held (MySQL and MariaDB:
    /// [`TxnState::PartiallyLocked`]; PostgreSQL: [`TxnState::Aborted`]):
    /// roll the transaction back.
    pub async fn acquire_reading<'t, E, R>(
        &self,
        txn: &'t DatabaseTransaction,
        requests: impl IntoIterator<Item = R>,
        rows: Select<E>,
    ) -> Result<(LockSet<'t>, Vec<E::Model>)>
    where
        E: EntityTrait,
        R: Into<Request>,
    {
        self.acquire_reading_with(txn, requests, rows, self.config().wait())
            .await
    }

    /// [`Locker::acquire_reading`], waiting as `wait` says.
    ///
    /// # Errors
    /// As [`Locker::acquire_reading`], and [`Error::InvalidConfig`] for a
    /// zero timeout.
    pub async fn acquire_reading_with<'t, E, R>(
        &self,
        txn: &'t DatabaseTransaction,
        requests: impl IntoIterator<Item = R>,
        rows: Select<E>,
        wait: Wait,
    ) -> Result<(LockSet<'t>, Vec<E::Model>)>
    where
        E: EntityTrait,
        R: Into<Request>,
    {
        let requests: Vec<Request> = requests.into_iter().map(Into::into).collect();
        let plan = self.plan(&requests)?;
        self.acquire_planned_reading(txn, requests, plan, wait, rows)
            .await
    }

    /// [`Locker::acquire_reading_with`] of `plan`, made for `requests`.
    pub(crate) async fn acquire_planned_reading<'t, E: EntityTrait>(
        &self,
        txn: &'t DatabaseTransaction,
        requests: Vec<Request>,
        plan: LockPlan,
        wait: Wait,
        rows: Select<E>,
    ) -> Result<(LockSet<'t>, Vec<E::Model>)> {
        // Described only when a read fails.
        let doing = |requests: &[Request]| {
            format!("reading the rows locked by {}", describe_requests(requests))
        };
        if !self.reads_in_lock_statement() || plan.is_empty() {
            let locks = self.acquire_planned(txn, requests, plan, wait).await?;
            let read = rows.select_only().columns(E::Column::iter()).all(txn).await;
            let state = match self.dialect() {
                crate::Dialect::Postgres => TxnState::Aborted,
                _ if locks.plan().is_empty() => TxnState::Unchanged,
                _ => TxnState::PartiallyLocked,
            };
            let read = read.map_err(|e| Error::database_in(doing(locks.requests()), e, state))?;
            return Ok((locks, read));
        }
        let read = row_read::<E>(rows, self.config().table().as_str());
        let (held, found) = self
            .lock_planned(txn, requests, plan, wait, Leased::Yes, Some(read))
            .await?;
        let models = found
            .iter()
            .map(|row| E::Model::from_query_result(row, ""))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::database_in(doing(&held.requests), e, TxnState::PartiallyLocked))?;
        Ok((LockSet::new(txn, held), models))
    }
}

/// `rows` as the read of a MySQL-family lock statement on `lock_table`: a
/// `NULL` for each lock column, then `E`'s columns.
fn row_read<E: EntityTrait>(rows: Select<E>, lock_table: &str) -> RowRead {
    let mut select = rows.select_only();
    for _ in 0..LOCK_COLUMNS {
        select = select.expr(Expr::cust("NULL"));
    }
    let select = select.columns(E::Column::iter());
    let columns = E::Column::iter()
        .map(|column| sea_orm::IdenStatic::as_str(&column).to_owned())
        .collect();
    RowRead::new(select.build(DbBackend::MySql), columns, lock_table)
}
