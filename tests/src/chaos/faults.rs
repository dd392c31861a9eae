//! The faults a chaos run injects. Each is aimed at requests of its own
//! (the victims), which lock the key the steady load uses most: the
//! steady load shares their pool where that is what could go wrong (cancels
//! and kills), and waits behind their locks in every fault.
//!
//! What each victim saw is counted by outcome; an outcome the fault does
//! not promise (a lock held twice, a deadline overrun, a victim that did not
//! recover) is counted as unexpected.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hierlock::{Config, DEADLINE_MARGIN, ErrorKind, Locker, RetryPolicy, Target, Wait};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement, TransactionTrait};
use tokio::sync::{oneshot, watch};

use super::BoxError;
use super::load::Window;
use super::server::Server;
use crate::Proxy;

/// One kind of fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    /// Waiters on a held lock, all dropped together (a gateway timeout).
    Storm,
    /// Waiters on a held lock, all reaching their deadline together.
    Burst,
    /// A lock holder's connection killed by the server (`KILL CONNECTION`,
    /// `pg_terminate_backend`).
    Kill,
    /// A lock holder's connection reset by the network (both sockets closed).
    Reset,
    /// A lock holder's network gone silent (nothing closed, nothing
    /// answered), then back.
    Silence,
    /// The server killed (`kill -9`) and started again, under load: only
    /// the chaos run's own servers.
    Crash,
    /// The server shut down cleanly (MariaDB on `SIGTERM`, PostgreSQL's
    /// `pg_ctl restart -m fast`: connections ended with "shutdown in
    /// progress" / 57P01, new ones refused until it is back) and started
    /// again, under load: only the chaos run's own servers.
    Restart,
    /// A Group Replication group's primary killed (`kill -9`) under load,
    /// then put back: only the group.
    PrimaryKill,
}

impl Fault {
    /// Every fault, in the order a run injects them.
    pub const ALL: [Fault; 8] = [
        Fault::Storm,
        Fault::Burst,
        Fault::Kill,
        Fault::Reset,
        Fault::Silence,
        Fault::Crash,
        Fault::Restart,
        Fault::PrimaryKill,
    ];

    /// The name the command line takes and the table prints.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Storm => "cancel storm",
            Fault::Burst => "deadline burst",
            Fault::Kill => "connection kill",
            Fault::Reset => "network reset",
            Fault::Silence => "silent network",
            Fault::Crash => "server crash",
            Fault::Restart => "graceful restart",
            Fault::PrimaryKill => "primary kill",
        }
    }

    /// Whether the fault runs on `server`: a crash only on the run's own
    /// servers, a primary kill only on the group, the others only on the
    /// shared single servers.
    pub fn runs_on(self, server: Server) -> bool {
        match self {
            Fault::Crash | Fault::Restart => server.own_instance().is_some(),
            Fault::PrimaryKill => server == Server::GroupReplication,
            _ => server.own_instance().is_none() && server != Server::GroupReplication,
        }
    }

    /// The fault named `name` (its table name, or its first word).
    pub fn parse(name: &str) -> Option<Fault> {
        Fault::ALL
            .into_iter()
            .find(|f| f.name() == name || f.name().split(' ').any(|word| word == name))
    }
}

/// How big each fault is.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Waiters dropped together in a storm.
    pub storm_width: usize,
    /// How long a storm's waiters wait before they are dropped.
    pub storm_patience: Duration,
    /// Acquisitions reaching their deadline together in a burst.
    pub burst_width: usize,
    /// A burst acquisition's `Wait::Timeout`.
    pub burst_wait: Duration,
    /// The lease of a silenced victim's locks (and its pool's session, on
    /// the MySQL family): how long the server keeps them for a client that
    /// went silent.
    pub lease: Duration,
    /// How long the network stays silent.
    pub silence: Duration,
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes {
            storm_width: 8,
            storm_patience: Duration::from_millis(50),
            burst_width: 40,
            burst_wait: Duration::from_millis(300),
            lease: Duration::from_secs(2),
            silence: Duration::from_millis(1500),
        }
    }
}

/// What the victims of one phase saw.
#[derive(Clone, Debug, Default)]
pub struct Victims {
    /// Outcomes, by what happened (`recovered on attempt 2`, `LockTimeout`, …).
    pub outcomes: BTreeMap<String, u64>,
    /// Outcomes the fault does not promise.
    pub unexpected: u64,
    /// The longest time from a fault to its victim's transaction committed
    /// again (faults that end a holder's connection).
    pub recovery: Option<Duration>,
}

impl Victims {
    fn saw(&mut self, outcome: impl Into<String>, expected: bool) {
        self.saw_times(outcome, 1, expected);
    }

