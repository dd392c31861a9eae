//! `Locker::connect` on a Galera node: refused by default, accepted when the
//! configuration says every lock-taking transaction runs on one node.

use hierlock::{ErrorKind, Topology};

use crate::cluster::{self, Node};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_config_refuses_every_galera_node() {
    let _cluster = cluster::exclusive().await;
    let config = cluster::config("refused");
    cluster::provision(&config).await;
    for number in 1..=3 {
        let node = Node::connect(number).await;
        let err = node
            .locker(&config)
            .await
            .expect_err("a Galera node is refused without with_galera_single_writer()");
        assert_eq!(err.kind(), ErrorKind::UnsafeTopology, "{err}");
        assert!(!err.is_retryable(), "{err}");
        let message = err.to_string();
        assert!(message.contains("Galera"), "{message}");
        assert!(
            message.contains("3 node(s) in the cluster"),
            "the message names the cluster size: {message}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn galera_single_writer_is_accepted_and_reports_the_cluster() {
    let _cluster = cluster::exclusive().await;
    let config = cluster::config("accepted").with_galera_single_writer();
    cluster::provision(&config).await;
    for number in 1..=3 {
        let node = Node::connect(number).await;
        let locker = node
            .locker(&config)
            .await
            .unwrap_or_else(|e| panic!("node {number} with with_galera_single_writer(): {e}"));
        assert_eq!(locker.topology(), Topology::GaleraSingleWriter { nodes: 3 });
    }
}
