#!/usr/bin/env bash
# A fleet on loopback: three `egang serve` replicas (stories260K from
# models/, --parallel 4) behind HAProxy with tools/fleet/haproxy.cfg.
#   tools/fleet/fleet.sh start [DIR]   starts it and returns; prints its address
#   tools/fleet/fleet.sh status [DIR]  HAProxy and each replica: pid, /health,
#                                      HAProxy's view, requests in flight
#   tools/fleet/fleet.sh stop [DIR]    HAProxy first, then each replica with
#                                      SIGTERM, waiting for it to exit
# DIR holds the fleet's state and logs (default /tmp/egang-fleet); the
# settings (ports: HAProxy on EGANG_FLEET_PORT, default 8080, the replicas
# on the next three; the model, --parallel, more `serve` arguments) are
# tools/fleet/lib.sh's environment. HAProxy is Debian's package
# (tools/deps-fleet.sh installs it).
set -u
usage() {
	sed -n '2,13s/^# \{0,1\}//p' "$0"
}
cmd=${1:-}
case $cmd in
-h | --help) usage; exit 0 ;;
start | stop | status) ;;
*) echo "fleet.sh: '${cmd}' is not start, stop or status (--help)" >&2; exit 2 ;;
esac
dir=${2:-/tmp/egang-fleet}
cd "$(dirname "$0")/../.."
# shellcheck source=tools/fleet/lib.sh
. tools/fleet/lib.sh

case $cmd in
start)
	command -v haproxy >/dev/null || { echo "fleet.sh: no haproxy (tools/deps-fleet.sh installs it)" >&2; exit 1; }
	if [[ -s $dir/haproxy.pid ]] && kill -0 "$(cat "$dir/haproxy.pid")" 2>/dev/null; then
		echo "fleet.sh: a fleet runs in $dir already (fleet.sh stop $dir)" >&2; exit 1
	fi
	rm -f "$dir/ports"
	if ! fleet_start "$dir"; then
		fleet_stop 2>/dev/null
		echo "fleet.sh: the fleet did not start; logs in $dir" >&2
		exit 1
	fi
	echo "fleet: $FLEET_URL (replicas: $(fleet_replica_url 1) $(fleet_replica_url 2) $(fleet_replica_url 3); logs in $dir)"
	;;
status | stop)
	[[ -s $dir/ports ]] || { echo "fleet.sh: no fleet in $dir" >&2; exit 1; }
	fleet_init "$dir"
	if [[ $cmd == status ]]; then fleet_status; exit; fi
	fleet_stop
	rc=$?
	rm -f "$dir/ports"
	exit $rc
	;;
esac
