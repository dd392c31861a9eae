//! `via` (many-to-many) relations in a protected nested save, on every
//! backend: the junction rows SeaORM's nested save links and unlinks are
//! written with the proof, each checked as its flat write; a link outside
//! the proof is `NotCovered` and nothing of the save remains.
//!
//! The schema is `dense`'s: a resource has tags (user level) through
//! `resource_tag`, whose rows sit at their resource's node. User 2's
//! resource 200 is linked to its tag 5 and to user 1's tag 1 (written
//! here, raw); the proof is a write lock on user 1. Users follow users
//! through `user_follower` (self-referencing), a follow at the followed
//! user's node.

use hierlock::sea_orm::{ActiveValue::Set, ConnectionTrait, QueryFilter};
use hierlock::{ErrorKind, Locked, proof::UserLevel};
use hierlock_tests::{Backend, Fixture};

use crate::dense::{
    account, as_user_1, nested_error, new_account, new_resource, query_rows, resource, seeded,
    stored_user, tag, user,
};

/// Every link: (resource, tag, user, account).
async fn links(fx: &Fixture) -> Vec<(i64, i64, i64, i64)> {
    let sql = "SELECT resource_id, tag_id, user_id, account_id FROM hld_resource_tags \
               ORDER BY resource_id, tag_id";
    query_rows(fx, sql)
        .await
        .iter()
        .map(|r| {
            (
                r.try_get("", "resource_id").unwrap(),
                r.try_get("", "tag_id").unwrap(),
                r.try_get("", "user_id").unwrap(),
                r.try_get("", "account_id").unwrap(),
            )
        })
        .collect()
}

/// `dense`'s seed, and user 2's tag 5 with its link to resource 200.
async fn seeded_with_links(backend: Backend) -> (Fixture, tokio::sync::MutexGuard<'static, ()>) {
    let (fx, turn) = seeded(backend).await;
    fx.exec("INSERT INTO hld_tags (id, user_id, label) VALUES (5, 2, 'bobs')")
        .await;
    fx.exec(
        "INSERT INTO hld_resource_tags (resource_id, tag_id, user_id, account_id) \
         VALUES (200, 5, 2, 20)",
    )
    .await;
    (fx, turn)
}

/// User 1, its account 10 and tags 1 to 3, written flat.
async fn user_1_with_tags(lock: &Locked<'_, UserLevel>) {
    user::Entity::insert(user::ActiveModel {
        id: Set(1),
        email: Set("alice@example.com".to_owned()),
    })
    .exec(lock)
    .await
    .expect("insert user 1");
    account::Entity::insert(new_account(10, "main"))
        .exec(lock)
        .await
        .expect("insert account 10");
    for id in 1..=3 {
        tag::Entity::insert(new_tag(id, 1))
            .exec(lock)
            .await
            .expect("insert a tag");
    }
}

fn new_tag(id: i64, user: i64) -> tag::ActiveModel {
    tag::ActiveModel {
        id: Set(id),
        user_id: Set(user),
        label: Set(format!("t{id}")),
    }
}

/// A stored tag, as a nested save links it (unchanged: linked, not
/// written).
async fn stored_tag(lock: &Locked<'_, UserLevel>, id: i64) -> tag::ActiveModel {
    tag::Entity::find_by_id(id)
        .one(lock.txn())
        .await
        .expect("read a tag")
        .expect("the tag")
        .into()
}

/// A resource of account 10.
fn resource_of_10(id: i64) -> resource::ActiveModel {
    let mut am = new_resource(id, 1, 1);
    am.account_id = Set(10);
    am
}

