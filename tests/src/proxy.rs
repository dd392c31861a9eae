//! A loopback TCP proxy that can cut its connections or go silent: a
//! network failure between the application and the server, without
//! touching the server.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

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
                        _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
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

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}
