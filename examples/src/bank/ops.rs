//! The operations, what each one locks, and how one runs:
//! open a transaction → lock → read → check → write → commit, retried on
//! lock conflicts.

use std::time::{Duration, Instant};

use hierlock::{ErrorKind, Locker, Request, Target};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, DatabaseTransaction, DbErr, EntityTrait,
    PaginatorTrait, QueryFilter, RuntimeErr, Set, TransactionTrait,
};

use super::entity::{account, purchase, resource};
use super::{Options, Rng, Tally};

/// An account, by its primary key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccountKey {
    /// The owner.
    pub user: i32,
    /// The account, numbered per user.
    pub account: i32,
}

impl AccountKey {
    /// The lock target naming this account.
    pub fn target(self) -> Target {
        Target::account(self.user, self.account)
    }
}

/// An item on sale, by its primary key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceKey {
    /// The seller.
    pub user: i32,
    /// The account selling the item.
    pub account: i32,
    /// The item, numbered per account.
    pub resource: i32,
}

impl ResourceKey {
    /// The lock target naming this item.
    pub fn target(self) -> Target {
        Target::resource(self.user, self.account, self.resource)
    }
}

/// A purchase request: `buyer` pays the item's price into the item's till
/// and takes one unit, once per `request_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Purchase {
    /// The client's request ID: a retried or double-clicked request repeats it.
    pub request_id: i64,
    /// Who pays.
    pub buyer: AccountKey,
    /// What is bought.
    pub item: ResourceKey,
}

/// One unit of work of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Move `amount` between accounts of two different users, if `from` has it.
    Transfer {
        /// The account paying.
        from: AccountKey,
        /// The account paid.
        to: AccountKey,
        /// How much.
        amount: i64,
    },
    /// Put new money into an item's till.
    Deposit {
        /// The item.
        to: ResourceKey,
        /// How much.
        amount: i64,
    },
    /// A purchase, sent once.
    Purchase(Purchase),
    /// The same purchase sent twice at once (seed 004's double click): both
    /// submissions check "not purchased yet" and "enough money".
    DoubleSubmit(Purchase),
}

impl Op {
    /// Draw an operation: half transfers, the rest deposits, purchases and
    /// double-submitted purchases. `request_id` names a purchase, if one is drawn.
    pub fn random(rng: &mut Rng, options: &Options, request_id: i64) -> Op {
        let account = |rng: &mut Rng, user: i32| AccountKey {
            user,
            account: rng.pick(options.accounts),
        };
        let item = |rng: &mut Rng| ResourceKey {
            user: rng.pick(options.users),
            account: rng.pick(options.accounts),
            resource: rng.pick(options.resources),
        };
        let purchase = |rng: &mut Rng| {
            let buyer = rng.pick(options.users);
            Purchase {
                request_id,
                buyer: account(rng, buyer),
                item: item(rng),
            }
        };
        match rng.below(100) {
            0..50 => {
                let from = rng.pick(options.users);
                // Any other user: shift by 1..users-1, wrapping around.
                let shift = rng.pick(options.users - 1);
                let to = (from - 1 + shift) % options.users + 1;
                Op::Transfer {
                    from: account(rng, from),
                    to: account(rng, to),
                    amount: 1 + rng.below(500) as i64,
                }
            }
            50..65 => Op::Deposit {
                to: item(rng),
                amount: 1 + rng.below(100) as i64,
            },
            65..85 => Op::Purchase(purchase(rng)),
            _ => Op::DoubleSubmit(purchase(rng)),
        }
    }

    /// What the operation must hold exclusively, asked for in ONE
    /// `Locker::acquire` call: hierlock takes all of it in one global order,
    /// so two transfers A→B and B→A cannot deadlock.
    pub fn locks(&self) -> Vec<Request> {
        match *self {
            Op::Transfer { from, to, .. } => vec![from.target().write(), to.target().write()],
            Op::Deposit { to, .. } => vec![to.target().write()],
            Op::Purchase(p) | Op::DoubleSubmit(p) => {
                // The buyer's account covers its "already purchased?" check
                // as well as its balance.
                vec![p.buyer.target().write(), p.item.target().write()]
            }
        }
    }

    /// The kind of operation, for the report.
    pub fn kind(&self) -> Kind {
        match self {
            Op::Transfer { .. } => Kind::Transfer,
            Op::Deposit { .. } => Kind::Deposit,
            Op::Purchase(_) => Kind::Purchase,
            Op::DoubleSubmit(_) => Kind::DoubleSubmit,
        }
    }
}

