use hierlock::sea_orm::DatabaseTransaction;
use hierlock::{HasLocker, Locker, hierlocked};

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
    async fn touch(
        &self,
        txn: &DatabaseTransaction,
        user: i64,
        account: Option<i64>,
    ) -> hierlock::Result<()> {
        Ok(())
    }
}

fn main() {}
