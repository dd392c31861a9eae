#!/usr/bin/env bash
# What setting PostgreSQL's lock_timeout before each key costs an
# uncontended timed acquisition on the bucket table (BENCHMARKS.md): the
# bucket statement of a 3-row run, with the server bound set once for the
# statement (per-statement.sql: the join, sorted, locked above the sort) and
# set again before each row (per-key.sql: each row locked in a LATERAL
# subquery after its own setting), both with the fence, run alternately
# with pgbench (prepared statements, as sqlx sends them).
#
#   tests/bench/pg-bound/run.sh [pgbench's connection arguments; default: -h 127.0.0.1 -U postgres test]
#
# Needs the bucket table `bank_lock_buckets` (100,000 buckets a level) on
# PostgreSQL: the chaos run's PostgreSQL bucket-table phase provisions it
# (`cargo run -p hierlock-tests --bin chaos -- --server postgres-buckets
# --fault storm --rounds 1`); any provisioned table, renamed in the scripts,
# does too.
set -euo pipefail
cd "$(dirname "$0")"
conn=("$@")
[ ${#conn[@]} -eq 0 ] && conn=(-h 127.0.0.1 -U postgres test)
reps=${REPS:-5}
seconds=${SECONDS_EACH:-8}
for clients in 1 8; do
    for rep in $(seq 1 "$reps"); do
        for shape in per-statement per-key; do
            tps=$(pgbench -n -M prepared -T "$seconds" -c "$clients" -j "$clients" -f "$shape.sql" "${conn[@]}" |
                sed -n 's/^tps = \([0-9.]*\).*/\1/p')
            echo "$clients $shape $rep $tps"
        done
    done
done | python3 -c '
import statistics, sys
rows = [line.split() for line in sys.stdin]
print("| clients | per statement (tps) | per key (tps) | per key / per statement |")
print("|---|---|---|---|")
for clients in sorted({r[0] for r in rows}, key=int):
    old = [float(r[3]) for r in rows if r[0] == clients and r[1] == "per-statement"]
    new = [float(r[3]) for r in rows if r[0] == clients and r[1] == "per-key"]
    ratios = [n / o for o, n in zip(old, new)]
    m = statistics.median
    print(f"| {clients} | {m(old):,.0f} [{min(old):,.0f}–{max(old):,.0f}] | {m(new):,.0f} [{min(new):,.0f}–{max(new):,.0f}] | {m(ratios):.2f}× [{min(ratios):.2f}–{max(ratios):.2f}] |")
'