/// The kinds of [`Op`], in the order the report lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// [`Op::Transfer`].
    Transfer,
    /// [`Op::Deposit`].
    Deposit,
    /// [`Op::Purchase`].
    Purchase,
    /// [`Op::DoubleSubmit`].
    DoubleSubmit,
}

impl Kind {
    /// The plural, for the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Transfer => "transfers",
            Kind::Deposit => "deposits",
            Kind::Purchase => "purchases",
            Kind::DoubleSubmit => "double-submitted purchases",
        }
    }
}

/// How a transaction ended when nothing went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Done {
    /// Its writes were committed.
    Committed,
    /// A check said no; it was rolled back.
    Declined(Decline),
}

/// Why an operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Decline {
    /// The paying account has less than the amount.
    InsufficientFunds,
    /// No units left.
    SoldOut,
    /// This request ID was already purchased.
    AlreadyPurchased,
}

impl Decline {
    /// A short text for the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Decline::InsufficientFunds => "insufficient funds",
            Decline::SoldOut => "sold out",
            Decline::AlreadyPurchased => "already purchased",
        }
    }
}

/// How many times one transaction is tried before giving up.
pub const MAX_ATTEMPTS: u32 = 5;

/// An acquisition slower than this is counted as a lock wait.
pub const LOCK_WAIT: Duration = Duration::from_millis(5);

/// Runs operations against the bank, with or without hierlock.
#[derive(Clone, Debug)]
pub struct Teller {
    /// The pool; each transaction takes one connection from it.
    pub db: DatabaseConnection,
    /// `None` runs the very same code without locks (`--only unlocked`).
    pub locker: Option<Locker>,
    /// Time the application spends between its check and its write.
    pub think: Duration,
}

impl Teller {
    /// Run `op` to the end (retries included) and count what happened.
    pub async fn perform(&self, op: Op, rng: &mut Rng, tally: &mut Tally) {
        *tally.ops.entry(op.kind()).or_default() += 1;
        let Op::DoubleSubmit(p) = op else {
            self.run_txn(op, rng, tally).await;
            return;
        };
        // Both submissions run at once, on two connections, as two web
        // requests would.
        let (mut rng_a, mut rng_b) = (rng.split(), rng.split());
        let (mut tally_a, mut tally_b) = (Tally::default(), Tally::default());
        tokio::join!(
            self.run_txn(Op::DoubleSubmit(p), &mut rng_a, &mut tally_a),
            self.run_txn(Op::DoubleSubmit(p), &mut rng_b, &mut tally_b),
        );
        tally.add(&tally_a);
        tally.add(&tally_b);
        tally.double_submits += 1;
    }

    /// One transaction with bounded retries.
    async fn run_txn(&self, op: Op, rng: &mut Rng, tally: &mut Tally) {
        tally.transactions += 1;
        for attempt in 1..=MAX_ATTEMPTS {
            let failure = match self.attempt(op, tally).await {
                Ok(done) => {
                    match done {
                        Done::Committed => {
                            tally.committed += 1;
                            if let Op::Deposit { amount, .. } = op {
                                tally.deposited += amount;
                            }
                        }
                        Done::Declined(why) => *tally.declined.entry(why).or_default() += 1,
                    }
                    return;
                }
                Err(failure) => failure,
            };
            *tally.errors.entry(failure.label()).or_default() += 1;
            if let (Failure::CommitUnknown(_), Op::Deposit { amount, .. }) = (&failure, op) {
                tally.in_doubt.push(amount);
            }
            if failure.is_deadlock() {
                tally.deadlocks += 1;
            }
            if !failure.is_retryable() || attempt == MAX_ATTEMPTS {
                break;
            }
            tally.retries += 1;
            // Back off a little, with jitter, so the same two do not collide again.
            let millis = u64::from(attempt) * 2 + rng.below(5);
            tokio::time::sleep(Duration::from_millis(millis)).await;
        }
        tally.failed += 1;
    }

    /// One try: begin, lock, read-check-write, commit (or roll back).
    async fn attempt(&self, op: Op, tally: &mut Tally) -> Result<Done, Failure> {
        let txn = self.db.begin().await?;
        match self.locked_body(&txn, op, tally).await {
            Ok(Done::Committed) => {
                txn.commit().await.map_err(Failure::CommitUnknown)?;
                Ok(Done::Committed)
            }
            Ok(declined) => {
                txn.rollback().await?;
                Ok(declined)
            }
            Err(failure) => {
                // Best effort: the failure is what gets reported, and a
                // connection whose rollback failed is not reused by the pool.
                let _ = txn.rollback().await;
                Err(failure)
            }
        }
    }