    pub(super) fn saw_times(&mut self, outcome: impl Into<String>, times: u64, expected: bool) {
        *self.outcomes.entry(outcome.into()).or_default() += times;
        if !expected {
            self.unexpected += times;
        }
    }

    fn recovered_in(&mut self, took: Duration) {
        self.recovery = Some(self.recovery.map_or(took, |longest| longest.max(took)));
    }
}

/// What the faults act on.
pub(super) struct Env {
    /// The target.
    pub server: Server,
    /// The steady load's pool.
    pub db: DatabaseConnection,
    /// The steady load's locker.
    pub locker: Locker,
    /// A pool on the server itself, for kills.
    pub side: DatabaseConnection,
    /// How big each fault is.
    pub sizes: Sizes,
    /// Open while a crash strikes every request on the server.
    pub window: Window,
}

/// The key every victim locks: user 1's first account, which the steady
/// load's transfers, deposits and purchases lock too.
fn hot() -> Target {
    Target::account(1, 1)
}

/// Inject one round of `fault`, counting what its victims saw.
pub(super) async fn inject(fault: Fault, env: &Env, victims: &mut Victims) -> Result<(), BoxError> {
    match fault {
        Fault::Storm => storm(env, victims).await,
        Fault::Burst => burst(env, victims).await,
        Fault::Kill => kill(env, victims).await,
        Fault::Reset => reset(env, victims).await,
        Fault::Silence => silence(env, victims).await,
        Fault::Crash => restart(env, victims, "crash").await,
        Fault::Restart => restart(env, victims, "restart").await,
        Fault::PrimaryKill => primary_kill(env, victims).await,
    }
}

/// Hold the hot key while `storm_width` waiters queue behind it on the
/// steady load's pool, drop them all, then let the steady load in.
async fn storm(env: &Env, victims: &mut Victims) -> Result<(), BoxError> {
    let holder = env.db.begin().await?;
    env.locker.acquire(&holder, [hot().write()]).await?;
    let waiters: Vec<_> = (0..env.sizes.storm_width)
        .map(|_| {
            let (db, locker) = (env.db.clone(), env.locker.clone());
            let patience = env.sizes.storm_patience;
            tokio::spawn(async move {
                let txn = db.begin().await?;
                let waited =
                    tokio::time::timeout(patience, locker.acquire(&txn, [hot().write()])).await;
                Ok::<_, BoxError>(match waited {
                    Err(_) => ("dropped while waiting".to_owned(), true),
                    Ok(Ok(_)) => ("acquired a held lock".to_owned(), false),
                    Ok(Err(e)) => (format!("{:?}", e.kind()), false),
                })
            })
        })
        .collect();
    for waiter in waiters {
        let (outcome, expected) = waiter.await??;
        victims.saw(outcome, expected);
    }
    holder.commit().await?;
    Ok(())
}

/// Hold the hot key while `burst_width` acquisitions with a deadline queue
/// behind it; each must end `LockTimeout` within its deadline's margin, and
/// its transaction must roll back at once. The holder commits when every
/// acquisition has returned, so one that succeeded took a held lock.
async fn burst(env: &Env, victims: &mut Victims) -> Result<(), BoxError> {
    let holder = env.db.begin().await?;
    env.locker.acquire(&holder, [hot().write()]).await?;
    let wait = env.sizes.burst_wait;
    let (returned, mut outcomes) = tokio::sync::mpsc::unbounded_channel();
    let waiters: Vec<_> = (0..env.sizes.burst_width)
        .map(|_| {
            let (db, locker, returned) = (env.db.clone(), env.locker.clone(), returned.clone());
            tokio::spawn(async move {
                let txn = db.begin().await?;
                let asked = Instant::now();
                let taken = locker
                    .acquire_with(&txn, [hot().write()], Wait::Timeout(wait))
                    .await;
                let late = asked.elapsed() > wait + DEADLINE_MARGIN;
                let _ = returned.send(match taken {
                    Ok(_) => ("acquired a held lock".to_owned(), false),
                    Err(e) if e.kind() == ErrorKind::LockTimeout && !late => {
                        ("LockTimeout".to_owned(), true)
                    }
                    Err(e) if late => (format!("{:?} past the deadline's margin", e.kind()), false),
                    Err(e) => (format!("{:?}", e.kind()), false),
                });
                let rolled_back =
                    tokio::time::timeout(Duration::from_secs(5), txn.rollback()).await;
                Ok::<_, BoxError>(rolled_back.is_ok())
            })
        })
        .collect();
    drop(returned);
    while let Some((outcome, expected)) = outcomes.recv().await {
        victims.saw(outcome, expected);
    }
    holder.commit().await?;
    for waiter in waiters {
        if !waiter.await?? {
            victims.saw("rollback unanswered for 5 s", false);
        }
    }
    Ok(())
}

