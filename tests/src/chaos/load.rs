//! The steady load: the bank example's tellers, run until told to stop.
//!
//! Each teller runs the bank's operations (transfers, deposits, purchases,
//! double-submitted purchases) one after another through hierlock, with the
//! bank's own retries. Nothing a fault does is aimed at them: every error
//! they count is an error that reached a bystander. The one exception is a
//! fault that strikes the whole server (a crash): an operation that was
//! running or began while its [`Window`] was open is counted apart, as hit.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

use hierlock::Locker;
use hierlock_examples::bank::ops::{Op, Teller};
use hierlock_examples::bank::{Options, Rng, Tally};
use sea_orm::DatabaseConnection;
use tokio::task::JoinHandle;

/// When a fault strikes every request on the server: open from the fault
/// until the server serves again. Odd while open; every opening and
/// closing moves it on, so an operation that saw it move was hit.
#[derive(Clone, Debug, Default)]
pub(super) struct Window(Arc<AtomicU64>);

impl Window {
    /// The fault strikes.
    pub(super) fn open(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    /// The server serves again.
    pub(super) fn close(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// What the tellers did: apart from, and during, the fault's window.
#[derive(Debug, Default)]
pub(super) struct Tallies {
    /// Operations that ran entirely outside the window.
    pub bystanders: Tally,
    /// Operations running while the window was open.
    pub hit: Tally,
}

/// Tellers at work until [`Load::stop`].
pub(super) struct Load {
    stop: Arc<AtomicBool>,
    tasks: Vec<JoinHandle<Tallies>>,
}

impl Load {
    /// Start `options.tasks` tellers on `db`, locking through `locker`.
    /// Purchase request IDs come from `next_request`, unique across phases.
    pub(super) fn start(
        db: &DatabaseConnection,
        locker: &Locker,
        options: &Options,
        rng: &mut Rng,
        next_request: &Arc<AtomicI64>,
        window: &Window,
    ) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let teller = Teller {
            db: db.clone(),
            locker: Some(locker.clone()),
            think: options.think,
        };
        let tasks = (0..options.tasks)
            .map(|_| {
                let (teller, stop, options) = (teller.clone(), Arc::clone(&stop), options.clone());
                let (next_request, window) = (Arc::clone(next_request), window.clone());
                let mut rng = rng.split();
                tokio::spawn(async move {
                    let mut tallies = Tallies::default();
                    while !stop.load(Ordering::Relaxed) {
                        let request = next_request.fetch_add(1, Ordering::Relaxed);
                        let op = Op::random(&mut rng, &options, request);
                        let mut tally = Tally::default();
                        let began = window.now();
                        teller.perform(op, &mut rng, &mut tally).await;
                        let hit = began % 2 == 1 || window.now() != began;
                        if hit {
                            &mut tallies.hit
                        } else {
                            &mut tallies.bystanders
                        }
                        .add(&tally);
                    }
                    tallies
                })
            })
            .collect();
        Load { stop, tasks }
    }

    /// Let every teller finish the operation it is on, and add up what they
    /// did.
    ///
    /// # Panics
    /// If a teller panicked.
    pub(super) async fn stop(self) -> Tallies {
        self.stop.store(true, Ordering::Relaxed);
        let mut total = Tallies::default();
        for task in self.tasks {
            let tallies = task.await.expect("a teller panicked");
            total.bystanders.add(&tallies.bystanders);
            total.hit.add(&tallies.hit);
        }
        total
    }
}
