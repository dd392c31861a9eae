//! A server at a distance: forwards a loopback port to a server, every
//! round trip longer by `--rtt-ms`, so that a benchmark can be run where
//! the network's round trips, not this machine's CPU, bound a hot row.
//!
//! ```sh
//! cargo run --release -p hierlock-tests --bin latency-proxy -- \
//!     --server 127.0.0.1:3306 --rtt-ms 2
//! # prints the port to connect to, then forwards until killed
//! ```
//!
//! The delay is Tokio's timer, whose resolution is a millisecond: give
//! whole milliseconds.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use hierlock_tests::Proxy;

#[derive(Parser, Debug)]
#[command(about = "Forward a loopback port to a server, every round trip longer")]
struct Args {
    /// The server to forward to.
    #[arg(long)]
    server: SocketAddr,
    /// How much longer each round trip is, in milliseconds (half each way).
    #[arg(long, default_value_t = 2)]
    rtt_ms: u64,
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let proxy = Proxy::start_with_latency(args.server, Duration::from_millis(args.rtt_ms)).await;
    println!("{}", proxy.port());
    std::future::pending::<()>().await;
}
