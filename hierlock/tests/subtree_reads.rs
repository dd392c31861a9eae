//! `#[hierlocked(.., read_subtree)]` on SQLite (a file in the temporary
//! directory; no server needed): the method takes subtree-read locks and
//! gets a `ReadSubtree` proof. What those locks exclude on each server is
//! the conformance suite's (`tests/tests/conformance`).

use hierlock::proof::{AccountLevel, ReadSubtree, ResourceLevel};
use hierlock::sea_orm::{Database, DatabaseConnection, DatabaseTransaction, TransactionTrait};
use hierlock::{
    Access, Config, ErrorKind, HasLocker, KeyKind, LockMode, Locked, Locker, SubtreeReads, Target,
    hierlocked,
};

struct Repo {
    locker: Locker,
}

impl HasLocker for Repo {
    fn locker(&self) -> &Locker {
        &self.locker
    }
}

/// What a method saw of its proof.
#[derive(Debug)]
struct Seen {
    access: Access,
    requests: Vec<hierlock::Request>,
    covers_a_resource_read: bool,
    covers_a_resource_write: bool,
    /// The stripe keys the proof holds, and in which mode.
    stripes: Vec<LockMode>,
}

fn seen<L: hierlock::proof::LevelMarker>(lock: &Locked<'_, L, ReadSubtree>) -> Seen {
    let resource = Target::resource("u1", "a1", "r9");
    Seen {
        access: lock.access(),
        requests: lock.requests().to_vec(),
        covers_a_resource_read: lock.covers(&resource, Access::Read),
        covers_a_resource_write: lock.covers(&resource, Access::Write),
        stripes: lock
            .txn_locks()
            .iter()
            .filter(|l| l.key.kind == KeyKind::Stripe)
            .map(|l| l.mode)
            .collect(),
    }
}

impl Repo {
    /// Lock the account for writing, then a resource of it within that proof.
    #[hierlocked(user = user, account = account)]
    async fn account_then_resource(
        &self,
        txn: &DatabaseTransaction,
        user: &str,
        account: &str,
        resource: &str,
    ) -> hierlock::Result<(Vec<hierlock::PlannedLock>, Vec<hierlock::PlannedLock>)> {
        let outer = lock.txn_locks().to_vec();
        let inner = self
            .resource_within(txn, &lock, user, account, resource)
            .await?;
        Ok((outer, inner))
    }

    #[hierlocked(user = user, account = account, resource = resource, within = outer)]
    async fn resource_within(
        &self,
        txn: &DatabaseTransaction,
        outer: &Locked<'_, AccountLevel>,
        user: &str,
        account: &str,
        resource: &str,
    ) -> hierlock::Result<Vec<hierlock::PlannedLock>> {
        Ok(lock.txn_locks().to_vec())
    }

    #[hierlocked(user = user, account = account, read_subtree)]
    async fn account_total(
        &self,
        txn: &DatabaseTransaction,
        user: &str,
        account: &str,
    ) -> hierlock::Result<Seen> {
        let proof: &Locked<'_, AccountLevel, ReadSubtree> = &lock;
        Ok(seen(proof))
    }

    #[hierlocked(user = user, account = account, resource = resource, read_subtree)]
    async fn resource_read(
        &self,
        txn: &DatabaseTransaction,
        user: &str,
        account: &str,
        resource: &str,
    ) -> hierlock::Result<Seen> {
        let proof: &Locked<'_, ResourceLevel, ReadSubtree> = &lock;
        Ok(seen(proof))
    }
}

async fn database(name: &str) -> DatabaseConnection {
    let path = std::env::temp_dir().join(format!(
        "hierlock-subtree-reads-{name}-{}.sqlite",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    Database::connect(format!("sqlite://{}?mode=rwc", path.display()))
        .await
        .expect("SQLite opens")
}

const STRIPES: u16 = 4;

async fn striped_repo(db: &DatabaseConnection) -> Repo {
    let config =
        Config::default().with_subtree_reads(SubtreeReads::striped(STRIPES).expect("4 stripes"));
    Repo {
        locker: Locker::connect(db, config).await.expect("locker"),
    }
}

#[tokio::test]
async fn a_read_subtree_method_runs_with_a_subtree_read_proof() {
    let db = database("account").await;
    let repo = striped_repo(&db).await;
    let txn = db.begin().await.expect("begin");
    let seen = repo
        .account_total(&txn, "u1", "a1")
        .await
        .expect("the body ran");
    txn.commit().await.expect("commit");
    assert_eq!(seen.access, Access::ReadSubtree, "{seen:?}");
    assert_eq!(
        seen.requests,
        [Target::account("u1", "a1").read_subtree()],
        "{seen:?}"
    );
    // It covers reads below the account, never a write.
    assert!(seen.covers_a_resource_read, "{seen:?}");
    assert!(!seen.covers_a_resource_write, "{seen:?}");
    // Shared on every stripe of the account: what excludes writers below it.
    assert_eq!(
        seen.stripes,
        [LockMode::Shared; STRIPES as usize],
        "{seen:?}"
    );
}

#[tokio::test]
async fn a_subtree_read_of_a_resource_is_a_plain_read() {
    let db = database("resource").await;
    let repo = striped_repo(&db).await;
    let txn = db.begin().await.expect("begin");
    let seen = repo
        .resource_read(&txn, "u1", "a1", "r9")
        .await
        .expect("the body ran");
    txn.commit().await.expect("commit");
    assert_eq!(seen.access, Access::ReadSubtree, "{seen:?}");
    assert!(seen.covers_a_resource_read, "{seen:?}");
    assert!(!seen.covers_a_resource_write, "{seen:?}");
    assert!(seen.stripes.is_empty(), "no stripe is locked: {seen:?}");
}

/// Without the stripe layout the call is refused before the body runs.
#[tokio::test]
async fn without_stripes_a_read_subtree_method_is_refused() {
    let db = database("unstriped").await;
    let repo = Repo {
        locker: Locker::connect(&db, Config::default())
            .await
            .expect("locker"),
    };
    let txn = db.begin().await.expect("begin");
    let err = repo
        .account_total(&txn, "u1", "a1")
        .await
        .expect_err("subtree reads are off");
    assert_eq!(err.kind(), ErrorKind::Misuse, "{err}");
    assert!(err.to_string().contains("needs subtree reads"), "{err}");
}

/// In the striped layout a resource written within its account's write lock
/// keeps the global order: it takes no stripe (the account lock announced
/// the transaction's writes below the user and is exclusive on the account),
/// only its own key, after every key held.
#[tokio::test]
async fn a_resource_within_an_account_write_takes_only_its_own_key() {
    let db = database("within").await;
    let repo = striped_repo(&db).await;
    let txn = db.begin().await.expect("begin");
    let (outer, inner) = repo
        .account_then_resource(&txn, "u1", "a1", "r1")
        .await
        .expect("a nested resource write is in order");
    txn.commit().await.expect("commit");
    let new: Vec<_> = inner.iter().filter(|l| !outer.contains(l)).collect();
    assert_eq!(new.len(), 1, "{new:?}");
    assert_eq!(new[0].key.kind, KeyKind::Node);
    assert_eq!(new[0].key.level, hierlock::Level::Resource);
    assert_eq!(new[0].mode, LockMode::Exclusive);
    // The account lock's own stripe: one, on the user.
    let stripes: Vec<_> = outer
        .iter()
        .filter(|l| l.key.kind == KeyKind::Stripe)
        .collect();
    assert_eq!(stripes.len(), 1, "{outer:?}");
    assert_eq!(stripes[0].key.level, hierlock::Level::User);
}
