//! The quick start of the README and of the crate's README: both show
//! `examples/quickstart.rs` as it is (from its first line of code), and it
//! runs, twice (the second run finds its tables provisioned), on SQLite and
//! on every server of the suite: `HIERLOCK_MARIADB_URL`, `HIERLOCK_MYSQL_URL`,
//! `HIERLOCK_POSTGRES_URL` (defaults: the local servers). An unreachable
//! server fails its test.

#[allow(dead_code)] // its `main`: the tests call `run` with their own URL
#[path = "../examples/quickstart.rs"]
mod quickstart;

/// The example without its `//!` header: what the READMEs show.
fn example_code() -> String {
    let example = include_str!("../examples/quickstart.rs");
    let code: Vec<&str> = example
        .lines()
        .skip_while(|line| line.starts_with("//!") || line.is_empty())
        .collect();
    code.join("\n") + "\n"
}

#[test]
fn the_readmes_show_the_example_as_it_is() {
    let block = format!("```rust,no_run\n{}```", example_code());
    for readme in ["README.md", "../README.md"] {
        let path = format!("{}/{readme}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(
            text.contains(&block),
            "{path} should show hierlock/examples/quickstart.rs from its first `use` line, \
             in a ```rust,no_run block, as it is:\n{block}"
        );
    }
}

async fn runs_twice(url: &str) {
    for attempt in ["first", "second"] {
        quickstart::run(url)
            .await
            .unwrap_or_else(|e| panic!("the quick start's {attempt} run on {url}: {e}"));
    }
}

fn server_url(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_owned())
}

#[tokio::test]
async fn quickstart_runs_on_sqlite() {
    let file = std::env::temp_dir().join(format!("hierlock-quickstart-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&file);
    runs_twice(&format!("sqlite://{}?mode=rwc", file.display())).await;
    let _ = std::fs::remove_file(&file);
}

#[tokio::test]
async fn quickstart_runs_on_mariadb() {
    runs_twice(&server_url(
        "HIERLOCK_MARIADB_URL",
        "mysql://root@127.0.0.1:3306/test",
    ))
    .await;
}

#[tokio::test]
async fn quickstart_runs_on_mysql() {
    runs_twice(&server_url(
        "HIERLOCK_MYSQL_URL",
        "mysql://root@127.0.0.1:3307/test",
    ))
    .await;
}

#[tokio::test]
async fn quickstart_runs_on_postgres() {
    runs_twice(&server_url(
        "HIERLOCK_POSTGRES_URL",
        "postgres://postgres@127.0.0.1:5432/test",
    ))
    .await;
}
