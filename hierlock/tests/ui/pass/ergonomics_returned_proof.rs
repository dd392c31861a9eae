//! A proof returned with the transaction's lifetime `'t`: the expansion
//! reborrows the transaction (`&*txn`), not the parameter, for every
//! reference parameter: `&'t DatabaseTransaction`, `&'t mut ..`, a generic
//! `&'t C` bounded by `hierlock::AsTransaction`; and in free functions.
#![deny(warnings)]
#![allow(dead_code)]

use hierlock::proof::{AccountLevel, Read, ResourceLevel, UserLevel};
use hierlock::sea_orm::DatabaseTransaction;
use hierlock::{AsTransaction, HasLocker, Locked, Locker, hierlocked};

struct Repo {
    locker: Locker,
}

impl HasLocker for Repo {
    fn locker(&self) -> &Locker {
        &self.locker
    }
}

impl Repo {
    #[hierlocked(user = user, account = account)]
    async fn account<'t>(
        &self,
        txn: &'t DatabaseTransaction,
        user: i64,
        account: i64,
    ) -> hierlock::Result<Locked<'t, AccountLevel>> {
        Ok(lock)
    }

    #[hierlocked(user = user, account = 1, resource = 2, read)]
    async fn mutable<'t>(
        &self,
        txn: &'t mut DatabaseTransaction,
        user: &str,
    ) -> hierlock::Result<Locked<'t, ResourceLevel, Read>> {
        Ok(lock)
    }

    #[hierlocked(txn = work, user = 1)]
    async fn generic<'t, C: AsTransaction + Sync>(
        &self,
        work: &'t C,
    ) -> hierlock::Result<Locked<'t, UserLevel>> {
        Ok(lock)
    }

    /// The proof outlives the call and `self`'s borrow, not the
    /// transaction.
    async fn caller(txn: &DatabaseTransaction, locker: Locker) -> hierlock::Result<()> {
        let proof = {
            let repo = Repo { locker };
            repo.account(txn, 1, 2).await?
        };
        let _ = proof.txn();
        Ok(())
    }
}

#[hierlocked(user = 1, account = 2, locker = locker)]
async fn free<'t>(
    locker: &Locker,
    txn: &'t DatabaseTransaction,
) -> hierlock::Result<Locked<'t, AccountLevel>> {
    Ok(lock)
}

fn main() {}
