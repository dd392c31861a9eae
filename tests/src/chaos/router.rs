//! A loopback router to a Group Replication group's primary, as MySQL
//! Router's read-write port is: each new connection goes to the member that
//! is PRIMARY when it connects; existing connections stay where they are
//! (and end with their member).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbBackend, Statement,
};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

/// Forwards `127.0.0.1:<port>` to the group's primary until dropped.
pub(super) struct Router {
    port: u16,
    tasks: Vec<AbortHandle>,
}

impl Router {
    /// Route to the primary among `members` (their SQL URLs), which the
    /// router asks every 100 ms who the primary is.
    ///
    /// # Errors
    /// No loopback port can be bound.
    pub(super) async fn start(members: Vec<String>) -> std::io::Result<Router> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let primary: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
        let watch = {
            let primary = Arc::clone(&primary);
            tokio::spawn(async move {
                let mut pools: Vec<Option<DatabaseConnection>> = vec![None; members.len()];
                loop {
                    let found = find_primary(&members, &mut pools).await;
                    *primary.lock().expect("router") = found;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        };
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let to = *primary.lock().expect("router");
                tokio::spawn(async move {
                    // No primary known: the client's connection closes, as
                    // a router with no writable destination does.
                    let Some(to) = to else { return };
                    if let Ok(mut upstream) = TcpStream::connect(to).await {
                        drop(tokio::io::copy_bidirectional(&mut client, &mut upstream).await);
                    }
                });
            }
        });
        Ok(Router {
            port,
            tasks: vec![watch.abort_handle(), accept.abort_handle()],
        })
    }

    /// The router's port on 127.0.0.1.
    pub(super) fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for Router {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// The primary's SQL address, as the first member that answers sees it
/// (an ONLINE member naming an ONLINE primary).
async fn find_primary(
    members: &[String],
    pools: &mut [Option<DatabaseConnection>],
) -> Option<SocketAddr> {
    const SQL: &str = "SELECT CAST(m.MEMBER_PORT AS SIGNED) AS port \
         FROM performance_schema.replication_group_members AS m \
         JOIN performance_schema.replication_group_members AS me \
           ON me.MEMBER_ID = @@server_uuid AND me.MEMBER_STATE = 'ONLINE' \
         WHERE m.MEMBER_ROLE = 'PRIMARY' AND m.MEMBER_STATE = 'ONLINE'";
    for (url, pool) in members.iter().zip(pools.iter_mut()) {
        if pool.is_none() {
            let mut options = ConnectOptions::new(url.clone());
            options
                .max_connections(1)
                .min_connections(0)
                .connect_timeout(Duration::from_millis(500))
                .acquire_timeout(Duration::from_millis(500))
                .sqlx_logging(false);
            *pool = Database::connect(options).await.ok();
        }
        let Some(db) = pool.as_ref() else { continue };
        let asked = db.query_one_raw(Statement::from_string(DbBackend::MySql, SQL));
        match tokio::time::timeout(Duration::from_millis(500), asked).await {
            Ok(Ok(Some(row))) => {
                if let Ok(port) = row.try_get::<i64>("", "port") {
                    return u16::try_from(port)
                        .ok()
                        .map(|port| SocketAddr::from(([127, 0, 0, 1], port)));
                }
            }
            Ok(Ok(None)) => {}
            // A member that does not answer is asked again on a new pool.
            _ => *pool = None,
        }
    }
    None
}
