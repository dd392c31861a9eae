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
    async fn rename(&self, user: i64, name: &str) -> hierlock::Result<()> {
        Ok(())
    }
}

fn main() {}
