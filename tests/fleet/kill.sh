#!/usr/bin/env bash
# The fleet: kill -9 of one replica (r2) under 16-client streaming load.
# The only failed requests may be streams that had started on r2 (each
# request's log line names the replica that answered it, HAProxy's
# X-Egang-Replica), at most as many as r2's in-flight gauge
# (egang_requests_in_flight in its /metrics) read just before the kill.
# To make that read exact, HAProxy sends r2 nothing new from a moment
# before it (`set server egang/r2 state drain`: its gauge can then only
# fall until the kill), and sends to it again right after the kill, so
# requests reach the dead replica until HAProxy marks it down: refused
# connections that HAProxy retries elsewhere (retry-on, option
# redispatch). Every other request must succeed, and r2, started again,
# serves again (after the load: its start is not raced against it).
cd "$(dirname "$0")/../.."
. tests/fleet/lib.sh
name="fleet kill -9"
fleet_prereq "$name" || exit 0
fleet_up "$name" || exit 0

read -r retr0 redis0 < <(fleet_retries)
fleet_load kill --seconds 20 --max-tokens 400 --ramp 1
if ! fleet_wait_requests kill 16; then
	fail "$name" "no load: $(cat "$TMP/kill.err")"; exit 0
fi
# r2 drained, its gauge read 50 ms later; if nothing ran on it then, r2
# takes requests for a second and is drained again. The drain, the pause
# and the read are one process (tests/fleet/lib.sh: fleet_drain_read):
# streams here last about 0.4 s, and the 0.1 s a process start costs on a
# loaded host between the drain and the read would let them all end. The
# kill follows the read with r2 still drained, so the gauge is a bound.
samples=()
for _ in $(seq 10); do
	inflight=$(fleet_drain_read 2 0.05)
	samples+=("$inflight")
	((inflight > 0)) && break
	fleet_cmd "set server egang/r2 state ready" >/dev/null
	sleep 1
done
((inflight > 0)) || fleet_cmd "set server egang/r2 state drain" >/dev/null
t_kill=$(fleet_now)
kill -0 "$LOAD_PID" 2>/dev/null
load_running=$?
fleet_replica_stop 2 KILL 10
fleet_cmd "set server egang/r2 state ready" >/dev/null
# the load goes on over the other two while HAProxy marks r2 down; r2
# comes back (during the load or after it)
fleet_wait_status 2 DOWN 10 2>>"$TMP/kill.err"
fleet_replica_start 2 2>>"$TMP/kill.err" && fleet_wait_status 2 UP 30 2>>"$TMP/kill.err"
wait "$LOAD_PID"
# the restarted r2 takes requests again: leastconn over an idle fleet
# reaches every replica within a few requests
back=0
for _ in $(seq 30); do
	[[ $(curl -s --max-time 30 -o /dev/null -w '%header{x-egang-replica}' "$FLEET_URL/v1/completions" \
		-d '{"prompt":"Once","max_tokens":2}') == r2 ]] && { back=1; break; }
done
read -r retr1 redis1 < <(fleet_retries)
line=$(/usr/bin/python3 "$FLEET_PY" kill "$TMP/kill.csv" r2 "$t_kill" "$inflight")
rc=$?
fleet_report "kill -9: ${line%%$'\n'*}; retried $((retr1 - retr0)) redispatched $((redis1 - redis0))"
if ((load_running)); then
	fail "$name" "the load ended before the kill (a slow machine: raise its --seconds)"
elif ((inflight <= 0)); then
	fail "$name" "r2's egang_requests_in_flight 50 ms after each drain: ${samples[*]} (no streams to cut, or no gauge)"
elif [[ $rc -eq 0 ]]; then
	pass "$name: only the $inflight streams in flight on the killed replica may fail"
else fail "$name" "$line $(tail -2 "$TMP/kill.err")"; fi
if ((back)); then pass "$name: the restarted replica serves again"
else fail "$name: the restarted replica serves again" "no request reached r2 in 30: $(tail -2 "$TMP/kill.err")"; fi
fleet_stop 2>"$TMP/stop.err" && pass "$name: the fleet stops cleanly" ||
	fail "$name: the fleet stops cleanly" "$(cat "$TMP/stop.err")"
