#!/usr/bin/env bash
# The fleet saturated: every replica with --parallel 2 (HAProxy's maxconn
# 2) and --max-queue 1, HAProxy's queue limited to 2 requests per backend,
# and 16 clients of long streams, half of them with a session header (the
# hashed backend), so that both HAProxy (its queue full: 429) and the
# replicas (theirs full, when both backends send to one: 429) refuse.
# Every request must end as a complete 200 stream, a 429 or a 503: never
# a transport error or a broken stream, and so never the load's own
# --request-timeout (a request still unanswered then is a hang; no time
# is asserted beyond it). Some must have been refused, some served.
cd "$(dirname "$0")/../.."
. tests/fleet/lib.sh
name="fleet saturated"
fleet_prereq "$name" || exit 0
EGANG_FLEET_PARALLEL=2 EGANG_FLEET_MAXQUEUE=2 EGANG_FLEET_SERVE_ARGS="--max-queue 1"
fleet_up "$name" || exit 0

read -r retr0 redis0 < <(fleet_retries)
FLEET_CLIENTS=8
fleet_load sat-plain --seconds 6 --max-tokens 200 --request-timeout 20
p1=$LOAD_PID
fleet_load sat-session --seconds 6 --max-tokens 200 --request-timeout 20 \
	--turns 1 --session-header X-Session-Id
wait "$p1" "$LOAD_PID"
read -r retr1 redis1 < <(fleet_retries)
line=$(/usr/bin/python3 "$FLEET_PY" saturated "$TMP/sat-plain.csv" "$TMP/sat-session.csv")
rc=$?
fleet_report "saturated: ${line%%$'\n'*}; retried $((retr1 - retr0)) redispatched $((redis1 - redis0))"
if [[ $rc -eq 0 ]]; then pass "$name: refused with 429/503, nothing hung or broke"
else fail "$name" "$line $(tail -1 "$TMP/sat-plain.err") $(tail -1 "$TMP/sat-session.err")"; fi
fleet_stop 2>"$TMP/stop.err" && pass "$name: the fleet stops cleanly" ||
	fail "$name: the fleet stops cleanly" "$(cat "$TMP/stop.err")"
