#!/usr/bin/env bash
# A 3-member MySQL Group Replication group (InnoDB Cluster's replication) on
# loopback, for hierlock's Group Replication tests (tests/tests/group_replication).
# The members are mysqld from the MySQL chroot of tests/mysql-sid.sh
# (/opt/mysql-sid, Debian sid's mysql-server-core, which ships
# group_replication.so), run through chroot as that script does. Run as root.
#
#   tests/clusters/group-replication.sh start          # idempotent: 3 ONLINE members, single-primary, member 1 primary
#   tests/clusters/group-replication.sh stop           # kills the members by pid (data is kept for the next start)
#   tests/clusters/group-replication.sh status         # each member's state and role; exit 1 unless 3 are ONLINE
#   tests/clusters/group-replication.sh mode multi     # switch the running group to multi-primary
#   tests/clusters/group-replication.sh mode single    # back to single-primary, member 1 primary
#   tests/clusters/group-replication.sh kill N         # SIGKILL member N (1-3), as a crash would
#   tests/clusters/group-replication.sh primary        # the number of the member that is PRIMARY now
#
# Member N (1..3): SQL on 127.0.0.1:3330/3331/3332 (root, empty password,
# database `test`), group communication (XCom) on 127.0.0.1:33061/33062/33063;
# its config, socket, pid file and logs under /opt/mysql-sid/var/tmp/hierlock-gr/memberN/
# (/var/tmp/hierlock-gr/memberN/ inside the chroot), its data in .../memberN/data.
# `start` bootstraps the group on member 1 when no member is ONLINE, and
# (re)joins the others; a member whose data cannot rejoin is rebuilt.
set -euo pipefail

CHROOT=${MYSQL_SID_ROOT:-/opt/mysql-sid}
INNER=/var/tmp/hierlock-gr # as mysqld sees it, inside the chroot
ROOT=$CHROOT$INNER
MEMBERS=(1 2 3)
TIMEOUT=${HIERLOCK_GROUP_TIMEOUT:-120} # seconds, for the whole start
GROUP_NAME=6f1b0d3e-5a0c-4c61-9d43-1e2f7a9b8c20
RECOVERY_USER=hierlock_recovery
RECOVERY_PASSWORD=hierlock-recovery

sql_port() { echo $((3329 + $1)); }
group_port() { echo $((33060 + $1)); }
inner_dir() { echo "$INNER/member$1"; }
dir() { echo "$ROOT/member$1"; }

die() {
    echo "group-replication.sh: $*" >&2
    exit 1
}

write_config() { # N
    local n=$1 d seeds
    d=$(inner_dir "$n")
    seeds="127.0.0.1:$(group_port 1),127.0.0.1:$(group_port 2),127.0.0.1:$(group_port 3)"
    mkdir -p "$(dir "$n")"
    cat >"$(dir "$n")/my.cnf" <<EOF
[mysqld]
user = mysql
bind-address = 127.0.0.1
port = $(sql_port "$n")
mysqlx = OFF
socket = $d/mysqld.sock
pid-file = $d/mysqld.pid
log-error = $d/error.log
datadir = $d/data
secure-file-priv = ""
skip-name-resolve
report_host = 127.0.0.1
report_port = $(sql_port "$n")
max_connections = 200
# Small: a test group, three of them on a shared machine.
innodb_buffer_pool_size = 64M
innodb_redo_log_capacity = 64M
performance_schema_max_table_instances = 400
# What Group Replication needs.
server_id = $n
gtid_mode = ON
enforce_gtid_consistency = ON
log_bin = binlog
disabled_storage_engines = "MyISAM,BLACKHOLE,FEDERATED,ARCHIVE,MEMORY"
plugin_load_add = group_replication.so
group_replication_group_name = $GROUP_NAME
group_replication_start_on_boot = OFF
group_replication_local_address = 127.0.0.1:$(group_port "$n")
group_replication_group_seeds = $seeds
group_replication_ip_allowlist = 127.0.0.1
group_replication_single_primary_mode = ON
group_replication_enforce_update_everywhere_checks = OFF
# caching_sha2_password over the recovery channel without TLS.
group_replication_recovery_get_public_key = ON
EOF
}

