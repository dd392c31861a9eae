//! The side connection and the cancellations waiting for it: one task sends
//! them, as many as are waiting in one round trip.

use std::sync::{Arc, Mutex};

use sea_orm::{DatabaseConnection, Statement};
use tokio::sync::oneshot;

use super::kept::Kept;
use super::{CANCEL_TIMEOUT, End, server};
use crate::backend::fence::Fence;
use crate::backend::waiter::{self, Waiter};

/// The most cancellations sent in one round trip.
const MAX_BATCH: usize = 64;

/// How to reach the server, and which one it is.
#[derive(Debug)]
pub(super) enum Side {
    #[cfg(feature = "mysql")]
    MySql {
        options: sea_orm::sqlx::mysql::MySqlConnectOptions,
        mariadb: bool,
        /// Whether fences are `GET_LOCK` locks (not where the server
        /// refuses them: some MariaDB Galera releases).
        locking_fences: bool,
    },
    #[cfg(feature = "postgres")]
    Postgres(sea_orm::sqlx::postgres::PgConnectOptions),
}

/// The side connection.
enum Connection {
    #[cfg(feature = "mysql")]
    MySql(sea_orm::sqlx::MySqlConnection),
    #[cfg(feature = "postgres")]
    Postgres(sea_orm::sqlx::PgConnection),
}

/// One cancellation, waiting for its turn.
pub(super) struct Request {
    pub(super) waiter: Waiter,
    pub(super) fence: Fence,
    pub(super) end: End,
    /// Told when the server was asked (or the attempt given up).
    done: Option<oneshot::Sender<()>>,
}

impl Request {
    /// A request whose sender waits for it to be sent.
    pub(super) fn answered(waiter: Waiter, fence: Fence, end: End) -> (Request, oneshot::Receiver<()>) {
        let (done, asked) = oneshot::channel();
        let request = Request {
            waiter,
            fence,
            end,
            done: Some(done),
        };
        (request, asked)
    }

    /// A request nobody waits for.
    pub(super) fn unanswered(waiter: Waiter, fence: Fence, end: End) -> Request {
        Request {
            waiter,
            fence,
            end,
            done: None,
        }
    }
}

/// Cancellations waiting for the side connection.
#[derive(Debug)]
pub(super) struct Queue {
    side: Side,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    pending: Vec<Request>,
    /// Whether the sending task runs; it owns the side connection meanwhile.
    sending: bool,
    /// The side connection, while no task sends.
    idle: Option<Connection>,
    /// The fences connections keep between their statements.
    kept: Kept,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("pending", &self.pending.len())
            .field("sending", &self.sending)
            .field("connected", &self.idle.is_some())
            .field("kept", &self.kept)
            .finish()
    }
}

impl Queue {
    pub(super) fn new(side: Side) -> Arc<Queue> {
        Arc::new(Queue {
            side,
            state: Mutex::new(State::default()),
        })
    }

    pub(super) fn side(&self) -> &Side {
        &self.side
    }

    /// `fence` stays taken on `connection` after its statement (see
    /// [`kept`](super::kept)).
    pub(super) fn keep(&self, connection: i64, fence: Fence) {
        self.state().kept.keep(connection, fence);
    }