/// A victim holding the hot key on the steady load's pool has its
/// connection killed by the server; `hierlock::retry` must run it again.
async fn kill(env: &Env, victims: &mut Victims) -> Result<(), BoxError> {
    let mut victim = Victim::start(env.db.clone(), env.locker.clone(), retry_policy()?);
    let id = victim.holding().await?;
    let sql = match env.side.get_database_backend() {
        DbBackend::Postgres => format!("SELECT pg_terminate_backend({id})"),
        _ => format!("KILL CONNECTION {id}"),
    };
    let killed = Instant::now();
    env.side
        .execute_raw(Statement::from_string(env.side.get_database_backend(), sql))
        .await?;
    victim.fault_done();
    victim.finish(killed, victims).await
}

/// A victim holding the hot key through a proxy has both its sockets
/// closed; the server ends its transaction, and `retry` runs it again.
async fn reset(env: &Env, victims: &mut Victims) -> Result<(), BoxError> {
    let proxy = Proxy::start(env.server.workload_addr()).await;
    let (db, locker) = through(env, &proxy, env.server.config(), None).await?;
    let mut victim = Victim::start(db, locker, retry_policy()?);
    victim.holding().await?;
    let cut = Instant::now();
    proxy.cut();
    victim.fault_done();
    victim.finish(cut, victims).await
}

/// A victim holding the hot key through a proxy goes silent: its next
/// statement gets no answer (`ConnectionLost` by the answer timeout), the
/// server keeps its locks until the lease ends, then the network comes
/// back and `retry` runs it again.
async fn silence(env: &Env, victims: &mut Victims) -> Result<(), BoxError> {
    let proxy = Proxy::start(env.server.workload_addr()).await;
    let lease = env.sizes.lease;
    let config = env
        .server
        .config()
        .with_lease(lease)?
        .with_answer_timeout(Duration::from_secs(1))?;
    let (db, locker) = through(env, &proxy, config, Some(lease)).await?;
    let mut victim = Victim::start(db, locker, retry_policy()?);
    victim.holding().await?;
    let silenced = Instant::now();
    proxy.silence();
    victim.fault_done();
    tokio::time::sleep(env.sizes.silence).await;
    proxy.resume();
    let seen = victim.finish(silenced, victims).await;
    // The silenced sockets close with the proxy.
    drop(proxy);
    seen
}

/// Kill the server (`kill -9`, `how` = `crash`) or shut it down cleanly
/// (`restart`), and start it again while the steady load runs; the window
/// stays open until a transaction on the steady load's
/// pool takes the hot key and commits again. The tellers' operations in
/// the window are counted as hit (see [`Window`]).
async fn restart(env: &Env, victims: &mut Victims, how: &str) -> Result<(), BoxError> {
    let instance = env.server.own_instance().ok_or(
        "a server crash or restart runs only on the chaos run's own servers \
         (mariadb-own, mysql-own, postgres-own)",
    )?;
    env.window.open();
    let struck = Instant::now();
    let served = async {
        cluster_script("instances.sh", &[how, instance]).await?;
        serves_again(env).await
    }
    .await;
    env.window.close();
    served?;
    victims.recovered_in(struck.elapsed());
    Ok(())
}

/// How long a primary kill's window stays open once the group is back.
const SETTLE: Duration = Duration::from_secs(2);

/// Kill the group's primary (`kill -9`) while the steady load runs through
/// the router; the window stays open until a transaction commits on the new
/// primary, and while the group is put back (the old primary rejoins and is
/// made primary again: a planned switch).
async fn primary_kill(env: &Env, victims: &mut Victims) -> Result<(), BoxError> {
    const GROUP: &str = "group-replication.sh";
    let primary = cluster_script(GROUP, &["primary"]).await?;
    if !["1", "2", "3"].contains(&primary.as_str()) {
        return Err(format!("no primary to kill: `{primary}`").into());
    }
    env.window.open();
    let struck = Instant::now();
    let outcome = async {
        cluster_script(GROUP, &["kill", &primary]).await?;
        serves_again(env).await?;
        victims.recovered_in(struck.elapsed());
        cluster_script(GROUP, &["start"]).await?;
        serves_again(env).await?;
        // The pool's connections to the member demoted by the switch back
        // each fail their next lock statement once (hierlock ends them, and
        // the request is retried): let the load reach them all first.
        tokio::time::sleep(SETTLE).await;
        Ok::<_, BoxError>(())
    }
    .await;
    env.window.close();
    outcome
}

