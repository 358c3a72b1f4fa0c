#!/usr/bin/env bash
# The fleet's session affinity: 16 clients hold conversations of 4 turns
# (each turn's prompt is the last turn's prompt and answer, then more
# text) with an X-Session-Id header. HAProxy's consistent hash on it must
# send every turn of a conversation to one replica, and that replica's
# prefix cache must serve the earlier turns: per replica, its prefix-cache
# hits (egang_prefix_cache_hits_total) grow by at least the later turns it
# served, and its saved prompt positions
# (egang_prefix_cache_tokens_saved_total) by at least the previous turns'
# prompts of those turns. Then the same affinity by the OpenAI "user"
# field of the body, for requests without the header.
cd "$(dirname "$0")/../.."
. tests/fleet/lib.sh
name="fleet affinity"
fleet_prereq "$name" || exit 0
fleet_up "$name" || exit 0

# metrics FILE: "rN HITS SAVED" per replica
metrics() {
	local n
	for n in 1 2 3; do
		echo "r$n $(fleet_replica_metric "$n" egang_prefix_cache_hits_total)" \
			"$(fleet_replica_metric "$n" egang_prefix_cache_tokens_saved_total)"
	done >"$1"
}
metrics "$TMP/m0"
read -r retr0 redis0 < <(fleet_retries)
fleet_load affinity --seconds 8 --max-tokens 40 --turns 4 --session-header X-Session-Id \
	--prompt "The little dog ran to the park and saw a big red ball."
wait "$LOAD_PID"
read -r retr1 redis1 < <(fleet_retries)
metrics "$TMP/m1"
line=$(/usr/bin/python3 "$FLEET_PY" affinity "$TMP/affinity.csv" "$TMP/m0" "$TMP/m1")
rc=$?
fleet_report "affinity: $line; retried $((retr1 - retr0)) redispatched $((redis1 - redis0))"
if [[ $rc -eq 0 ]]; then pass "$name: each conversation on one replica, its prefix cache hit"
else fail "$name" "$line $(tail -1 "$TMP/affinity.err")"; fi

# without the header, the body's OpenAI "user" field is the session: each
# user's requests reach one replica, and the users spread over several
users=""
for u in 0 1 2 3 4 5 6 7 8 9 10 11; do
	seen=""
	for _ in 1 2 3; do
		seen+=" $(curl -s --max-time 30 -o /dev/null -w '%{http_code}:%header{x-egang-replica}' \
			"$FLEET_URL/v1/completions" -d "{\"prompt\":\"Once\",\"max_tokens\":2,\"user\":\"user-$u\"}")"
	done
	users+="$(echo "$seen" | tr ' ' '\n' | sort -u | tr '\n' ' ' | sed 's/^ *//;s/ *$//');"
done
n_rep=$(echo "$users" | tr ';' '\n' | sed -n 's/^200:\(r[0-9]\)$/\1/p' | sort -u | wc -l)
if [[ $(echo "$users" | tr ';' '\n' | grep -cx '200:r[0-9]') -eq 12 && $n_rep -ge 2 ]]; then
	pass "$name: the body's \"user\" field keeps each user on one replica ($n_rep replicas for 12 users)"
else fail "$name: the body's \"user\" field" "per user: $users"; fi
fleet_stop 2>"$TMP/stop.err" && pass "$name: the fleet stops cleanly" ||
	fail "$name: the fleet stops cleanly" "$(cat "$TMP/stop.err")"