    /// The fences kept on `connection` that no cancellation can still reach,
    /// for its next statement that waits to let go (see
    /// [`kept`](super::kept)).
    pub(super) fn releasable(&self, connection: i64) -> Vec<Fence> {
        let mut state = self.state();
        let State { pending, kept, .. } = &mut *state;
        kept.releasable(connection, |fence| pending.iter().any(|r| r.fence == fence))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state stays consistent whatever panicked while holding it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue `request` (with `None`, only make sure the side connection is
    /// open) and start the sending task unless it runs. False if no task can
    /// run (no Tokio runtime).
    pub(super) fn submit(self: &Arc<Queue>, request: Option<Request>) -> bool {
        {
            let mut state = self.state();
            if request.is_none() && (state.sending || state.idle.is_some()) {
                return true;
            }
            state.pending.extend(request);
            if std::mem::replace(&mut state.sending, true) {
                return true;
            }
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(Arc::clone(self).send());
                true
            }
            Err(_) => {
                let mut state = self.state();
                state.sending = false;
                state.pending.clear();
                tracing::warn!("hierlock could not cancel a lock wait: no Tokio runtime");
                false
            }
        }
    }

    /// Send the pending cancellations, a batch per round trip, until none
    /// is left. A task of its own, so that no caller's dropped future can
    /// leave the queue without a sender.
    async fn send(self: Arc<Queue>) {
        let mut sending = Sending(Some(&self));
        let mut conn = self.state().idle.take();
        loop {
            if conn.is_none() {
                conn = self.connect().await;
            }
            let batch: Vec<Request> = {
                let mut state = self.state();
                if state.pending.is_empty() {
                    state.sending = false;
                    state.idle = conn;
                    sending.0 = None;
                    return;
                }
                let take = state.pending.len().min(MAX_BATCH);
                let batch: Vec<Request> = state.pending.drain(..take).collect();
                state.kept.sending(batch.iter().map(|r| r.fence));
                batch
            };
            let mut settled = false;
            // Not connected: the batch is given up (logged by `connect`).
            if let Some(open) = conn.as_mut() {
                let sent = tokio::time::timeout(CANCEL_TIMEOUT, self.side.cancel(open, &batch)).await;
                match sent {
                    Ok(Ok(())) => {
                        tracing::debug!(count = batch.len(), "hierlock cancelled lock waits");
                        settled = true;
                    }
                    Ok(Err(error)) => {
                        tracing::warn!(%error, "hierlock could not cancel a lock wait");
                        conn = None;
                    }
                    Err(_) => {
                        // Dropped mid-statement: closed, not pooled, so
                        // nothing waits on its answer.
                        tracing::warn!("hierlock's lock-wait cancellation timed out");
                        conn = None;
                    }
                }
            } else {
                // Never sent: nothing of it can reach the server.
                settled = true;
            }
            self.state().kept.sent(settled);
            for request in batch {
                if let Some(done) = request.done {
                    let _ = done.send(());
                }
            }
        }
    }

    /// Open the side connection, within [`CANCEL_TIMEOUT`].
    async fn connect(&self) -> Option<Connection> {
        match tokio::time::timeout(CANCEL_TIMEOUT, self.side.connect()).await {
            Ok(Ok(conn)) => Some(conn),
            Ok(Err(error)) => {
                tracing::warn!(%error, "hierlock could not open its cancelling connection");
                None
            }
            Err(_) => {
                tracing::warn!("hierlock's cancelling connection did not open in time");
                None
            }
        }
    }
}

/// Marks the queue as without a sender if the sending task is dropped
/// before it ends (its runtime shut down), so that the next cancellation
/// starts one.
struct Sending<'q>(Option<&'q Queue>);

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        if let Some(queue) = self.0 {
            queue.state().sending = false;
        }
    }
}

impl Side {
    /// The server behind `db`, if it can be asked (an SQLx pool of a server).
    pub(super) fn of(db: &DatabaseConnection, server: super::MySqlServer) -> Option<Side> {
        #[cfg(any(feature = "mysql", feature = "postgres"))]
        use sea_orm::DatabaseConnectionType as Pool;
        let _ = server;
        match &db.inner {
            #[cfg(feature = "mysql")]
            Pool::SqlxMySqlPoolConnection(_) => Some(Side::MySql {
                options: (*db.get_mysql_connection_pool().connect_options()).clone(),
                mariadb: server.mariadb,
                locking_fences: server.get_lock,
            }),
            #[cfg(feature = "postgres")]
            Pool::SqlxPostgresPoolConnection(_) => Some(Side::Postgres(
                (*db.get_postgres_connection_pool().connect_options()).clone(),
            )),
            _ => None,
        }
    }

    /// Whether its fences are locks (see [`Fence`]).
    pub(super) fn locking_fences(&self) -> bool {
        match *self {
            #[cfg(feature = "mysql")]
            Side::MySql { locking_fences, .. } => locking_fences,
            #[cfg(feature = "postgres")]
            Side::Postgres(_) => true,
        }
    }

    /// Whether its fences outlive their statements, to be let go by the
    /// connection's next statement that waits (see [`kept`](super::kept)):
    /// the MySQL family's `GET_LOCK` locks. PostgreSQL's end with the
    /// transaction.
    pub(super) fn keeps_fences(&self) -> bool {
        match *self {
            #[cfg(feature = "mysql")]
            Side::MySql { locking_fences, .. } => locking_fences,
            #[cfg(feature = "postgres")]
            Side::Postgres(_) => false,
        }
    }

