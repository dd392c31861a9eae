//! The chaos run: the bank example's workload under steady concurrent load
//! while faults are injected on a schedule, one phase per fault.
//!
//! Every phase starts the steady load (see [`load`]), injects its fault
//! round after round (see [`faults`]), stops the load, and checks the
//! bank's invariants (money and stock conserved, no double purchase, no
//! overdraft) on the server itself. The steady load's requests are the
//! bystanders: no fault is aimed at them, so every error they count is a
//! fault reaching a request it had nothing to do with. The victims' own
//! outcomes are counted apart, with those the fault does not promise.
//!
//! `cargo run -p hierlock-tests --bin chaos` prints the table;
//! `tests/tests/chaos` runs a short version in the suite.

mod faults;
mod load;
mod router;
mod server;
mod table;

use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::{Duration, Instant};

use hierlock::Locker;
use hierlock_examples::bank::invariants::{self, Check};
use hierlock_examples::bank::{self, Rng, Tally, entity};
use hierlock_migration::Provision;
use sea_orm::DbBackend;

pub use self::faults::{Fault, Sizes, Victims};
pub use self::server::Server;
pub use self::table::{bystander_errors, table};

use self::faults::Env;
use self::load::{Load, Window};
use self::router::Router;

/// One chaos run at a time on the Group Replication group, in this process
/// (the lock port keeps other processes' group tests out).
static GROUP_TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A pool through the router, once it knows the primary (at most 10 s).
async fn connect_when_routed(
    server: Server,
    url: &str,
) -> Result<sea_orm::DatabaseConnection, BoxError> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let probe = sea_orm::Statement::from_string(DbBackend::MySql, "SELECT 1");
        let routed = match server.connect(url, 4, None).await {
            Ok(db) => sea_orm::ConnectionTrait::execute_raw(&db, probe)
                .await
                .map(|_| db),
            Err(e) => Err(e),
        };
        match routed {
            Ok(db) => return Ok(db),
            Err(e) if Instant::now() > until => {
                return Err(format!("the router found no primary within 10 s: {e}").into());
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Errors that stop a run (setup, a server gone for good).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The faults, in order (a steady phase with none comes first).
    pub faults: Vec<Fault>,
    /// Rounds of each fault.
    pub rounds: usize,
    /// Pause between rounds, the steady load running.
    pub gap: Duration,
    /// How long the steady phase runs.
    pub steady: Duration,
    /// How big each fault is.
    pub sizes: Sizes,
    /// The steady load: tellers, users, accounts, items, think time, seed.
    pub load: bank::Options,
}

impl Default for Options {
    /// Every fault, 10 rounds each, 200 ms apart, 8 tellers.
    fn default() -> Self {
        Options {
            faults: Fault::ALL.to_vec(),
            rounds: 10,
            gap: Duration::from_millis(200),
            steady: Duration::from_secs(3),
            sizes: Sizes::default(),
            load: bank::Options {
                tasks: 8,
                ..bank::Options::default()
            },
        }
    }
}

impl Options {
    /// A run of a few seconds per server, for the test suite.
    pub fn short() -> Self {
        Options {
            rounds: 3,
            steady: Duration::from_secs(1),
            sizes: Sizes {
                burst_width: 16,
                ..Sizes::default()
            },
            ..Options::default()
        }
    }
}

impl Options {
    /// These options, scaled down where `server` has fewer server
    /// connections than they would ask for at once (pgbouncer's pool):
    /// tellers (two connections each), the widest fault, its holder, the
    /// locker's side connection and a proxied victim's pool of two must
    /// all hold a server connection together. Past that, pgbouncer queues
    /// statements, a deadline's cancel among them, and an acquisition ends
    /// at its deadline's margin as `ConnectionLost` instead of
    /// `LockTimeout` (see docs/topologies.md).
    fn fitted(&self, server: Server) -> Options {
        let Some(pool) = server.server_pool() else {
            return self.clone();
        };
        let mut fitted = self.clone();
        let width = (pool / 2).saturating_sub(2).max(1);
        fitted.sizes.burst_width = fitted.sizes.burst_width.min(width);
        fitted.sizes.storm_width = fitted.sizes.storm_width.min(width);
        let rest = pool.saturating_sub(width + 4);
        fitted.load.tasks = fitted.load.tasks.min((rest / 2).max(1));
        fitted
    }
}

/// One phase: a fault (or none), and what everyone saw.
#[derive(Clone, Debug)]
pub struct Phase {
    /// The target.
    pub server: Server,
    /// The fault, or `None` for the steady phase.
    pub fault: Option<Fault>,
    /// Rounds injected.
    pub rounds: usize,
    /// How long the phase ran.
    pub elapsed: Duration,
    /// What the steady load did meanwhile.
    pub bystanders: Tally,
    /// What the fault's own requests saw.
    pub victims: Victims,
    /// The invariants, checked after the phase.
    pub checks: Vec<Check>,
}

impl Phase {
    /// Errors the steady load saw: every failed attempt, retried or not.
    pub fn bystander_errors(&self) -> u64 {
        self.bystanders.errors.values().sum()
    }

    /// Invariants that did not hold.
    pub fn invariant_breaks(&self) -> usize {
        self.checks.iter().filter(|c| !c.held).count()
    }

    /// Whether the phase kept every promise: no bystander error, no
    /// unexpected victim outcome, every invariant held.
    pub fn held(&self) -> bool {
        self.bystander_errors() == 0 && self.victims.unexpected == 0 && self.invariant_breaks() == 0
    }
}

/// What kind of error a teller's error label is, for the table: the bank
/// labels each with its full text.
fn error_kind(label: &str) -> &str {
    if label.starts_with("commit outcome unknown") {
        "commit outcome unknown"
    } else if label.starts_with("hierlock: lost the connection") {
        "ConnectionLost (taking locks)"
    } else if label.starts_with("hierlock:") {
        "other hierlock error"
    } else if label.starts_with("connection lost")
        || label.contains("error communicating with database")
        || label.starts_with("Connection Error")
    {
        "connection lost (a statement of the transaction)"
    } else {
        label
    }
}

/// Run the steady phase and then each fault's on `server`.
///
/// # Errors
/// The server is unreachable, or setting up the bank failed. What the
/// faults do to requests is counted in the phases, not returned.
pub async fn run(server: Server, options: &Options) -> Result<Vec<Phase>, BoxError> {
    let options = &options.fitted(server);
    // The group, one run at a time with its own tests, through a router
    // that follows its primary (also for the checks, which must read the
    // primary's rows).
    let _group = match server.group_members() {
        Some(_) => Some(crate::cluster::exclusive(&GROUP_TURN, "127.0.0.1:4598").await),
        None => None,
    };
    let router = match server.group_members() {
        Some(members) => Some(Router::start(members).await?),
        None => None,
    };
    let workload_url = match &router {
        Some(router) => server.workload_url_via(router.port()),
        None => server.workload_url(),
    };
    let side = match &router {
        Some(_) => connect_when_routed(server, &workload_url).await?,
        None => server.connect_direct(4).await?,
    };
    let config = server.config();
    entity::create_tables(&side).await?;
    let mut rng = Rng::new(options.load.seed);
    let opening = entity::seed(&side, &options.load, &mut rng).await?;
    if side.get_database_backend() == DbBackend::MySql || server == Server::PostgresBuckets {
        Provision::new(config.clone())
            .chunk_rows(20_000)
            .run(&side)
            .await?;
    }
    // Room for the tellers (two connections each for a double submit), the
    // widest fault, and its holder.
    let pool =
        options.load.tasks * 2 + options.sizes.burst_width.max(options.sizes.storm_width) + 4;
    let db = server
        .connect(&workload_url, u32::try_from(pool)?, None)
        .await?;
    let locker = Locker::connect(&db, config).await?;
    let env = Env {
        server,
        db,
        locker,
        side,
        sizes: options.sizes,
        window: Window::default(),
    };

    let next_request = Arc::new(AtomicI64::new(1));
    let mut total = Tally::default();
    let mut bystanders_failed = 0;
    let mut phases = Vec::new();
    let faults = options.faults.iter().copied().filter(|f| f.runs_on(server));
    for fault in std::iter::once(None).chain(faults.map(Some)) {
        let started = Instant::now();
        let load = Load::start(
            &env.db,
            &env.locker,
            &options.load,
            &mut rng,
            &next_request,
            &env.window,
        );
        let mut victims = Victims::default();
        match fault {
            None => tokio::time::sleep(options.steady).await,
            Some(fault) => {
                for round in 0..options.rounds {
                    tokio::time::sleep(options.gap).await;
                    faults::inject(fault, &env, &mut victims)
                        .await
                        .map_err(|e| format!("{}, round {}: {e}", fault.name(), round + 1))?;
                }
                tokio::time::sleep(options.gap).await;
            }
        }
        let tallies = load.stop().await;
        let (bystanders, hit) = (tallies.bystanders, tallies.hit);
        total.add(&bystanders);
        total.add(&hit);
        bystanders_failed += bystanders.failed;
        if hit.transactions > 0 {
            victims.saw_times("hit: committed", hit.committed, true);
            for (error, &times) in &hit.errors {
                victims.saw_times(format!("hit: {}", error_kind(error)), times, true);
            }
        }
        // What the crash's own window failed is counted above; every
        // request outside it must be answered.
        let checked = Tally {
            failed: bystanders_failed,
            ..total.clone()
        };
        let checks = invariants::check(&env.side, opening, &checked).await?;
        phases.push(Phase {
            server,
            fault,
            rounds: if fault.is_some() { options.rounds } else { 0 },
            elapsed: started.elapsed(),
            bystanders,
            victims,
            checks,
        });
    }
    Ok(phases)
}
