//! The chaos run: the bank workload under steady load on each server while
//! faults are injected on a schedule; prints what the bystanders and the
//! victims saw and whether the invariants held (a Markdown table).
//!
//! ```sh
//! cargo run --release -p hierlock-tests --bin chaos -- \
//!     [--server mariadb,mysql,postgres,postgres-buckets,pgbouncer,mariadb-own,mysql-own,postgres-own,group-replication] \
//!     [--fault storm,burst,kill,reset,silent,crash,restart,primary] [--rounds 10] [--tasks 8]
//! ```
//!
//! The servers are the suite's (`tests/run` starts them; the same
//! `HIERLOCK_*_URL` variables choose others), and the run's own, which it
//! crashes and graceful restarts (`mariadb-own`, `mysql-own`, `postgres-own`: `tests/clusters/instances.sh
//! start`; they run only there), and the Group Replication group
//! (`tests/clusters/group-replication.sh start`; its primary is killed,
//! through a router that follows the primary). The other faults run on the
//! shared single servers. Exits non-zero if any phase saw a bystander error, an unexpected
//! victim outcome or a broken invariant.

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use hierlock_tests::chaos::{self, Fault, Options, Server};

#[derive(Parser, Debug)]
#[command(about = "Faults under load: what reaches the requests they were not aimed at")]
struct Args {
    /// Servers to run on, comma-separated: mariadb, mysql, postgres,
    /// postgres-buckets, pgbouncer, mariadb-own, mysql-own, postgres-own,
    /// group-replication.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "mariadb,mysql,postgres,postgres-buckets,pgbouncer,mariadb-own,mysql-own,postgres-own,group-replication"
    )]
    server: Vec<String>,
    /// Faults to inject, comma-separated: storm, burst, kill, reset,
    /// silent, crash, restart, primary.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "storm,burst,kill,reset,silent,crash,restart,primary"
    )]
    fault: Vec<String>,
    /// Rounds of each fault.
    #[arg(long, default_value_t = 10)]
    rounds: usize,
    /// Tellers of the steady load.
    #[arg(long, default_value_t = 8)]
    tasks: usize,
    /// After the table, every bystander error in full.
    #[arg(long)]
    errors: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let servers: Result<Vec<Server>, String> = args
        .server
        .iter()
        .map(|name| Server::parse(name).ok_or_else(|| format!("unknown server `{name}`")))
        .collect();
    let faults: Result<Vec<Fault>, String> = args
        .fault
        .iter()
        .map(|name| Fault::parse(name).ok_or_else(|| format!("unknown fault `{name}`")))
        .collect();
    let (servers, faults) = match (servers, faults) {
        (Ok(s), Ok(f)) => (s, f),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("chaos: {e}");
            return ExitCode::from(2);
        }
    };
    let mut options = Options {
        faults,
        rounds: args.rounds,
        ..Options::default()
    };
    options.load.tasks = args.tasks;

    let mut phases = Vec::new();
    for server in servers {
        let started = Instant::now();
        eprintln!("chaos: {} ...", server.name());
        match chaos::run(server, &options).await {
            Ok(done) => phases.extend(done),
            Err(e) => {
                eprintln!("chaos: {} failed: {e}", server.name());
                return ExitCode::FAILURE;
            }
        }
        eprintln!(
            "chaos: {} done in {:.1} s",
            server.name(),
            started.elapsed().as_secs_f64()
        );
    }
    print!("{}", chaos::table(&phases));
    if args.errors {
        print!("{}", chaos::bystander_errors(&phases));
    }
    if phases.iter().all(chaos::Phase::held) {
        ExitCode::SUCCESS
    } else {
        eprintln!("chaos: a phase broke a promise (see the table)");
        ExitCode::FAILURE
    }
}