/// Run `tests/clusters/<name>` with `args`; its output, trimmed.
async fn cluster_script(name: &str, args: &[&str]) -> Result<String, BoxError> {
    let script = format!("{}/clusters/{name}", env!("CARGO_MANIFEST_DIR"));
    let out = tokio::process::Command::new("bash")
        .arg(&script)
        .args(args)
        .output()
        .await?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(format!(
            "{script} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into())
    }
}

/// Wait until a transaction on the steady load's pool takes the hot key
/// and commits (at most 60 s).
async fn serves_again(env: &Env) -> Result<(), BoxError> {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let attempt = async {
            let txn = env.db.begin().await?;
            env.locker.acquire(&txn, [hot().write()]).await?;
            txn.commit().await?;
            Ok::<_, BoxError>(())
        };
        match tokio::time::timeout(Duration::from_secs(5), attempt).await {
            Ok(Ok(())) => return Ok(()),
            _ if Instant::now() > until => {
                return Err("the server did not serve again within 60 s of its restart".into());
            }
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// A pool of four and a locker through `proxy`. Each connection a silent
/// network leaves behind keeps its pool slot (sqlx pings or connects on
/// it with no bound of its own) until its connect timeout: with a pool of
/// two, MySQL 9's retries found no connection for 20 s.
async fn through(
    env: &Env,
    proxy: &Proxy,
    config: Config,
    lease: Option<Duration>,
) -> Result<(DatabaseConnection, Locker), BoxError> {
    let url = env.server.workload_url_via(proxy.port());
    let db = env.server.connect(&url, 4, lease).await?;
    let locker = Locker::connect(&db, config).await?;
    Ok((db, locker))
}

/// Victims retry for up to 20 s, each step answered within 1 s.
fn retry_policy() -> Result<RetryPolicy, BoxError> {
    Ok(RetryPolicy::default()
        .with_max_attempts(50)
        .with_backoff(Duration::from_millis(10), Duration::from_millis(200))
        .with_deadline(Duration::from_secs(20))
        .with_answer_timeout(Duration::from_secs(1))?)
}

/// A request that takes the hot key under `hierlock::retry`, and on its
/// first attempt waits for the fault, then uses its connection again.
struct Victim {
    holding: oneshot::Receiver<i64>,
    fault: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Result<u32, hierlock::Error>>,
}

impl Victim {
    fn start(db: DatabaseConnection, locker: Locker, policy: RetryPolicy) -> Victim {
        let (holding_tx, holding) = oneshot::channel();
        let (fault, fault_rx) = watch::channel(false);
        let holding_tx = Arc::new(Mutex::new(Some(holding_tx)));
        let attempts = Arc::new(AtomicU32::new(0));
        let task = tokio::spawn(async move {
            hierlock::retry(&db, &policy, async move |txn| {
                let attempt = attempts.fetch_add(1, Ordering::Relaxed) + 1;
                locker.acquire(txn, [hot().write()]).await?;
                let first = holding_tx.lock().expect("victim").take();
                if let Some(holding) = first {
                    let id = crate::storm::try_connection_id(txn).await?;
                    let _ = holding.send(id);
                    let mut fault = fault_rx.clone();
                    drop(fault.wait_for(|done| *done).await);
                    // The connection is gone (or silent): this must fail as
                    // a lost connection, a silent one within the answer
                    // timeout (the lock is this transaction's: no wait).
                    locker
                        .acquire_with(txn, [hot().write()], Wait::NoWait)
                        .await?;
                }
                Ok(attempt)
            })
            .await
        });
        Victim {
            holding,
            fault,
            task,
        }
    }

    /// Wait until the victim holds the hot key; its connection's id.
    async fn holding(&mut self) -> Result<i64, BoxError> {
        let id = tokio::time::timeout(Duration::from_secs(20), &mut self.holding)
            .await
            .map_err(|_| "the victim did not take the hot key within 20 s")?
            .map_err(|_| "the victim failed before it held the hot key")?;
        Ok(id)
    }

    /// The fault is in place: the victim may use its connection again.
    fn fault_done(&self) {
        self.fault.send_replace(true);
    }

    /// Wait for the victim's end and count it; `since` is when the fault
    /// struck.
    async fn finish(self, since: Instant, victims: &mut Victims) -> Result<(), BoxError> {
        let ended = tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .map_err(|_| "the victim did not end within 30 s")??;
        match ended {
            Ok(attempt) => {
                victims.recovered_in(since.elapsed());
                victims.saw(format!("recovered on attempt {attempt}"), attempt > 1);
            }
            Err(e) => victims.saw(format!("{:?} ({})", e.kind(), e), false),
        }
        Ok(())
    }
}