pub async fn dense_nested_links_under_a_proof_write_every_junction_row(backend: Backend) {
    let (fx, _turn) = seeded_with_links(backend).await;
    let txn = fx.begin().await;
    as_user_1(&fx.locker, &txn, async |lock| {
        user_1_with_tags(lock).await;
        // A new resource linked to a stored tag and to a new one: the tag is
        // inserted, the links get their user and account from the resource.
        resource::NestedActiveModel::from(resource_of_10(100))
            .add_tag(stored_tag(lock, 1).await)
            .add_tag(new_tag(4, 1))
            .insert(lock)
            .await
            .expect("nested insert of resource 100 with two tags");
        // From the tag's side: the link's IDs come from the resource.
        let stored = resource::Entity::find_by_id(100)
            .one(lock.txn())
            .await
            .expect("read resource 100")
            .expect("resource 100");
        tag::NestedActiveModel::from(stored_tag(lock, 3).await)
            .add_resource(resource::ActiveModel::from(stored))
            .save(lock)
            .await
            .expect("nested save of tag 3 linking resource 100");
        // A link that exists is not inserted again.
        resource::NestedActiveModel::from(resource::ActiveModel::from(
            resource::Entity::find_by_id(100)
                .one(lock.txn())
                .await
                .expect("read resource 100")
                .expect("resource 100"),
        ))
        .add_tag(stored_tag(lock, 1).await)
        .save(lock)
        .await
        .expect("linking tag 1 again");

        // Replace: resource 101 linked to tags 1 and 2, then to 2 and 3.
        resource::NestedActiveModel::from(resource_of_10(101))
            .add_tag(stored_tag(lock, 1).await)
            .add_tag(stored_tag(lock, 2).await)
            .insert(lock)
            .await
            .expect("nested insert of resource 101");
        let loaded = resource::Entity::load()
            .filter(resource::COLUMN.id.eq(101_i64))
            .with(tag::Table)
            .one(lock.txn())
            .await
            .expect("load resource 101")
            .expect("resource 101");
        let mut replaced = resource::NestedActiveModel::from(loaded);
        replaced.tags.replace_all([
            tag::NestedActiveModel::from(stored_tag(lock, 2).await),
            tag::NestedActiveModel::from(stored_tag(lock, 3).await),
        ]);
        replaced
            .save(lock)
            .await
            .expect("Replace of resource 101's tags");

        // A deep delete of resource 102 takes its links with it.
        resource::NestedActiveModel::from(resource_of_10(102))
            .add_tag(stored_tag(lock, 2).await)
            .insert(lock)
            .await
            .expect("nested insert of resource 102");
        let doomed = resource::Entity::find_by_id(102)
            .one(lock.txn())
            .await
            .expect("read resource 102")
            .expect("resource 102");
        let deleted = doomed
            .cascade_delete(lock)
            .await
            .expect("cascade_delete of resource 102");
        assert_eq!(deleted.rows_affected, 2, "the resource and its link");
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(
        links(&fx).await,
        [
            (100, 1, 1, 10),
            (100, 3, 1, 10),
            (100, 4, 1, 10),
            (101, 2, 1, 10),
            (101, 3, 1, 10),
            (200, 5, 2, 20),
        ]
    );
}

pub async fn dense_nested_links_outside_the_proof_write_nothing(backend: Backend) {
    let (fx, _turn) = seeded_with_links(backend).await;
    let txn = fx.begin().await;
    as_user_1(&fx.locker, &txn, async |lock| {
        user_1_with_tags(lock).await;
        // User 2's resource 200 linked to user 1's tag 1, raw (as another
        // service of user 2's might have).
        lock.txn()
            .execute_unprepared(
                "INSERT INTO hld_resource_tags (resource_id, tag_id, user_id, account_id) \
                 VALUES (200, 1, 2, 20)",
            )
            .await
            .expect("raw link");
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    let before_links = links(&fx).await;

    let txn = fx.begin().await;
    as_user_1(&fx.locker, &txn, async |lock| {
        let bobs = resource::Entity::find_by_id(200)
            .one(lock.txn())
            .await
            .expect("read resource 200")
            .expect("resource 200");
        // Tag 2 linked to user 2's resource: the link sits at resource 200.
        let outcome = tag::NestedActiveModel::from(stored_tag(lock, 2).await)
            .add_resource(resource::ActiveModel::from(bobs))
            .save(lock)
            .await;
        let e = nested_error(
            outcome,
            ErrorKind::NotCovered,
            "a link at user 2's resource",
        );
        assert!(
            e.to_string().contains("hld_resource_tags"),
            "the error names the junction: {e}"
        );
        // A new tag with that link: the tag is written first, then the save
        // stops and rolls back, the tag with it.
        let bobs = resource::Entity::find_by_id(200)
            .one(lock.txn())
            .await
            .expect("read resource 200")
            .expect("resource 200");
        let outcome = tag::NestedActiveModel::from(new_tag(6, 1))
            .add_resource(resource::ActiveModel::from(bobs))
            .insert(lock)
            .await;
        nested_error(
            outcome,
            ErrorKind::NotCovered,
            "a new tag linked to user 2's resource",
        );
        // Unlinking tag 1 from everything (Replace with none) would delete
        // the link at user 2's resource.
        let loaded = tag::Entity::load()
            .filter(tag::COLUMN.id.eq(1_i64))
            .with(resource::Table)
            .one(lock.txn())
            .await
            .expect("load tag 1")
            .expect("tag 1");
        let mut unlinked = tag::NestedActiveModel::from(loaded);
        unlinked.resources.replace_all([]);
        let outcome = unlinked.save(lock).await;
        nested_error(
            outcome,
            ErrorKind::NotCovered,
            "unlinking user 2's resource",
        );
        // A deep delete of tag 1 would delete that link too.
        let tag_1 = tag::Entity::find_by_id(1)
            .one(lock.txn())
            .await
            .expect("read tag 1")
            .expect("tag 1");
        let outcome = tag_1.cascade_delete(lock).await;
        nested_error(outcome, ErrorKind::NotCovered, "cascade_delete of tag 1");
    })
    .await
    .expect("locks");
    // The transaction goes on after the refusals, and commits.
    txn.commit().await.expect("commit");
    assert_eq!(links(&fx).await, before_links, "no link written or deleted");
    let mut tags = tag::Entity::find()
        .all(&fx.db)
        .await
        .expect("read tags")
        .into_iter()
        .map(|t| t.id)
        .collect::<Vec<_>>();
    tags.sort();
    assert_eq!(tags, [1, 2, 3, 5], "no tag written or deleted");
}

/// Every follow: (followed, follower).
async fn follows(fx: &Fixture) -> Vec<(i64, i64)> {
    let sql = "SELECT user_id, follower_id FROM hld_user_followers ORDER BY user_id, follower_id";
    query_rows(fx, sql)
        .await
        .iter()
        .map(|r| {
            (
                r.try_get("", "user_id").unwrap(),
                r.try_get("", "follower_id").unwrap(),
            )
        })
        .collect()
}

pub async fn dense_nested_self_links_are_checked_at_their_node(backend: Backend) {
    let (fx, _turn) = seeded(backend).await;
    let txn = fx.begin().await;
    as_user_1(&fx.locker, &txn, async |lock| {
        user::Entity::insert(user::ActiveModel {
            id: Set(1),
            email: Set("alice@example.com".to_owned()),
        })
        .exec(lock)
        .await
        .expect("insert user 1");
        // User 2 follows user 1: the follow sits at user 1's node.
        user::NestedActiveModel::from(stored_user(lock, 1).await)
            .add_follower(stored_user(lock, 2).await)
            .save(lock)
            .await
            .expect("user 2 follows user 1");
        // User 1 follows user 2 (the reverse side): at user 2's node.
        let outcome = user::NestedActiveModel::from(stored_user(lock, 1).await)
            .add_following(stored_user(lock, 2).await)
            .save(lock)
            .await;
        let e = nested_error(outcome, ErrorKind::NotCovered, "a follow of user 2");
        assert!(e.to_string().contains("hld_user_followers"), "{e}");
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(follows(&fx).await, [(1, 2)]);

    // User 1 follows user 2, written raw (user 2's service).
    fx.exec("INSERT INTO hld_user_followers (user_id, follower_id) VALUES (2, 1)")
        .await;
    let txn = fx.begin().await;
    as_user_1(&fx.locker, &txn, async |lock| {
        // A deep delete of user 1 would delete the follow at user 2's node.
        let alice = user::Entity::find_by_id(1)
            .one(lock.txn())
            .await
            .expect("read user 1")
            .expect("user 1");
        let outcome = alice.cascade_delete(lock).await;
        nested_error(outcome, ErrorKind::NotCovered, "cascade_delete of user 1");
        // Replacing user 1's followers with none deletes user 1's own.
        let mut unfollowed = user::NestedActiveModel::from(stored_user(lock, 1).await);
        unfollowed.followers.replace_all([]);
        unfollowed
            .save(lock)
            .await
            .expect("Replace of user 1's followers");
    })
    .await
    .expect("locks");
    txn.commit().await.expect("commit");
    assert_eq!(follows(&fx).await, [(2, 1)]);
    let users = user::Entity::find()
        .all(&fx.db)
        .await
        .expect("read users")
        .len();
    assert_eq!(users, 2, "user 1 not deleted");
}
