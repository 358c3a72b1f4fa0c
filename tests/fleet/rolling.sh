#!/usr/bin/env bash
# The fleet: a rolling restart under 16-client streaming load. Each
# replica in turn is taken out of HAProxy's rotation (`set server
# egang/rN state drain` on the stats socket: no new requests) and gets
# SIGTERM at once; it drains (`egang serve --drain-seconds`: /health 503,
# new and queued requests 503, its running generations finish), exits 0
# (everything drained), starts again, passes HAProxy's health check and
# goes back into the rotation before the next one goes. No request may
# fail: a request that still reaches a draining replica gets its 503 and
# HAProxy retries it elsewhere (retry-on 503); a generation cut by the
# shutdown counts as failed at the client (an error event, or
# finish_reason "length" before max_tokens: bench/serve_load.h).
# Without the admin drain, HAProxy learns of the drain from /health alone
# and, while every other replica is full, can send one request's retries
# back to the draining replica until its check fails (see
# tools/fleet/haproxy.cfg); FLEET_ROLLING_SIGTERM_ONLY=1 runs that way.
# Without --drain-seconds in `egang serve --help` (a binary without the
# graceful drain) the scenario is SKIP, under CI too;
# FLEET_ROLLING_FORCE=1 runs it anyway, to see it fail there.
cd "$(dirname "$0")/../.."
. tests/fleet/lib.sh
name="fleet rolling restart"
fleet_prereq "$name" || exit 0
if "$EGANG" serve --help | grep -q -- --drain-seconds; then
	EGANG_FLEET_SERVE_ARGS="--drain-seconds 30"
elif [[ ${FLEET_ROLLING_FORCE:-} != 1 ]]; then
	skip "$name" "egang serve has no --drain-seconds (no graceful drain in this binary)"
	exit 0
fi
fleet_up "$name" || exit 0

# admin STATE N: replica N's admin state in both backends (unless
# FLEET_ROLLING_SIGTERM_ONLY=1)
admin() {
	[[ ${FLEET_ROLLING_SIGTERM_ONLY:-} == 1 ]] && return 0
	fleet_cmd "set server egang/r$2 state $1" >/dev/null
}

read -r retr0 redis0 < <(fleet_retries)
fleet_load rolling --seconds 45 --max-tokens 160 --ramp 1
if ! fleet_wait_requests rolling 60; then
	fail "$name" "no load: $(cat "$TMP/rolling.err")"; exit 0
fi
exits=""
for n in 1 2 3; do
	admin drain "$n"
	fleet_replica_stop "$n" TERM 60
	exits+=" r$n:$?"
	# back into the rotation: HAProxy marked it DOWN while it was away,
	# and sends to it again once its health check passes
	fleet_replica_start "$n" 2>>"$TMP/rolling.err" || break
	admin ready "$n"
	fleet_wait_status "$n" UP 30 2>>"$TMP/rolling.err" || break
	sleep 1 # the replica takes requests again before the next one goes
done
kill -0 "$LOAD_PID" 2>/dev/null
load_running=$?
wait "$LOAD_PID"
read -r retr1 redis1 < <(fleet_retries)
line=$(/usr/bin/python3 "$FLEET_PY" rolling "$TMP/rolling.csv")
rc=$?
fleet_report "rolling restart: $line; retried $((retr1 - retr0)) redispatched $((redis1 - redis0)); exit statuses$exits"
if [[ $load_running -ne 0 ]]; then
	fail "$name" "the load ended before the restarts did (raise its --seconds)"
elif [[ $exits != " r1:0 r2:0 r3:0" ]]; then
	fail "$name: every replica drained (exit 0)" "exit statuses$exits $(tail -2 "$TMP/rolling.err")"
elif [[ $rc -ne 0 ]]; then
	fail "$name" "$line $(tail -2 "$TMP/rolling.err")"
else
	pass "$name: 0 failed requests"
fi
fleet_stop 2>"$TMP/stop.err" && pass "$name: the fleet stops cleanly" ||
	fail "$name: the fleet stops cleanly" "$(cat "$TMP/stop.err")"
