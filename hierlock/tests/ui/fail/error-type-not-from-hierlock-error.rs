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

/// The repository's own error type, with no `From<hierlock::Error>`.
#[derive(Debug)]
enum RepoError {
    NotFound,
}

impl Repo {
    #[hierlocked(user = user)]
    async fn touch(&self, txn: &DatabaseTransaction, user: i64) -> Result<(), RepoError> {
        Ok(())
    }
}

fn main() {}
