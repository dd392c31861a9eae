#!/usr/bin/env bash
# The crates as a user of the registry gets them (issue 11):
#
#   tests/packaging.sh
#
# - tests/packaging, an application outside the workspace, depends on hierlock
#   and hierlock-migration with `default-features = false` and is built and
#   tested with each backend feature on its own, with warnings denied, on the
#   workspace's `rust-version` toolchain (the minimum tested): a provision,
#   `Locker::connect`, a lock and a protected write, and a nested insert of
#   dense-format entities under one proof, on SQLite, MariaDB
#   (HIERLOCK_MARIADB_URL) and PostgreSQL (HIERLOCK_POSTGRES_URL);
# - with SQLite's driver enabled by the application's SeaORM but not by
#   hierlock, `Locker::connect` must refuse SQLite;
# - with no backend feature, the build must fail with hierlock's one
#   compile_error! and nothing else;
# - `cargo doc -p hierlock` with no feature fails with that compile_error!,
#   which names the features and the command-line flags to add;
# - the crate docs (what docs.rs shows, all features, the guide included)
#   build with no warning;
# - `cargo publish --dry-run` of the three crates together, in dependency
#   order: each is packed (hierlock with its README and the guide's pages,
#   `hierlock/docs` being a link to `docs/`), its dependencies are resolved
#   from crates.io (the unpublished siblings from cargo's local registry of
#   the packages just made), and it is built from its .crate with all
#   features (hierlock without a backend is a compile error by design). Not
#   checked, as nothing is uploaded: that the names are free on crates.io,
#   crates.io's own checks at upload, and the packed crates' tests.
#
# CARGO_TARGET_DIR defaults to the workspace's target/: the lock file is the
# workspace's, so every dependency built with the same features is reused
# (the feature sets differ, so the artifacts sit side by side, not replace
# each other).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
: "${HIERLOCK_MARIADB_URL:=mysql://root@127.0.0.1:3306/test}"
: "${HIERLOCK_POSTGRES_URL:=postgres://postgres@127.0.0.1:5432/test}"
export HIERLOCK_MARIADB_URL HIERLOCK_POSTGRES_URL
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"

rust_version=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
toolchain=$rust_version
[[ $toolchain =~ ^[0-9]+\.[0-9]+$ ]] && toolchain=$toolchain.0
# Where no toolchain is installed under that name but the default one is that
# version, name it so (rustup refuses `toolchain link` for release names, so
# a symlink, as rustup's own directory layout has it; no download), else fail.
if ! cargo "+$toolchain" --version >/dev/null 2>&1; then
    if [[ "$(rustc --version)" == "rustc $toolchain "* ]]; then
        host=$(rustc -vV | sed -n 's/^host: //p')
        ln -sfn "$(rustc --print sysroot)" "${RUSTUP_HOME:-$HOME/.rustup}/toolchains/$toolchain-$host"
        cargo "+$toolchain" --version >/dev/null
    else
        echo "tests/packaging.sh: Rust $toolchain (the rust-version) is not installed: rustup toolchain install $toolchain" >&2
        exit 1
    fi
fi
manifest=tests/packaging/Cargo.toml
# The workspace's versions of every dependency.
cp Cargo.lock tests/packaging/Cargo.lock

step() { echo "== tests/packaging.sh: $*" >&2; }

for feature in sqlite mysql postgres sqlite-driver-not-hierlocks; do
    step "features = [\"$feature\"] on Rust $toolchain"
    RUSTFLAGS="-D warnings" cargo "+$toolchain" test --manifest-path "$manifest" \
        --no-default-features --features "$feature"
done

step "no backend feature: one compile_error!"
if output=$(RUSTFLAGS="-D warnings" cargo "+$toolchain" build --manifest-path "$manifest" \
    --message-format short 2>&1); then
    echo "tests/packaging.sh: hierlock built without any backend feature" >&2
    exit 1
fi
errors=$(grep -c '^[^ ]*: *error\|^error' <<<"$output" || true)
if ! grep -q 'hierlock needs a database: enable one or more of its features' <<<"$output" ||
    ! grep -q 'could not compile `hierlock` (lib) due to 1 previous error' <<<"$output"; then
    echo "$output" >&2
    echo "tests/packaging.sh: expected hierlock's compile_error! alone ($errors error lines)" >&2
    exit 1
fi

step "cargo doc -p hierlock with no feature: the compile_error! says what to add"
if output=$(cargo "+$toolchain" doc -p hierlock --no-deps 2>&1) ||
    ! grep -q 'hierlock needs a database.*cargo doc -p hierlock --all-features' <<<"$output" ||
    ! grep -q 'with cargo `--features postgres` (or `mysql`, `sqlite`, `--all-features`)' <<<"$output"; then
    echo "$output" >&2
    echo "tests/packaging.sh: cargo doc -p hierlock without a feature should fail naming the features" >&2
    exit 1
fi

step "crate docs, warnings denied"
# rustdoc's warnings fail with -D; cargo's own (e.g. two targets writing one
# doc page) are only printed, so they are looked for.
if ! output=$(RUSTDOCFLAGS="-D warnings" cargo "+$toolchain" doc --no-deps --all-features \
    -p hierlock -p hierlock-macros -p hierlock-migration 2>&1) ||
    grep -q '^warning' <<<"$output"; then
    echo "$output" >&2
    echo "tests/packaging.sh: cargo doc failed or warned" >&2
    exit 1
fi

step "cargo publish --dry-run: the three crates pack, resolve and build from their .crate files"
listed=$(cargo "+$toolchain" package --list --allow-dirty -p hierlock)
for file in README.md docs/README.md docs/hierlocked.md; do
    if ! grep -qx "$file" <<<"$listed"; then
        echo "tests/packaging.sh: hierlock's package lacks $file (its crate docs include it)" >&2
        exit 1
    fi
done
cargo "+$toolchain" publish --dry-run --allow-dirty --all-features \
    -p hierlock-macros -p hierlock -p hierlock-migration
step "ok"
