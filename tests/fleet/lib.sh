# Shared helpers of the fleet tests (make test-fleet): a fleet of three
# replicas behind HAProxy on loopback (tools/fleet/lib.sh), 16-client
# streaming load from `egang bench serve` through it, and the checks over
# the load's per-request log (tests/fleet/fleet.py). Each scenario prints
# one line "fleet NAME: requests N ok N busy N failed N (...) retried R
# redispatched D ..." (retries and redispatches: HAProxy's `show stat`).
. tests/lib.sh
. tools/fleet/lib.sh

FLEET_PY=tests/fleet/fleet.py
FLEET_CLIENTS=16

# the fleet's processes go with the test, whatever happens; FLEET_KEEP=DIR
# keeps the logs (the load's, HAProxy's, the replicas') in DIR
fleet_cleanup() {
	local p
	for p in "${FLEET_PID[@]}" "${FLEET_HAPROXY:-}" "${LOAD_PIDS[@]}"; do
		# braces: the shell's "Killed" notice goes to /dev/null too
		[[ -n $p ]] && { kill -9 "$p" && wait "$p"; } 2>/dev/null
	done
	[[ -n ${FLEET_KEEP:-} ]] && mkdir -p "$FLEET_KEEP" && cp -r "$TMP"/. "$FLEET_KEEP"/
	lib_cleanup
}
trap fleet_cleanup EXIT
LOAD_PIDS=()

# fleet_prereq NAME: the models and haproxy are there; otherwise FAIL (no
# models) or SKIP (no haproxy; FAIL under CI, which installs it)
fleet_prereq() {
	have_repo_models "$1" || return 1
	if ! command -v haproxy >/dev/null; then
		missing_model "$1" "no haproxy (make test-fleet installs it: tools/deps-fleet.sh)"
		return 1
	fi
}

# fleet_up NAME: the fleet in $TMP/fleet on free ports, every replica UP;
# FAIL with the logs' last lines if not
fleet_up() {
	EGANG_FLEET_PORT=0
	if fleet_start "$TMP/fleet" 2>"$TMP/fleet-start.err"; then return 0; fi
	fail "$1: the fleet did not start" "$(cat "$TMP/fleet-start.err") $(tail -3 "$TMP/fleet/haproxy.log" 2>/dev/null)"
	return 1
}

# fleet_load NAME ARGS...: `bench serve` through HAProxy in the background
# (16 clients unless ARGS say otherwise), logging every request to
# $TMP/NAME.csv with the replica that served it; its pid is LOAD_PID. The
# load generator is $EGANG, or $FLEET_LOADGEN (to try replicas of another
# build: EGANG names the replicas' binary)
fleet_load() {
	local name=$1; shift
	"${FLEET_LOADGEN:-$EGANG}" bench serve --url "$FLEET_URL" --clients "$FLEET_CLIENTS" \
		--request-timeout 60 --log "$TMP/$name.csv" --log-header X-Egang-Replica \
		"$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	LOAD_PID=$!
	LOAD_PIDS+=("$LOAD_PID")
}

# fleet_wait_requests NAME N: waits (60 s) until NAME's log holds N requests
fleet_wait_requests() {
	local t
	for ((t = 0; t < 600; t++)); do
		[[ -f $TMP/$1.csv ]] && (($(wc -l <"$TMP/$1.csv") > $2)) && return 0
		sleep 0.1
	done
	return 1
}

# fleet_drain_read N PAUSE: drains replica N in HAProxy (`set server
# egang/rN state drain`), waits PAUSE seconds for requests HAProxy had
# already sent it to arrive, and prints N's egang_requests_in_flight (-1:
# none), all in one process so that no process start lies between them
fleet_drain_read() {
	/usr/bin/python3 - "$EGANG_FLEET_STATS" "r$1" "$2" "$(fleet_replica_url "$1")/metrics" <<'EOF'
import socket, sys, time, urllib.request
stats, server, pause, url = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(stats)
s.sendall(b"set server egang/%s state drain\n" % server.encode())
while s.recv(4096):
    pass
time.sleep(pause)
value = -1
try:
    with urllib.request.urlopen(url, timeout=5) as r:
        for line in r.read().decode().splitlines():
            f = line.split()
            if len(f) == 2 and f[0] == "egang_requests_in_flight":
                value = int(f[1])
except OSError:
    pass
print(value)
EOF
}

# fleet_now: Unix time with milliseconds (the load log's clock)
fleet_now() { date +%s.%3N; }

# fleet_report LINE: the scenario's counts, "fleet LINE", on stdout and
# appended to $FLEET_REPORT when set (make test-fleet prints that file
# after the run, whose own output shows a passing program's lines not)
fleet_report() {
	echo "fleet $1"
	[[ -n ${FLEET_REPORT:-} ]] && echo "fleet $1" >>"$FLEET_REPORT"
	return 0
}