    async fn locked_body(
        &self,
        txn: &DatabaseTransaction,
        op: Op,
        tally: &mut Tally,
    ) -> Result<Done, Failure> {
        if let Some(locker) = &self.locker {
            // The locks come first, before any read: whatever is read below
            // cannot change until this transaction ends.
            let asked = Instant::now();
            locker.acquire(txn, op.locks()).await?;
            if asked.elapsed() > LOCK_WAIT {
                tally.lock_waits += 1;
            }
        }
        let done = match op {
            Op::Transfer { from, to, amount } => {
                transfer(txn, from, to, amount, self.think).await?
            }
            Op::Deposit { to, amount } => deposit(txn, to, amount, self.think).await?,
            Op::Purchase(p) | Op::DoubleSubmit(p) => buy(txn, p, self.think).await?,
        };
        Ok(done)
    }
}

// The bodies below are ordinary ORM code: read the rows, check them in Rust,
// write back the values computed from what was read. That is exactly the
// code that loses updates when two transactions read the same row before
// either writes; holding the locks is what makes it correct.

async fn transfer(
    txn: &DatabaseTransaction,
    from: AccountKey,
    to: AccountKey,
    amount: i64,
    think: Duration,
) -> Result<Done, DbErr> {
    let payer = find_account(txn, from).await?;
    let payee = find_account(txn, to).await?;
    if payer.balance < amount {
        return Ok(Done::Declined(Decline::InsufficientFunds));
    }
    tokio::time::sleep(think).await;
    let (payer_balance, payee_balance) = (payer.balance - amount, payee.balance + amount);
    set_balance(txn, payer, payer_balance).await?;
    set_balance(txn, payee, payee_balance).await?;
    Ok(Done::Committed)
}

async fn deposit(
    txn: &DatabaseTransaction,
    to: ResourceKey,
    amount: i64,
    think: Duration,
) -> Result<Done, DbErr> {
    let item = find_resource(txn, to).await?;
    tokio::time::sleep(think).await;
    let balance = item.balance + amount;
    let mut item: resource::ActiveModel = item.into();
    item.balance = Set(balance);
    item.update(txn).await?;
    Ok(Done::Committed)
}

/// Seed 004's purchase: "not bought yet?", "enough money?", then take the
/// item and the money.
async fn buy(txn: &DatabaseTransaction, p: Purchase, think: Duration) -> Result<Done, DbErr> {
    let already = purchase::Entity::find()
        .filter(purchase::Column::RequestId.eq(p.request_id))
        .count(txn)
        .await?;
    if already > 0 {
        return Ok(Done::Declined(Decline::AlreadyPurchased));
    }
    let buyer = find_account(txn, p.buyer).await?;
    let item = find_resource(txn, p.item).await?;
    if item.stock < 1 {
        return Ok(Done::Declined(Decline::SoldOut));
    }
    if buyer.balance < item.price {
        return Ok(Done::Declined(Decline::InsufficientFunds));
    }
    tokio::time::sleep(think).await;
    let price = item.price;
    let balance = buyer.balance - price;
    set_balance(txn, buyer, balance).await?;
    let (stock, till) = (item.stock - 1, item.balance + price);
    let mut item: resource::ActiveModel = item.into();
    item.stock = Set(stock);
    item.balance = Set(till);
    item.update(txn).await?;
    purchase::ActiveModel {
        request_id: Set(p.request_id),
        buyer_user_id: Set(p.buyer.user),
        buyer_account_id: Set(p.buyer.account),
        seller_user_id: Set(p.item.user),
        seller_account_id: Set(p.item.account),
        resource_id: Set(p.item.resource),
        price: Set(price),
        ..Default::default()
    }
    .insert(txn)
    .await?;
    Ok(Done::Committed)
}

async fn find_account(txn: &DatabaseTransaction, key: AccountKey) -> Result<account::Model, DbErr> {
    account::Entity::find_by_id((key.user, key.account))
        .one(txn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("{key:?}")))
}

async fn find_resource(
    txn: &DatabaseTransaction,
    key: ResourceKey,
) -> Result<resource::Model, DbErr> {
    resource::Entity::find_by_id((key.user, key.account, key.resource))
        .one(txn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("{key:?}")))
}

