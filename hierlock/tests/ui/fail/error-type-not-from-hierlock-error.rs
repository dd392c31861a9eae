use hierlock::sea_orm::{DatabaseTransaction, DbErr};
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
    async fn touch(&self, txn: &DatabaseTransaction, user: i64) -> Result<(), DbErr> {
        Ok(())
    }
}

fn main() {}
