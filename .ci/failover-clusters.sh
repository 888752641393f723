#!/usr/bin/env bash
# Two throwaway PostgreSQL clusters for the failover test (contract 13.10): a primary and a
# streaming, synchronous standby made from it with pg_basebackup, on their own ports, never
# touching the main cluster. Trust authentication on 127.0.0.1 only.
#   .ci/failover-clusters.sh create PRIMARY_PORT STANDBY_PORT
#   .ci/failover-clusters.sh crash-primary    (immediate stop: what a dead machine looks like)
#   .ci/failover-clusters.sh promote          (the standby becomes the primary)
#   .ci/failover-clusters.sh drop
# The standby runs with hot_standby = off: until promoted it accepts no connection, so a proxy's
# health check (HAProxy pgsql-check) sends nobody to it while it cannot take writes.
set -euo pipefail
V=$(ls /etc/postgresql | sort -V | tail -n 1)
PRIMARY=rg_failover_primary
STANDBY=rg_failover_standby
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

trust_hba() {
  cat >"/etc/postgresql/$V/$1/pg_hba.conf" <<HBA
local all all trust
host all all 127.0.0.1/32 trust
host replication all 127.0.0.1/32 trust
HBA
}

case "$1" in
  create)
    pport=$2 sport=$3
    "$0" drop >/dev/null 2>&1 || true
    pg_createcluster -q "$V" "$PRIMARY" -p "$pport" >/dev/null
    trust_hba "$PRIMARY"
    cat >"/etc/postgresql/$V/$PRIMARY/conf.d/failover.conf" <<CONF
listen_addresses = '127.0.0.1'
wal_level = replica
max_wal_senders = 5
wal_keep_size = '256MB'
max_connections = 200
# Every commit waits until the standby has it: an answered redeem survives the primary's loss.
synchronous_standby_names = 'rg_standby'
synchronous_commit = on
fsync = on
CONF
    pg_ctlcluster "$V" "$PRIMARY" start
    pg_createcluster -q "$V" "$STANDBY" -p "$sport" >/dev/null
    trust_hba "$STANDBY"
    cat >"/etc/postgresql/$V/$STANDBY/conf.d/failover.conf" <<CONF
listen_addresses = '127.0.0.1'
wal_level = replica
max_wal_senders = 5
max_connections = 200
hot_standby = off
CONF
    sdata=/var/lib/postgresql/$V/$STANDBY
    find "$sdata" -mindepth 1 -delete
    as_postgres pg_basebackup -h 127.0.0.1 -p "$pport" -U postgres -D "$sdata" -X stream -R \
      -d "host=127.0.0.1 port=$pport user=postgres application_name=rg_standby"
    pg_ctlcluster "$V" "$STANDBY" start
    # Synchronous from the first commit on: wait until the primary sees the standby streaming.
    for _ in $(seq 1 60); do
      state=$(psql -h 127.0.0.1 -p "$pport" -U postgres -Atc \
        "select sync_state from pg_stat_replication where application_name = 'rg_standby'" postgres || true)
      [ "$state" = sync ] && exit 0
      sleep 0.5
    done
    echo "the standby did not become synchronous"; exit 1
    ;;
  crash-primary) pg_ctlcluster "$V" "$PRIMARY" stop -m immediate ;;
  promote) pg_ctlcluster "$V" "$STANDBY" promote ;;
  drop)
    for c in "$PRIMARY" "$STANDBY"; do
      if pg_lsclusters -h | awk '{print $2}' | grep -qx "$c"; then pg_dropcluster --stop "$V" "$c"; fi
    done
    ;;
esac
