#!/usr/bin/env bash
# pgbouncer in transaction mode for hierlock's topology tests
# (tests/tests/topologies/pgbouncer.rs), in front of the shared PostgreSQL.
#
#   tests/clusters/pgbouncer.sh start   # idempotent; installs pgbouncer if missing (apt)
#   tests/clusters/pgbouncer.sh stop
#   tests/clusters/pgbouncer.sh status
#
#   postgres://postgres@127.0.0.1:6432/test  ->  postgres://postgres@127.0.0.1:5432/test
#
#   postgres://postgres@127.0.0.1:6432/test_session  (the same, in session mode)
#
# pool_mode = transaction, server_reset_query = DEALLOCATE ALL run after every
# transaction, auth_type = trust (loopback tests only), no
# ignore_startup_parameters: the client must not send what pgbouncer does not
# know (see docs/topologies.md, "Connection poolers"). Config, pid and log under
# /var/tmp/hierlock-pgbouncer (HIERLOCK_PGBOUNCER_DIR); runs as the `postgres`
# OS user (pgbouncer refuses root). Upstream: HIERLOCK_PGBOUNCER_UPSTREAM_PORT
# (default 5432, the shared server, which is only read from, never configured).
set -u
DIR=${HIERLOCK_PGBOUNCER_DIR:-/var/tmp/hierlock-pgbouncer}
PORT=6432
UPSTREAM_PORT=${HIERLOCK_PGBOUNCER_UPSTREAM_PORT:-5432}
PIDFILE=$DIR/pgbouncer.pid
RUN_AS=postgres

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pid() { local p; p=$(cat "$PIDFILE" 2>/dev/null) && kill -0 "$p" 2>/dev/null && echo "$p"; }
say() { echo "pgbouncer: $*"; }
fail() {
    say "FAILED: $*" >&2
    [ -f "$DIR/pgbouncer.log" ] && { echo "--- $DIR/pgbouncer.log (last 20 lines)" >&2; tail -n 20 "$DIR/pgbouncer.log" >&2; }
    exit 1
}

install() {
    command -v pgbouncer >/dev/null && return 0
    say "installing pgbouncer (apt)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq || fail "apt-get update"
    # The package's own service stays stopped (no init system here; policy-rc.d).
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null || fail "apt-get install pgbouncer"
}

configure() {
    mkdir -p "$DIR"
    cat >"$DIR/pgbouncer.ini" <<EOF
; hierlock topology tests: written by tests/clusters/pgbouncer.sh
[databases]
; transaction pooling: what the application's transactions use
test = host=127.0.0.1 port=$UPSTREAM_PORT dbname=test
; session pooling, same server and database: for Locker::connect (see docs/topologies.md)
test_session = host=127.0.0.1 port=$UPSTREAM_PORT dbname=test pool_mode=session

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
auth_type = trust
auth_file = $DIR/userlist.txt
pool_mode = transaction
max_client_conn = 500
; Few server connections, closed soon when idle: the upstream is the shared
; server (max_connections 100), which the conformance suite also needs.
default_pool_size = 20
reserve_pool_size = 0
server_idle_timeout = 15
; Every server connection goes back to the pool without prepared statements,
; so that sqlx's never-closed sqlx_s_N statements cannot collide in the next
; transaction (docs/topologies.md).
server_reset_query = DEALLOCATE ALL
server_reset_query_always = 1
logfile = $DIR/pgbouncer.log
pidfile = $PIDFILE
admin_users = postgres
EOF
    echo '"postgres" ""' >"$DIR/userlist.txt"
    chown -R "$RUN_AS:$RUN_AS" "$DIR"
}

start() {
    install
    configure # a running pgbouncer rereads it on SIGHUP
    if [ -n "$(pid)" ]; then
        kill -HUP "$(pid)"
        say "running (pid $(pid)) on 127.0.0.1:$PORT, configuration reloaded"
        return 0
    fi
    port_open "$PORT" && fail "127.0.0.1:$PORT is taken by another process"
    runuser -u "$RUN_AS" -- pgbouncer -d -q "$DIR/pgbouncer.ini" || fail "pgbouncer did not start"
    for _ in $(seq 1 240); do
        if port_open "$PORT" && runuser -u "$RUN_AS" -- psql -h 127.0.0.1 -p "$PORT" -U postgres -d test \
            -tAc "SELECT 1" >/dev/null 2>&1; then
            say "started (pid $(pid)) on 127.0.0.1:$PORT, transaction mode, upstream 127.0.0.1:$UPSTREAM_PORT"
            return 0
        fi
        sleep 0.25
    done
    fail "pgbouncer does not answer on 127.0.0.1:$PORT (waited 60 s)"
}

stop() {
    local p; p=$(pid) || { say "not running"; return 0; }
    kill -INT "$p" # safe shutdown: waits for transactions… bounded below
    for _ in $(seq 1 40); do kill -0 "$p" 2>/dev/null || { say "stopped"; return 0; }; sleep 0.25; done
    kill -TERM "$p" # immediate shutdown
    for _ in $(seq 1 40); do kill -0 "$p" 2>/dev/null || { say "stopped"; return 0; }; sleep 0.25; done
    fail "pgbouncer (pid $p) did not stop"
}

[ "$(id -u)" = 0 ] || { say "needs root (apt, runuser)" >&2; exit 1; }
case "${1:-status}" in
    start) start ;;
    stop) stop ;;
    status) if [ -n "$(pid)" ]; then say "running (pid $(pid))"; else say "not running"; fi ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
