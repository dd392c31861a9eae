//! `Locker::connect` on Group Replication members: multi-primary refused on
//! every member unless opted in (and why: no exclusion across members);
//! single-primary: the primary accepted, the secondaries refused; servers
//! without the plugin unchanged.

use hierlock::{ErrorKind, GroupMode, MemberRole, Target, Topology, Wait};
use hierlock_tests::{Backend, Fixture, bounded};

use crate::group::{self, Member};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_primary_accepts_the_primary_and_refuses_the_secondaries() {
    let _group = group::exclusive().await;
    let config = group::config("single");
    group::provision(&config, &[2, 3]).await;
    let primary = Member::connect(1).await;
    let locker = primary.locker(&config).await.expect("the primary");
    assert_eq!(
        locker.topology(),
        Topology::GroupReplication {
            mode: GroupMode::SinglePrimary,
            members: Some(3),
            role: Some(MemberRole::Primary),
        }
    );
    for number in [2, 3] {
        let secondary = Member::connect(number).await;
        let err = secondary
            .locker(&config)
            .await
            .expect_err("a secondary is refused");
        assert_eq!(err.kind(), ErrorKind::UnsafeTopology, "{err}");
        assert!(!err.is_retryable(), "{err}");
        assert!(
            err.to_string().contains("SECONDARY of a single-primary"),
            "member {number}: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_primary_is_refused_on_every_member_by_default() {
    let _group = group::exclusive().await;
    let config = group::config("multi");
    group::provision(&config, &[2, 3]).await;
    let restore = group::multi_primary();
    for number in 1..=3 {
        let member = Member::connect(number).await;
        let err = member
            .locker(&config)
            .await
            .expect_err("a multi-primary member is refused by default");
        assert_eq!(err.kind(), ErrorKind::UnsafeTopology, "{err}");
        assert!(!err.is_retryable(), "{err}");
        let message = err.to_string();
        assert!(
            message.contains(
                "multi-primary Group Replication group (3 ONLINE member(s), 3 of them PRIMARY)"
            ),
            "member {number}: {message}"
        );
        assert!(
            message.contains("with_group_replication_single_writer"),
            "the message says what to do: {message}"
        );
        let opted_in = config.clone().with_group_replication_single_writer();
        let locker = member.locker(&opted_in).await.unwrap_or_else(|e| {
            panic!("member {number} with with_group_replication_single_writer(): {e}")
        });
        assert_eq!(
            locker.topology(),
            Topology::GroupReplication {
                mode: GroupMode::MultiPrimary,
                members: Some(3),
                role: Some(MemberRole::Primary),
            }
        );
    }
    restore.now();
}

/// Documentation by test: this is why `Locker::connect` refuses a
/// multi-primary member unless told that every lock-taking transaction runs
/// on one member. Row locks are InnoDB's, per member, and Group Replication
/// does not replicate them: the same bucket row is locked `FOR UPDATE` on two
/// members at once, and neither transaction waits. (hierlock's locks only
/// read, so both commit; had both written the same row, one would fail
/// certification at COMMIT.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_members_of_a_multi_primary_group_grant_the_same_lock() {
    let _group = group::exclusive().await;
    let config = group::config("twomembers").with_group_replication_single_writer();
    group::provision(&config, &[2]).await;
    let restore = group::multi_primary();
    let (member1, member2) = (Member::connect(1).await, Member::connect(2).await);
    let locker1 = member1.locker(&config).await.expect("opted in");
    let locker2 = member2.locker(&config).await.expect("opted in");
    let r = Target::resource("u1", "a1", "r1").write();

    let on_member1 = member1.begin().await;
    bounded(
        "member 1's acquisition",
        locker1.acquire(&on_member1, [r.clone()]),
    )
    .await
    .expect("uncontended");
    let on_member2 = member2.begin().await;
    bounded(
        "member 2's acquisition",
        locker2.acquire_with(&on_member2, [r.clone()], Wait::NoWait),
    )
    .await
    .expect("granted on member 2 while member 1 holds the same write lock: no exclusion");
    on_member2.commit().await.expect("member 2 commits");
    on_member1.commit().await.expect("member 1 commits");
    restore.now();
}

/// The user that the locker connects as may not read
/// `performance_schema.replication_group_members`: the group is judged from
/// its variables (readable by every user), and never made an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_without_the_members_table_is_judged_by_the_mode() {
    let _group = group::exclusive().await;
    let config = group::config("unprivileged");
    group::provision(&config, &[2, 3]).await;
    let primary = Member::connect(1).await;
    primary
        .execute("CREATE USER IF NOT EXISTS 'hl_app'@'%' IDENTIFIED BY 'hl-app'")
        .await;
    primary
        .execute("GRANT SELECT, INSERT, UPDATE, DELETE ON test.* TO 'hl_app'@'%'")
        .await;
    let url = group::urls()[0].replacen("root@", "hl_app:hl-app@", 1);
    let app = Member::connect_to(1, &url).await;
    let locker = app.locker(&config).await.expect("the primary");
    assert_eq!(
        locker.topology(),
        Topology::GroupReplication {
            mode: GroupMode::SinglePrimary,
            members: None,
            role: None,
        }
    );
    let restore = group::multi_primary();
    let err = app
        .locker(&config)
        .await
        .expect_err("multi-primary, by the mode alone");
    assert_eq!(err.kind(), ErrorKind::UnsafeTopology, "{err}");
    assert!(err.to_string().contains("not readable"), "{err}");
    restore.now();
}

/// The detection is harmless where there is no group: MySQL without the
/// plugin configured and MariaDB are a single server, as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_without_group_replication_are_single() {
    for backend in [Backend::MySql, Backend::MariaDb] {
        let fixture = Fixture::new(backend, "gr_single", 64).await;
        assert_eq!(fixture.locker.topology(), Topology::Single, "{backend:?}");
    }
}

/// What `hierlock verify` and `hierlock status` print: the group, its mode,
/// its members and this member's role, on the primary; a secondary is
/// refused by both, as by `Locker::connect`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_and_status_report_the_group() {
    let _group = group::exclusive().await;
    let config = group::config("report");
    group::provision(&config, &[2, 3]).await;
    let primary = Member::connect(1).await;
    let expected = "topology: a MySQL Group Replication group (single-primary, 3 ONLINE member(s)), \
                    this member PRIMARY";
    let verification = hierlock_migration::verify(&primary.db, &config)
        .await
        .expect("verify on the primary");
    assert!(
        verification.to_string().contains(expected),
        "{verification}"
    );
    let status = hierlock_migration::status(&primary.db, &config)
        .await
        .expect("status on the primary");
    assert!(status.to_string().contains(expected), "{status}");
    let secondary = Member::connect(2).await;
    for outcome in [
        hierlock_migration::verify(&secondary.db, &config)
            .await
            .map(|v| v.to_string()),
        hierlock_migration::status(&secondary.db, &config)
            .await
            .map(|s| s.to_string()),
    ] {
        let err = outcome.expect_err("a secondary is refused");
        assert_eq!(err.kind(), ErrorKind::UnsafeTopology, "{err}");
    }
}
