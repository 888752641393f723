#!/usr/bin/env bash
# Starts Debian's PgBouncer in transaction mode in front of PostgreSQL, for the third test run
# (contract 13.10): `.ci/pgbouncer.sh start DIR PORT PGHOST PGPORT` / `.ci/pgbouncer.sh stop DIR`.
# Trust authentication on 127.0.0.1 only, like the CI PostgreSQL it fronts.
set -euo pipefail
cmd=$1 dir=$2
case "$cmd" in
  start)
    port=$3 pghost=$4 pgport=$5
    mkdir -p "$dir"
    cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=$pghost port=$pgport

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 20
; what node-postgres may send that PgBouncer does not track
ignore_startup_parameters = extra_float_digits
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
    echo '"postgres" ""' >"$dir/userlist.txt"
    # PgBouncer refuses to run as root: as root, it runs as postgres.
    user=()
    if [ "$(id -u)" = 0 ]; then chown -R postgres "$dir"; user=(-u postgres); fi
    pgbouncer -d "${user[@]}" "$dir/pgbouncer.ini"
    for _ in $(seq 1 50); do pg_isready -q -h 127.0.0.1 -p "$port" && exit 0; sleep 0.2; done
    echo "pgbouncer did not start:"; cat "$dir/pgbouncer.log"; exit 1
    ;;
  stop)
    if [ -f "$dir/pgbouncer.pid" ]; then kill "$(cat "$dir/pgbouncer.pid")" 2>/dev/null || true; fi
    ;;
esac