/// `UPDATE bank_accounts SET balance = <computed> WHERE <key>`, as an ORM
/// writes it: the new value, not `balance - amount`.
async fn set_balance(
    txn: &DatabaseTransaction,
    account: account::Model,
    balance: i64,
) -> Result<(), DbErr> {
    let mut account: account::ActiveModel = account.into();
    account.balance = Set(balance);
    account.update(txn).await?;
    Ok(())
}

/// Why a transaction did not finish.
#[derive(Debug)]
pub enum Failure {
    /// hierlock could not take the locks.
    Lock(hierlock::Error),
    /// A statement of the transaction itself failed.
    Db(DbErr),
    /// The `COMMIT` failed: whether it took effect is unknown, so it is not
    /// run again.
    CommitUnknown(DbErr),
}

impl From<hierlock::Error> for Failure {
    fn from(err: hierlock::Error) -> Self {
        Failure::Lock(err)
    }
}

impl From<DbErr> for Failure {
    fn from(err: DbErr) -> Self {
        Failure::Db(err)
    }
}

/// A conflict reported by the server for the transaction's own statements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Conflict {
    /// The server broke a deadlock by failing this transaction.
    Deadlock,
    /// Another transaction held what this one wanted, for too long (the
    /// text says how the server put it).
    Busy(&'static str),
    /// PostgreSQL could not serialize the transaction.
    Serialization,
}

impl Failure {
    /// Whether running the whole transaction again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Failure::Lock(err) => err.is_retryable(),
            Failure::Db(err) => conflict(err).is_some(),
            Failure::CommitUnknown(_) => false,
        }
    }

    /// Whether the server broke a deadlock by failing this transaction.
    pub fn is_deadlock(&self) -> bool {
        match self {
            Failure::Lock(err) => err.kind() == ErrorKind::Deadlock,
            Failure::Db(err) => conflict(err) == Some(Conflict::Deadlock),
            Failure::CommitUnknown(_) => false,
        }
    }

    /// A short description, to count failures by.
    pub fn label(&self) -> String {
        match self {
            Failure::Lock(err) => match err.kind() {
                ErrorKind::Deadlock => "deadlock (taking locks)".into(),
                ErrorKind::LockTimeout => "lock timeout (taking locks)".into(),
                ErrorKind::WouldBlock => "would block (taking locks)".into(),
                _ => format!("hierlock: {err}"),
            },
            Failure::Db(err) => match conflict(err) {
                Some(Conflict::Deadlock) => "deadlock".into(),
                Some(Conflict::Busy(what)) => what.into(),
                Some(Conflict::Serialization) => "serialization failure".into(),
                // hierlock's own code table says whether the connection is
                // gone (a server shutting down ends it with an error of its
                // own: MySQL's 1053, PostgreSQL's 57P01).
                None if hierlock::Error::database("a statement", err.clone()).kind()
                    == ErrorKind::ConnectionLost =>
                {
                    format!("connection lost: {err}")
                }
                None => err.to_string(),
            },
            Failure::CommitUnknown(err) => format!("commit outcome unknown: {err}"),
        }
    }
}

/// Classify a failed statement by the server's error code.
fn conflict(err: &DbErr) -> Option<Conflict> {
    let (DbErr::Conn(RuntimeErr::SqlxError(e))
    | DbErr::Exec(RuntimeErr::SqlxError(e))
    | DbErr::Query(RuntimeErr::SqlxError(e))) = err
    else {
        return None;
    };
    let db = e.as_database_error()?;
    if let Some(mysql) = db.try_downcast_ref::<sea_orm::sqlx::mysql::MySqlDatabaseError>() {
        return match mysql.number() {
            1213 => Some(Conflict::Deadlock), // ER_LOCK_DEADLOCK
            1205 => Some(Conflict::Busy("lock wait timeout")), // ER_LOCK_WAIT_TIMEOUT
            _ => None,
        };
    }
    match db.code()?.as_ref() {
        "40P01" => Some(Conflict::Deadlock), // PostgreSQL deadlock_detected
        "40001" => Some(Conflict::Serialization), // PostgreSQL serialization_failure
        "55P03" => Some(Conflict::Busy("lock timeout")), // PostgreSQL lock_not_available
        // SQLite: BUSY, LOCKED, BUSY_RECOVERY: another connection is writing.
        "5" | "6" | "261" => Some(Conflict::Busy("database is locked")),
        // SQLite BUSY_SNAPSHOT: this transaction read before another one
        // committed, and now wants to write: only a restart helps.
        "517" => Some(Conflict::Busy("database is locked (stale snapshot)")),
        _ => None,
    }
}
