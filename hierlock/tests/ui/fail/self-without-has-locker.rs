use hierlock::hierlocked;
use hierlock::sea_orm::DatabaseTransaction;

struct Repo;

impl Repo {
    #[hierlocked(user = user)]
    async fn rename(&self, txn: &DatabaseTransaction, user: i64) -> hierlock::Result<()> {
        Ok(())
    }
}

fn main() {}
