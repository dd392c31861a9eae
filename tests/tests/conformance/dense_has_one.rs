//! A `has_one` relation in a protected nested save, on every backend: the
//! child is written with the proof; replacing or clearing it deletes the
//! old one, each row checked as its flat write; a child outside the proof
//! is `NotCovered` and nothing of the save remains, the rows it had
//! already written included.
//!
//! The schema is `dense`'s: a user has one profile (user level). User 2
//! has profile 20 (written here, raw); the proof is a write lock on user 1.

use hierlock::ErrorKind;
use hierlock::sea_orm::ActiveValue::{NotSet, Set};
use hierlock_tests::{Backend, Fixture};

use crate::dense::{as_user_1, nested_error, profile, query_rows, seeded, stored_user, user};

/// Every profile: (user, bio).
async fn profiles(fx: &Fixture) -> Vec<(i64, String)> {
    let sql = "SELECT user_id, bio FROM hld_profiles ORDER BY user_id";
    query_rows(fx, sql)
        .await
        .iter()
        .map(|r| {
            (
                r.try_get("", "user_id").unwrap(),
                r.try_get("", "bio").unwrap(),
            )
        })
        .collect()
}

/// A new profile, its user left to the nested save.
fn new_profile(bio: &str) -> profile::ActiveModel {
    profile::ActiveModel {
        id: NotSet,
        user_id: NotSet,
        bio: Set(bio.to_owned()),
    }
}

pub async fn dense_nested_has_one_under_a_proof(backend: Backend) {
    let (fx, _turn) = seeded(backend).await;
    fx.exec("INSERT INTO hld_profiles (id, user_id, bio) VALUES (20, 2, 'bob')")
        .await;
    let txn = fx.begin().await;
    as_user_1(&fx.locker, &txn, async |lock| {
        // A new user with its profile: the profile's user is set by the save.
        user::NestedActiveModel::from(user::ActiveModel {
            id: Set(1),
            email: Set("alice@example.com".to_owned()),
        })
        .set_profile(new_profile("hi"))
        .insert(lock)
        .await
        .expect("nested insert of user 1 with its profile");
        // Another profile in its place: the old one is deleted, checked.
        user::NestedActiveModel::from(stored_user(lock, 1).await)
            .set_profile(new_profile("new"))
            .save(lock)
            .await
            .expect("replacing user 1's profile");

        // User 2's profile moved to user 1: user 1's profile is deleted
        // first (covered), then the move is refused, and the delete undone.
        let bobs = profile::Entity::find_by_id(20)
            .one(lock.txn())
            .await
            .expect("read profile 20")
            .expect("profile 20");
        let outcome = user::NestedActiveModel::from(stored_user(lock, 1).await)
            .set_profile(profile::ActiveModel::from(bobs))
            .save(lock)
            .await;
        let e = nested_error(outcome, ErrorKind::NotCovered, "moving user 2's profile");
        assert!(e.to_string().contains("hld_profiles"), "{e}");
        // Clearing user 2's profile would delete it.
        let outcome = user::NestedActiveModel::from(stored_user(lock, 2).await)
            .clear_profile()
            .save(lock)
            .await;
        nested_error(outcome, ErrorKind::NotCovered, "clearing user 2's profile");
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(
        profiles(&fx).await,
        [(1, "new".to_owned()), (2, "bob".to_owned())]
    );
}