running() { # PID: alive, not a zombie
    local state
    state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) && [ -n "$state" ] && [ "$state" != Z ]
}

pid_of() { # N: the running mysqld's pid, or nothing
    local f pid
    f="$(dir "$1")/mysqld.pid"
    [ -s "$f" ] || return 1
    pid=$(cat "$f")
    running "$pid" && grep -q mysqld "/proc/$pid/comm" 2>/dev/null && echo "$pid"
}

client() { # N SQL...: over the member's socket, as root
    local n=$1
    shift
    chroot "$CHROOT" mysql -uroot -S "$(inner_dir "$n")/mysqld.sock" -N -B --connect-timeout=2 \
        -e "$*" 2>/dev/null
}

member_state() { # N: this member's own MEMBER_STATE (ONLINE, RECOVERING, ERROR, OFFLINE)
    client "$1" "SELECT MEMBER_STATE FROM performance_schema.replication_group_members \
                 WHERE MEMBER_ID = @@server_uuid"
}

member_role() { # N
    client "$1" "SELECT MEMBER_ROLE FROM performance_schema.replication_group_members \
                 WHERE MEMBER_ID = @@server_uuid"
}

online_count() { # N: ONLINE members as member N sees them
    client "$1" "SELECT COUNT(*) FROM performance_schema.replication_group_members \
                 WHERE MEMBER_STATE = 'ONLINE'"
}

online() { [ "$(member_state "$1")" = ONLINE ]; }

all_online() {
    local n
    for n in "${MEMBERS[@]}"; do
        online "$n" && [ "$(online_count "$n")" = 3 ] || return 1
    done
}

declare -A LAUNCHED=() # member -> pid of a mysqld this run started

launched_alive() {
    local n
    for n in "${!LAUNCHED[@]}"; do
        running "${LAUNCHED[$n]}" || {
            echo "group-replication.sh: member $n exited" >&2
            return 1
        }
    done
}

show_logs() {
    local n
    for n in "${MEMBERS[@]}"; do
        echo "===== member $n ($(dir "$n")/error.log) =====" >&2
        tail -n 40 "$(dir "$n")/error.log" >&2 2>/dev/null || true
    done
}

wait_until() { # deadline what command...: 1 (after printing the logs) if it never holds
    local deadline=$1 what=$2
    shift 2
    until "$@"; do
        if ! launched_alive || [ "$(date +%s)" -ge "$deadline" ]; then
            echo "group-replication.sh: gave up waiting for $what" >&2
            show_logs
            return 1
        fi
        sleep 0.5
    done
}

# A template data dir, initialized once: root@127.0.0.1 and root@'%' with an
# empty password (as the tests connect), and the recovery user. Each member
# starts from a copy (without auto.cnf, so that each gets its own server_uuid).
template() {
    local t=$ROOT/template
    [ -d "$t/data/mysql" ] && return 0
    rm -rf "$t"
    mkdir -p "$t"
    cat >"$t/init.sql" <<EOF
CREATE USER 'root'@'127.0.0.1' IDENTIFIED BY '';
GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
CREATE USER 'root'@'%' IDENTIFIED BY '';
GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;
CREATE USER '$RECOVERY_USER'@'%' IDENTIFIED BY '$RECOVERY_PASSWORD';
GRANT REPLICATION SLAVE, CONNECTION_ADMIN, BACKUP_ADMIN, GROUP_REPLICATION_STREAM ON *.* TO '$RECOVERY_USER'@'%';
EOF
    own "$INNER"
    chroot "$CHROOT" /usr/sbin/mysqld --no-defaults --initialize-insecure --user=mysql \
        --datadir="$INNER/template/data" --disable-log-bin --innodb-redo-log-capacity=64M \
        --init-file="$INNER/template/init.sql" --log-error="$INNER/template/init.log" ||
        {
            cat "$t/init.log" >&2
            rm -rf "$t"
            die "initializing the template data dir failed"
        }
}

