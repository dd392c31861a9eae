//! A loopback TCP proxy that can cut its connections: a network failure
//! between the application and the server, without touching the server.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

/// Forwards `127.0.0.1:<port>` to a server until [`Proxy::cut`] or drop.
pub struct Proxy {
    port: u16,
    accept: AbortHandle,
    links: Arc<Mutex<Vec<AbortHandle>>>,
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
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let Ok(mut upstream) = TcpStream::connect(server).await else {
                    continue;
                };
                let link = tokio::spawn(async move {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                });
                accepted.lock().expect("links").push(link.abort_handle());
            }
        })
        .abort_handle();
        Proxy {
            port,
            accept,
            links,
        }
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
