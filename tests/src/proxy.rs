//! A loopback TCP proxy that can cut its connections, go silent, or add
//! latency: a network failure, or a server in another zone, between the
//! application and the server, without touching the server.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::AbortHandle;

/// Forwards `127.0.0.1:<port>` to a server until [`Proxy::cut`],
/// [`Proxy::silence`] or drop.
pub struct Proxy {
    port: u16,
    accept: AbortHandle,
    links: Arc<Mutex<Vec<AbortHandle>>>,
    silent: watch::Sender<bool>,
}

impl Proxy {
    /// Start forwarding to `server`.
    ///
    /// # Panics
    /// If no loopback port can be bound.
    pub async fn start(server: SocketAddr) -> Proxy {
        Proxy::start_with_latency(server, Duration::ZERO).await
    }

    /// Start forwarding to `server`, every round trip `latency` longer
    /// (half of it each way; bytes keep their order, nothing limits the
    /// bandwidth).
    ///
    /// # Panics
    /// If no loopback port can be bound.
    pub async fn start_with_latency(server: SocketAddr, latency: Duration) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let port = listener.local_addr().expect("local address").port();
        let links: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let accepted = Arc::clone(&links);
        let (silent, silenced) = watch::channel(false);
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let mut silenced = silenced.clone();
                let link = tokio::spawn(async move {
                    // A silent network also drops new connections' packets:
                    // hold the client's socket, forwarding nothing.
                    let silent_now = *silenced.borrow();
                    if silent_now {
                        std::future::pending::<()>().await;
                    }
                    let Ok(mut upstream) = TcpStream::connect(server).await else {
                        return;
                    };
                    // Biased: once silenced, no byte is forwarded, however
                    // the wake-ups of the two branches fall.
                    tokio::select! {
                        biased;
                        () = async { drop(silenced.wait_for(|silent| *silent).await) } => {
                            // Both sockets stay open and nothing moves, in
                            // either direction, until the link is cut.
                            std::future::pending::<()>().await;
                        }
                        _ = forward(&mut client, &mut upstream, latency / 2) => {}
                    }
                });
                accepted.lock().expect("links").push(link.abort_handle());
            }
        })
        .abort_handle();
        Proxy {
            port,
            accept,
            links,
            silent,
        }
    }

    /// Stop forwarding, in both directions, on every connection and on new
    /// ones, without closing any socket: a partition as a dead NAT entry or
    /// a failed switch makes it, which neither end notices until a timeout
    /// of its own. [`Proxy::cut`] (or drop) closes the sockets.
    pub fn silence(&self) {
        self.silent.send_replace(true);
    }

    /// Forward new connections again after [`Proxy::silence`] (the network
    /// is back); the connections that went silent stay silent, as their
    /// peers' TCP state would have them.
    pub fn resume(&self) {
        self.silent.send_replace(false);
    }

    /// The proxy's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Cut every connection made through the proxy so far: both sockets of
    /// each are closed, as when a network path fails or a load balancer
    /// drops its connections. New connections are still forwarded.
    pub fn cut(&self) {
        for link in self.links.lock().expect("links").drain(..) {
            link.abort();
        }
    }
}

/// Copy bytes both ways between `a` and `b` until either side closes, each
/// chunk `delay` after it was read.
async fn forward(a: &mut TcpStream, b: &mut TcpStream, delay: Duration) {
    if delay.is_zero() {
        drop(tokio::io::copy_bidirectional(a, b).await);
        return;
    }
    let (a_read, a_write) = a.split();
    let (b_read, b_write) = b.split();
    tokio::select! {
        () = delayed_copy(a_read, b_write, delay) => {}
        () = delayed_copy(b_read, a_write, delay) => {}
    }
}

/// Copy from `from` to `to`, each chunk written `delay` after it was read:
/// a reader queues chunks with their due time, a writer writes them in
/// order when due.
async fn delayed_copy(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin,
    delay: Duration,
) {
    let (queue, mut due) = tokio::sync::mpsc::unbounded_channel();
    let read = async move {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = from.read(&mut buf).await {
            if n == 0
                || queue
                    .send((tokio::time::Instant::now() + delay, buf[..n].to_vec()))
                    .is_err()
            {
                break;
            }
        }
    };
    let write = async move {
        while let Some((at, chunk)) = due.recv().await {
            tokio::time::sleep_until(at).await;
            if to.write_all(&chunk).await.is_err() {
                break;
            }
        }
    };
    tokio::join!(read, write);
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}