launch() { # N: start member N's mysqld (its data dir from the template if it has none)
    local n=$1 d
    d=$(dir "$n")
    write_config "$n"
    if [ ! -d "$d/data/mysql" ]; then
        template
        rm -rf "$d/data"
        cp -a "$ROOT/template/data" "$d/data"
        rm -f "$d/data/auto.cnf"
    fi
    own "$(inner_dir "$n")"
    rm -f "$d/mysqld.pid"
    setsid chroot "$CHROOT" /usr/sbin/mysqld --defaults-file="$(inner_dir "$n")/my.cnf" \
        </dev/null >>"$d/mysqld.out" 2>&1 9>&- &
    LAUNCHED[$n]=$!
}

own() { # PATH (inside the chroot): the chroot's mysql user owns it (its uid is not the host's)
    chroot "$CHROOT" chown -R mysql:mysql "$1"
}

answers() { client "$1" "SELECT 1" >/dev/null; }

kill_member() { # N: SIGKILL, then wait for the process to go
    local pid
    pid=$(pid_of "$1") || return 0
    kill -9 "$pid" 2>/dev/null || true
    while running "$pid"; do sleep 0.1; done
    rm -f "$(dir "$1")/mysqld.pid"
}

start_gr() { # N [bootstrap]
    local n=$1
    if [ "${2:-}" = bootstrap ]; then
        client "$n" "SET GLOBAL group_replication_bootstrap_group = ON;
            START GROUP_REPLICATION USER = '$RECOVERY_USER', PASSWORD = '$RECOVERY_PASSWORD';
            SET GLOBAL group_replication_bootstrap_group = OFF" ||
            { client "$n" "SET GLOBAL group_replication_bootstrap_group = OFF" || true; return 1; }
    else
        client "$n" "START GROUP_REPLICATION USER = '$RECOVERY_USER', PASSWORD = '$RECOVERY_PASSWORD'"
    fi
}

# Make member N an ONLINE member of the group: start its mysqld if needed,
# then START GROUP_REPLICATION (bootstrapping when nobody else is ONLINE).
join() { # deadline N
    local deadline=$1 n=$2 state
    if ! pid_of "$n" >/dev/null; then
        launch "$n"
        wait_until "$deadline" "member $n's mysqld to answer" answers "$n" || return 1
    fi
    state=$(member_state "$n" || true)
    case $state in
    ONLINE) return 0 ;;
    RECOVERING) ;;
    *)
        # OFFLINE, ERROR or no row: (re)start Group Replication.
        [ "$state" = ERROR ] && client "$n" "STOP GROUP_REPLICATION" >/dev/null
        if [ -z "$(online_member)" ]; then
            start_gr "$n" bootstrap || return 1
        else
            start_gr "$n" || true # it fails when recovery fails; the wait below says so
        fi
        ;;
    esac
    wait_until "$deadline" "member $n to end its recovery" settled "$n" || return 1
    online "$n" || {
        echo "group-replication.sh: member $n is $(member_state "$n" || true) after joining" >&2
        return 1
    }
}

settled() { # N: past recovery (ONLINE, or failed: ERROR, OFFLINE)
    case $(member_state "$1" || true) in ONLINE | ERROR | OFFLINE) return 0 ;; *) return 1 ;; esac
}

online_member() { # a member that is ONLINE, if any
    local n
    for n in "${MEMBERS[@]}"; do
        online "$n" 2>/dev/null && echo "$n" && return 0
    done
    return 0
}

uuid_of() { client "$1" "SELECT @@server_uuid"; }

primary() { # the number of the PRIMARY member (the first, in multi-primary mode)
    local n uuid
    n=$(online_member)
    [ -n "$n" ] || return 1
    uuid=$(client "$n" "SELECT MEMBER_ID FROM performance_schema.replication_group_members \
                        WHERE MEMBER_ROLE = 'PRIMARY' AND MEMBER_STATE = 'ONLINE' ORDER BY MEMBER_PORT LIMIT 1") || return 1
    for n in "${MEMBERS[@]}"; do
        [ "$(uuid_of "$n" 2>/dev/null)" = "$uuid" ] && echo "$n" && return 0
    done
    return 1
}

single_primary() { # the group is in single-primary mode (as member N sees it)
    [ "$(client "$1" "SELECT @@GLOBAL.group_replication_single_primary_mode")" = 1 ]
}

