#!/usr/bin/env bash
# Check docs/clippy.recommended.toml: clippy must flag every path it lists.
#
#   tests/clippy-check.sh
#
# tests/clippy-fixture (whose clippy.toml is a link to the shipped file)
# calls each listed path once behind its `disallowed` feature; this script
# runs clippy on it with that feature and fails, naming the paths, unless a
# `disallowed_methods` warning fires for each one. It also fails if a listed
# path no longer resolves (renamed in a SeaORM release), or if the expansion
# of `#[protected]` itself is flagged (every user of the file would see it),
# or if the guarantee table of docs/hierlocked.md and the file disagree. It
# also checks the table's refusals: each "compile error" row names the ui
# cases (hierlock/tests/ui/fail) that print the message it quotes.
set -euo pipefail
cd "$(dirname "$0")/.."

config=docs/clippy.recommended.toml
mapfile -t paths < <(sed -n 's/^ *{ *path *= *"\([^"]*\)".*/\1/p' "$config")
if [ "${#paths[@]}" -eq 0 ]; then
    echo "tests/clippy-check.sh: no paths found in $config" >&2
    exit 1
fi

# The guarantee table of docs/hierlocked.md and the configuration say the
# same: each path a "not covered .. flagged" row names is in the
# configuration, and each path of the configuration is named in such a row
# (in full, or as `Type::method`).
guide=docs/hierlocked.md
rows=$(grep '^| .*\*\*not covered\*\*.*flagged' "$guide")
mapfile -t named < <(grep -o '`sea_\(orm\|query\)::[A-Za-z_:]*`' <<<"$rows" | tr -d '`' | sort -u)
disagree=()
for path in "${named[@]}"; do
    printf '%s\n' "${paths[@]}" | grep -qxF "$path" ||
        disagree+=("$path: flagged by the table, not in $config")
done
for path in "${paths[@]}"; do
    short=$(awk -F'::' '{ print $(NF-1) "::" $NF }' <<<"$path")
    grep -qF "\`$path\`" <<<"$rows" || grep -qF "\`$short\`" <<<"$rows" ||
        disagree+=("$path: in $config, named by no flagged row of the table")
done
if [ "${#disagree[@]}" -gt 0 ]; then
    printf '  %s\n' "${disagree[@]}" >&2
    echo "tests/clippy-check.sh: the guarantee table of $guide and $config disagree" >&2
    exit 1
fi

# Each "compile error" row of the guarantee table names the ui cases that
# prove it (`<!-- ui: case, .. -->`): each case must exist and print one of
# the messages the row quotes ("..", or "..: <rest>" for a shared start).
# The rows leave out the hidden module's prefix (`__hierlock_account::`),
# which is ignored here.
refused=()
while IFS= read -r row; do
    cases=$(sed -n 's/.*<!-- ui: \(.*\) -->.*/\1/p' <<<"$row")
    what=$(cut -c1-80 <<<"$row")
    if [ -z "$cases" ]; then
        refused+=("$what..: names no ui case")
        continue
    fi
    mapfile -t quotes < <(sed 's/.*\*\*compile error\*\*//' <<<"$row" | grep -o '"[^"]*"' | tr -d '"' | sed 's/^\.\.: //')
    for case in ${cases//,/ }; do
        stderr=hierlock/tests/ui/fail/$case.stderr
        if [ ! -f "$stderr" ]; then
            refused+=("$what..: no $stderr")
            continue
        fi
        text=$(sed 's/__hierlock_[a-z_]*:://g' "$stderr")
        found=false
        for quote in "${quotes[@]}"; do
            grep -qF -- "$quote" <<<"$text" && found=true && break
        done
        $found || refused+=("$what..: $case prints none of its quoted messages")
    done
done < <(grep '^| .*| \*\*compile error\*\*' "$guide")
if [ "${#refused[@]}" -gt 0 ]; then
    printf '  %s\n' "${refused[@]}" >&2
    echo "tests/clippy-check.sh: a refused row of $guide is not proven by a ui case" >&2
    exit 1
fi

# Touch the fixture so that clippy re-checks it (cargo caches clean runs).
touch tests/clippy-fixture/src/lib.rs
output=$(cargo clippy -p hierlock-clippy-fixture --features disallowed \
    --message-format=short 2>&1) || {
    echo "$output" >&2
    echo "tests/clippy-check.sh: clippy failed on the fixture" >&2
    exit 1
}

if grep -q "does not refer to" <<<"$output"; then
    grep "does not refer to" <<<"$output" >&2
    echo "tests/clippy-check.sh: $config names a path clippy cannot resolve" >&2
    exit 1
fi

# The expansion of #[protected] (in src/lib.rs) must not be flagged: users of
# the configuration would get a warning for every protected entity.
if grep -q "src/lib.rs:.*disallowed method" <<<"$output"; then
    grep "src/lib.rs:.*disallowed method" <<<"$output" >&2
    echo "tests/clippy-check.sh: the expansion of #[protected] calls a flagged path" >&2
    exit 1
fi

missing=()
for path in "${paths[@]}"; do
    grep -qF "use of a disallowed method \`$path\`" <<<"$output" || missing+=("$path")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "$output" >&2
    echo "tests/clippy-check.sh: not flagged in tests/clippy-fixture:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
fi

echo "tests/clippy-check.sh: all ${#paths[@]} paths of $config are flagged and named by the guarantee table of $guide; its refusals are proven by ui cases"
