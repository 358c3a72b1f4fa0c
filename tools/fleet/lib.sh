# tools/fleet/lib.sh: three `egang serve` replicas and HAProxy on
# loopback, as shell functions (sourced by tools/fleet/fleet.sh and
# tests/fleet/). Every process is started as a child of the sourcing
# shell, so that shell can wait for a replica and read its exit status (a
# drained SIGTERM exits 0); another shell (`fleet.sh stop`) finds them by
# their pid files.
#
# State lives in $FLEET_DIR: ports (HAProxy's and the replicas'), rN.pid,
# rN.log (a replica's stdout and stderr), rN.control (its policy control
# word, `egang policy set --control`), haproxy.pid, haproxy.log,
# haproxy.sock (the stats socket).
# Settings, from the environment (defaults in brackets):
#   EGANG                  the binary [./egang]
#   EGANG_FLEET_PORT       HAProxy's port; the replicas take the next three
#                          [8080]; 0: four free ports
#   EGANG_FLEET_PARALLEL   each replica's --parallel, HAProxy's maxconn [4]
#   EGANG_FLEET_MAXQUEUE   requests waiting in HAProxy per backend [64]
#   EGANG_FLEET_SERVE_ARGS more `egang serve` arguments for every replica
#                          (e.g. "--max-queue 2 --drain-seconds 30")
#   EGANG_FLEET_MODEL, EGANG_FLEET_TOKENIZER
#                          [models/stories260K.bin, models/tok512.bin]
#   EGANG_FLEET_CFG        HAProxy's configuration [tools/fleet/haproxy.cfg]
# Python is /usr/bin/python3 (Debian's, as the tests use).

FLEET_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FLEET_N=3
declare -a FLEET_PID=()

# fleet_free_port: a TCP port free on 127.0.0.1 now
fleet_free_port() {
	/usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'
}

# fleet_init DIR: chooses the ports (or reads them from DIR/ports, a
# fleet started before), writes them there and exports HAProxy's
# environment (tools/fleet/haproxy.cfg reads it)
fleet_init() {
	FLEET_DIR=$1
	mkdir -p "$FLEET_DIR"
	local base=${EGANG_FLEET_PORT:-8080} i
	FLEET_PORTS=()
	if [[ -s $FLEET_DIR/ports ]]; then
		read -r -a FLEET_PORTS <"$FLEET_DIR/ports"
	else
		for i in 0 1 2 3; do
			if [[ $base == 0 ]]; then FLEET_PORTS[i]=$(fleet_free_port)
			else FLEET_PORTS[i]=$((base + i)); fi
		done
		echo "${FLEET_PORTS[*]}" >"$FLEET_DIR/ports"
	fi
	export EGANG_FLEET_BIND=127.0.0.1:${FLEET_PORTS[0]}
	export EGANG_FLEET_R1=127.0.0.1:${FLEET_PORTS[1]}
	export EGANG_FLEET_R2=127.0.0.1:${FLEET_PORTS[2]}
	export EGANG_FLEET_R3=127.0.0.1:${FLEET_PORTS[3]}
	export EGANG_FLEET_MAXCONN=${EGANG_FLEET_PARALLEL:-4}
	export EGANG_FLEET_MAXQUEUE=${EGANG_FLEET_MAXQUEUE:-64}
	export EGANG_FLEET_STATS=$FLEET_DIR/haproxy.sock
	FLEET_URL=http://$EGANG_FLEET_BIND
}

# fleet_replica_url N: replica N's own address (1..3)
fleet_replica_url() { echo "http://127.0.0.1:${FLEET_PORTS[$1]}"; }

