//! What the cluster test targets (Galera, Group Replication) share: the URLs
//! of their three members, and one test at a time on the cluster.

use std::time::Duration;

/// The three members' URLs from `var` (comma-separated), else the local
/// cluster's on `ports`, in the cluster script's order; `members` names
/// them in the message when `var` names another number.
///
/// # Panics
/// If `var` does not name exactly three URLs.
pub fn urls(var: &str, ports: [u16; 3], members: &str) -> Vec<String> {
    let urls = std::env::var(var).unwrap_or_else(|_| {
        ports
            .map(|port| format!("mysql://root@127.0.0.1:{port}/test"))
            .join(",")
    });
    let urls: Vec<String> = urls.split(',').map(|u| u.trim().to_owned()).collect();
    assert_eq!(urls.len(), 3, "{var} must name the 3 {members}: {urls:?}");
    urls
}

/// The cluster, to one test at a time in this process and across processes.
pub struct Exclusive {
    _port: std::net::TcpListener,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

/// Hold while a test uses the cluster: `turn` within this process, and a
/// loopback port, `lock`, across processes (two `cargo test` runs at once),
/// released by the OS even when a run is killed. Waits at most 5 minutes
/// for another process's run to finish.
///
/// # Panics
/// If `lock` stays taken for 5 minutes.
pub async fn exclusive(turn: &'static tokio::sync::Mutex<()>, lock: &str) -> Exclusive {
    let turn = turn.lock().await;
    let port = tokio::time::timeout(Duration::from_secs(300), async {
        loop {
            match std::net::TcpListener::bind(lock) {
                Ok(port) => return port,
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{lock} stayed taken for 5 minutes"));
    Exclusive {
        _port: port,
        _turn: turn,
    }
}