# Single-primary mode with member 1 the primary: what every test starts from.
shape() {
    local uuid1
    uuid1=$(uuid_of 1)
    if ! single_primary 1; then
        client 1 "SELECT group_replication_switch_to_single_primary_mode('$uuid1')" >/dev/null ||
            die "cannot switch the group to single-primary mode"
    elif [ "$(primary)" != 1 ]; then
        client 1 "SELECT group_replication_set_as_primary('$uuid1')" >/dev/null ||
            die "cannot make member 1 the primary"
    fi
}

start() {
    [ "$(id -u)" = 0 ] || die "starting the group needs root"
    [ -f "$CHROOT/usr/lib/mysql/plugin/group_replication.so" ] ||
        die "no $CHROOT/usr/lib/mysql/plugin/group_replication.so: run 'bash tests/mysql-sid.sh install' first"
    local deadline n
    deadline=$(($(date +%s) + TIMEOUT))
    mkdir -p "$ROOT"
    if ! all_online; then
        # The member to start from: one that is ONLINE, else member 1.
        local first
        first=$(online_member)
        first=${first:-1}
        join "$deadline" "$first" || die "the group did not start within ${TIMEOUT} s"
        for n in "${MEMBERS[@]}"; do
            [ "$n" = "$first" ] && continue
            if ! join "$deadline" "$n"; then
                # Its data cannot rejoin (errant transactions after a crash):
                # a fresh copy recovers everything from the group.
                echo "group-replication.sh: rebuilding member $n from an empty data dir" >&2
                kill_member "$n"
                rm -rf "$(dir "$n")/data"
                join "$deadline" "$n" || die "member $n did not join within ${TIMEOUT} s"
            fi
        done
        wait_until "$deadline" "3 ONLINE members" all_online || die "the group did not form"
    fi
    shape
    client "$(primary)" "CREATE DATABASE IF NOT EXISTS test" || die "cannot create database test"
    echo "group-replication.sh: 3 members ONLINE, single-primary, member 1 primary, on" \
        "127.0.0.1:$(sql_port 1),$(sql_port 2),$(sql_port 3)"
}

stop() {
    local n
    for n in "${MEMBERS[@]}"; do kill_member "$n"; done
    echo "group-replication.sh: stopped"
}

status() {
    local n ok=0
    for n in "${MEMBERS[@]}"; do
        if pid_of "$n" >/dev/null; then
            echo "member $n (127.0.0.1:$(sql_port "$n")): pid $(pid_of "$n"), $(member_state "$n")," \
                "$(member_role "$n"), single_primary_mode=$(client "$n" "SELECT @@GLOBAL.group_replication_single_primary_mode")," \
                "$(online_count "$n") ONLINE"
        else
            echo "member $n (127.0.0.1:$(sql_port "$n")): not running"
        fi
    done
    all_online || ok=1
    return $ok
}

mode() { # multi | single
    local n
    n=$(online_member)
    [ -n "$n" ] || die "no member is ONLINE: run start first"
    case ${1:-} in
    multi)
        single_primary "$n" || return 0
        client "$n" "SELECT group_replication_switch_to_multi_primary_mode()" >/dev/null ||
            die "cannot switch to multi-primary mode"
        ;;
    single) shape ;;
    *) die "mode takes multi or single" ;;
    esac
    echo "group-replication.sh: $1-primary mode"
}

# One start, stop or mode change at a time (a test restoring the group while
# a second `tests/run` starts it).
serialize() {
    mkdir -p "$ROOT"
    exec 9>"$ROOT.lock"
    flock -w "$TIMEOUT" 9 || die "$ROOT.lock stayed locked for ${TIMEOUT} s"
}

case ${1:-} in
start | stop | mode | kill) serialize ;;
esac
case ${1:-} in
start) start ;;
stop) stop ;;
status) status ;;
mode) mode "${2:-}" ;;
kill)
    case ${2:-} in 1 | 2 | 3) ;; *) die "kill takes 1, 2 or 3" ;; esac
    kill_member "$2"
    ;;
primary) primary ;;
*) die "usage: $0 start|stop|status|mode multi|single|kill N|primary" ;;
esac
