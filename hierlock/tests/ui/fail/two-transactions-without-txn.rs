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
    #[hierlocked(user = user)]
    async fn copy(
        &self,
        source: &DatabaseTransaction,
        target: &DatabaseTransaction,
        user: i64,
    ) -> hierlock::Result<()> {
        Ok(())
    }
}

fn main() {}