    /// See [`Canceller::waiter_statement`](super::Canceller::waiter_statement).
    pub(super) fn waiter_statement(&self) -> Statement {
        match *self {
            #[cfg(feature = "mysql")]
            Side::MySql { .. } => Statement::from_string(sea_orm::DbBackend::MySql, waiter::MYSQL),
            #[cfg(feature = "postgres")]
            Side::Postgres(_) => Statement::from_string(
                sea_orm::DbBackend::Postgres,
                format!("SELECT {}", waiter::postgres_columns(None)),
            ),
        }
    }

    async fn connect(&self) -> Result<Connection, sea_orm::sqlx::Error> {
        #[cfg(any(feature = "mysql", feature = "postgres"))]
        use sea_orm::sqlx::ConnectOptions;
        match *self {
            #[cfg(feature = "mysql")]
            Side::MySql { ref options, .. } => options.connect().await.map(Connection::MySql),
            #[cfg(feature = "postgres")]
            Side::Postgres(ref options) => options.connect().await.map(Connection::Postgres),
        }
    }

    /// Ask the server to end every request of `batch` whose statement still
    /// runs, in one round trip.
    async fn cancel(&self, conn: &mut Connection, batch: &[Request]) -> Result<(), sea_orm::sqlx::Error> {
        #[cfg(any(feature = "mysql", feature = "postgres"))]
        use sea_orm::sqlx::{AssertSqlSafe, Executor};
        let _ = batch;
        match (self, conn) {
            #[cfg(feature = "mysql")]
            (
                Side::MySql {
                    mariadb,
                    locking_fences,
                    ..
                },
                Connection::MySql(conn),
            ) => {
                let sql: String = batch.iter().map(|r| server::mysql_kill(r, *mariadb)).collect();
                match conn.execute(AssertSqlSafe(sql)).await {
                    Ok(_) => Ok(()),
                    // A batch stops at its first failure (a connection that
                    // ended between the check and its kill), holding the
                    // fence it had taken: let every fence go, then each
                    // request again on its own (a repeated cancellation
                    // finds its statement gone, or ends it).
                    Err(sea_orm::sqlx::Error::Database(error)) => {
                        tracing::debug!(%error, "hierlock: a lock wait ended before its cancellation");
                        let release = async |conn: &mut sea_orm::sqlx::MySqlConnection| {
                            if *locking_fences {
                                conn.execute(server::MYSQL_RELEASE_FENCES).await.map(drop)
                            } else {
                                Ok(())
                            }
                        };
                        release(conn).await?;
                        for request in batch {
                            let sql = server::mysql_kill(request, *mariadb);
                            if let Err(error) = conn.execute(AssertSqlSafe(sql)).await {
                                tracing::debug!(%error, "hierlock: a lock wait ended before its cancellation");
                                release(conn).await?;
                            }
                        }
                        Ok(())
                    }
                    Err(error) => Err(error),
                }
            }
            #[cfg(feature = "postgres")]
            (Side::Postgres(_), Connection::Postgres(conn)) => {
                // Simple queries (no prepared statement), in one transaction,
                // so that they also run through pgbouncer's transaction
                // pooling.
                conn.execute(AssertSqlSafe(server::postgres_cancel(batch)))
                    .await
                    .map(drop)
            }
            #[allow(unreachable_patterns)]
            _ => Ok(()),
        }
    }
}

#[cfg(all(test, feature = "mysql"))]
mod tests {
    use super::*;

    /// A fence whose cancellation waits for the side connection is not let
    /// go by its connection's next wait (the cancellation would find it
    /// free and end the session the next request runs on); the others are.
    #[test]
    fn a_queued_cancellation_keeps_its_fence() {
        let queue = Queue::new(Side::MySql {
            options: sea_orm::sqlx::mysql::MySqlConnectOptions::new(),
            mariadb: true,
            locking_fences: true,
        });
        let (queued, free) = (Fence::next(true), Fence::next(true));
        queue.keep(5, queued);
        queue.keep(5, free);
        let waiter = Waiter {
            connection: 5,
            transaction: 0,
        };
        queue
            .state()
            .pending
            .push(Request::unanswered(waiter, queued, End::Session));
        assert_eq!(queue.releasable(5), vec![free]);
        queue.state().pending.clear();
        assert_eq!(queue.releasable(5), vec![queued]);
    }
}