# fleet_replica_start N: starts replica N (appending to rN.log) and waits
# (30 s) for its /health; status 1 if it does not come up
fleet_replica_start() {
	local n=$1 url
	url=$(fleet_replica_url "$n")
	# shellcheck disable=SC2086 # EGANG_FLEET_SERVE_ARGS: words on purpose
	"${EGANG:-$FLEET_ROOT/egang}" serve \
		-m "${EGANG_FLEET_MODEL:-$FLEET_ROOT/models/stories260K.bin}" \
		-z "${EGANG_FLEET_TOKENIZER:-$FLEET_ROOT/models/tok512.bin}" \
		--port "${FLEET_PORTS[$n]}" --parallel "$EGANG_FLEET_MAXCONN" \
		--control "$FLEET_DIR/r$n.control" \
		${EGANG_FLEET_SERVE_ARGS:-} >>"$FLEET_DIR/r$n.log" 2>&1 &
	FLEET_PID[n]=$!
	echo "${FLEET_PID[n]}" >"$FLEET_DIR/r$n.pid"
	for _ in $(seq 150); do
		curl -sf --max-time 1 "$url/health" >/dev/null 2>&1 && return 0
		kill -0 "${FLEET_PID[n]}" 2>/dev/null || break
		sleep 0.2
	done
	echo "fleet: replica r$n did not come up: $(tail -2 "$FLEET_DIR/r$n.log")" >&2
	return 1
}

# fleet_pid N: replica N's pid (this shell's child, or its pid file's)
fleet_pid() {
	local pid=${FLEET_PID[$1]:-}
	[[ -n $pid ]] || pid=$(cat "$FLEET_DIR/r$1.pid" 2>/dev/null)
	echo "$pid"
}

# fleet_replica_stop N [SIGNAL [SECONDS]]: sends SIGNAL (TERM) to replica
# N and waits up to SECONDS (60) for it to exit; the status is its exit
# status (137 after SIGKILL; 0 for a replica that is not this shell's
# child), or 124 when it outlived the wait (it is then killed)
fleet_replica_stop() {
	local n=$1 sig=${2:-TERM} secs=${3:-60} pid t rc=0
	pid=$(fleet_pid "$n")
	[[ -n $pid ]] || return 0
	kill -"$sig" "$pid" 2>/dev/null
	for ((t = 0; t < secs * 10; t++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -9 "$pid" 2>/dev/null
		rc=124
	fi
	# braces: the shell's own "Killed" notice goes to /dev/null too
	if [[ -n ${FLEET_PID[n]:-} ]]; then
		local st
		{ wait "$pid"; } 2>/dev/null
		st=$?
		((rc)) || rc=$st
	fi
	FLEET_PID[n]=
	rm -f "$FLEET_DIR/r$n.pid"
	return $rc
}

# fleet_haproxy_start: HAProxy in the foreground of a background job
# (-db), logging to haproxy.log; waits for its stats socket
fleet_haproxy_start() {
	haproxy -db -f "${EGANG_FLEET_CFG:-$FLEET_ROOT/tools/fleet/haproxy.cfg}" >>"$FLEET_DIR/haproxy.log" 2>&1 &
	FLEET_HAPROXY=$!
	echo "$FLEET_HAPROXY" >"$FLEET_DIR/haproxy.pid"
	for _ in $(seq 100); do
		[[ -S $EGANG_FLEET_STATS ]] && fleet_cmd "show info" >/dev/null 2>&1 && return 0
		kill -0 "$FLEET_HAPROXY" 2>/dev/null || break
		sleep 0.1
	done
	echo "fleet: haproxy did not start: $(tail -3 "$FLEET_DIR/haproxy.log")" >&2
	return 1
}

# fleet_cmd CMD: CMD on HAProxy's stats socket (management guide 9.3),
# its answer on stdout
fleet_cmd() {
	/usr/bin/python3 - "$EGANG_FLEET_STATS" "$1" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode())
EOF
}

# fleet_stat PROXY SERVER FIELD: one field of `show stat` (SERVER
# "BACKEND" for the backend's row), e.g. scur, status, wretr, wredis
fleet_stat() {
	fleet_cmd "show stat" | /usr/bin/python3 -c '
import csv, sys
px, sv, field = sys.argv[1:4]
rows = list(csv.reader(sys.stdin))
head = [h.lstrip("# ") for h in rows[0]]
for r in rows[1:]:
    if len(r) == len(head) and r[0] == px and r[1] == sv:
        print(r[head.index(field)])
        break
' "$1" "$2" "$3"
}

# fleet_retries: "RETRIED REDISPATCHED", summed over both backends
fleet_retries() {
	local a b c d
	a=$(fleet_stat egang BACKEND wretr) b=$(fleet_stat egang_session BACKEND wretr)
	c=$(fleet_stat egang BACKEND wredis) d=$(fleet_stat egang_session BACKEND wredis)
	echo "$((${a:-0} + ${b:-0})) $((${c:-0} + ${d:-0}))"
}

# fleet_wait_status N WANT [SECONDS]: waits (30 s) until HAProxy's health
# check says replica N's status is WANT ("UP" or "DOWN"); status 1 if not
fleet_wait_status() {
	local n=$1 want=$2 secs=${3:-30} t
	for ((t = 0; t < secs * 10; t++)); do
		[[ $(fleet_stat egang "r$n" status) == "$want" ]] && return 0
		sleep 0.1
	done
	echo "fleet: r$n is not $want after ${secs}s: $(fleet_stat egang "r$n" status)" >&2
	return 1
}

# fleet_start DIR: the replicas, then HAProxy, then every replica UP
fleet_start() {
	fleet_init "$1"
	local n
	for ((n = 1; n <= FLEET_N; n++)); do fleet_replica_start "$n" || return 1; done
	fleet_haproxy_start || return 1
	for ((n = 1; n <= FLEET_N; n++)); do fleet_wait_status "$n" UP || return 1; done
}

# fleet_stop: HAProxy (no new requests), then each replica with SIGTERM;
# status 1 when a replica did not exit 0 (a replica already gone counts
# as stopped)
fleet_stop() {
	local n rc=0 hp=${FLEET_HAPROXY:-} t
	[[ -n $hp ]] || hp=$(cat "$FLEET_DIR/haproxy.pid" 2>/dev/null)
	if [[ -n $hp ]]; then
		kill -TERM "$hp" 2>/dev/null
		for ((t = 0; t < 100; t++)); do kill -0 "$hp" 2>/dev/null || break; sleep 0.1; done
		[[ -n ${FLEET_HAPROXY:-} ]] && wait "$hp" 2>/dev/null
		FLEET_HAPROXY=
		rm -f "$FLEET_DIR/haproxy.pid"
	fi
	for ((n = 1; n <= FLEET_N; n++)); do
		fleet_replica_stop "$n" TERM 60 || { echo "fleet: r$n exited $?" >&2; rc=1; }
	done
	return $rc
}

# fleet_status: one line for HAProxy and one per replica (its pid, its
# /health status, HAProxy's view of it and the requests it has in
# flight); status 1 when something is not running or not UP
fleet_status() {
	local n pid health hs hp rc=0
	hp=$(cat "$FLEET_DIR/haproxy.pid" 2>/dev/null)
	if [[ -n $hp ]] && kill -0 "$hp" 2>/dev/null; then
		echo "haproxy pid $hp $FLEET_URL stats socket $EGANG_FLEET_STATS"
	else
		echo "haproxy not running"; rc=1
	fi
	for ((n = 1; n <= FLEET_N; n++)); do
		pid=$(fleet_pid "$n")
		if [[ -z $pid ]] || ! kill -0 "$pid" 2>/dev/null; then
			echo "r$n $(fleet_replica_url "$n") not running"; rc=1; continue
		fi
		health=$(curl -s --max-time 2 "$(fleet_replica_url "$n")/health" |
			sed -n 's/.*"status": *"\([a-z]*\)".*/\1/p')
		hs=
		[[ -S $EGANG_FLEET_STATS ]] && hs=$(fleet_stat egang "r$n" status 2>/dev/null)
		echo "r$n $(fleet_replica_url "$n") pid $pid health ${health:-none}" \
			"haproxy ${hs:-?} in flight $(fleet_replica_metric "$n" egang_requests_in_flight)"
		[[ $hs == UP ]] || rc=1
	done
	return $rc
}

# fleet_replica_metric N NAME: a sample of replica N's /metrics (-1: none)
fleet_replica_metric() {
	curl -s --max-time 5 "$(fleet_replica_url "$1")/metrics" |
		awk -v n="$2" '$1 == n { print $2; f = 1 } END { if (!f) print -1 }'
}
