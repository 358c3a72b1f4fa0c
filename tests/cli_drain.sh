#!/usr/bin/env bash
# egang serve's graceful drain (src/server/server.h server_drain), a real
# server on a loopback port and real clients (curl, python's http.client):
#  - SIGTERM with a stream running and a request queued: /health answers
#    503 "draining", the queued request and a new one get 503 at once,
#    the stream runs to its own end (finish_reason stop, or length at its
#    max_tokens), the server exits 0;
#    /metrics shows egang_draining 1 and the stream in
#    egang_requests_in_flight;
#  - --drain-seconds 1 with a stream and a plain request running (batching):
#    both are cut when it ends, the stream with an SSE error event as its
#    last (no finish_reason, no [DONE]), the plain one with a 503 JSON
#    error, never finish_reason "length"; the exit status is 3;
#  - a second SIGTERM during the drain cuts at once (exit 3);
#  - --drain-seconds 0 cuts at once; an idle server exits 0.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

M=$TMP/chat.gguf
"$EGANG" synth smollm-135m --layers 1 --type q8_0 -o "$M" >/dev/null 2>&1

# stream.py URL BODY OUT: posts BODY to /v1/completions and writes
# "status N", then every line of the response as it arrives
cat >"$TMP/stream.py" <<'PY'
import http.client, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
out = open(sys.argv[3], "w")
try:
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=900)
    c.request("POST", "/v1/completions", sys.argv[2], {"Content-Type": "application/json"})
    r = c.getresponse()
    out.write("status %d\n" % r.status); out.flush()
    for line in r:
        out.write(line.decode()); out.flush()
except Exception as e:
    out.write("exception %r\n" % e)
PY

# sse_check OUT MAX_TOKENS: "finished" (a finish_reason stop, or length at
# completion_tokens == MAX_TOKENS, then [DONE]), "cut" (a server_error
# event as the last event, no finish_reason, no [DONE]), or what else it
# saw
cat >"$TMP/sse_check.py" <<'PY'
import json, sys
lines = [l.rstrip("\n") for l in open(sys.argv[1])]
mt = int(sys.argv[2])
data = [l[6:] for l in lines if l.startswith("data: ")]
if not data or not lines[0].startswith("status 200"):
    print("no events (%r)" % lines[-3:]); sys.exit()
done = data[-1] == "[DONE]"
ev = [json.loads(d) for d in data if d != "[DONE]"]
fin = [e["choices"][0]["finish_reason"] for e in ev if "choices" in e and e["choices"][0]["finish_reason"]]
err = [e for e in ev if "error" in e]
if err and not fin and not done and "error" in ev[-1] and ev[-1]["error"]["type"] == "server_error":
    print("cut")
elif fin and not err and done:
    n = ev[-1].get("usage", {}).get("completion_tokens")
    print("finished" if fin[-1] == "stop" or n == mt else "finish %s after %s of %d tokens" % (fin[-1], n, mt))
else:
    print("finish %r, errors %r" % (fin, err))
PY

# wait_for FILE PATTERN: until FILE has a line matching PATTERN (60 s)
wait_for() {
	for _ in $(seq 300); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done
	return 1
}
# health_is EXPR: until /health's JSON `j` makes EXPR true (60 s)
health_is() {
	for _ in $(seq 300); do
		curl -s --max-time 10 -o "$TMP/h.json" "$URL/health"
		/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
			"$TMP/h.json" "$1" 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}
# server_exit: RC = the server's exit status once it has exited (999: it
# did not within 600 s, killed)
server_exit() {
	for _ in $(seq 3000); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.2; done
	if kill -0 "$SPID" 2>/dev/null; then kill -9 "$SPID"; wait "$SPID" 2>/dev/null; RC=999; return; fi
	wait "$SPID"
	RC=$?
}
# is_error FILE STATUS: FILE is a JSON error and the request got STATUS
is_error() {
	/usr/bin/python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; sys.exit(0 if e["message"] else 1)' "$1" 2>/dev/null
}
body() { echo "{\"prompt\":\"Once\",\"max_tokens\":$1,\"temperature\":0.8,\"seed\":1${2:+,\"stream\":true}}"; }

# ---- SIGTERM: the running stream finishes, the queued and new get 503 ----
if start_server drain -m "$M" --ctx 2048 --cores 0 --parallel 1 --max-queue 4 --drain-seconds 600 -q; then
	/usr/bin/python3 "$TMP/stream.py" "$URL" "$(body 1000 s)" "$TMP/s1.txt" &
	S1=$!
	wait_for "$TMP/s1.txt" '"text"'
	curl -s --max-time 120 -o "$TMP/q1.json" -w '%{http_code}' -d "$(body 20)" "$URL/v1/completions" >"$TMP/q1.st" &
	Q1=$!
	health_is 'j["queue"] == 1' || fail "drain: the second request was not queued"
	kill -TERM "$SPID"
	st=$(curl -s --max-time 10 -o "$TMP/h.json" -w '%{http_code}' "$URL/health")
	hs=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$TMP/h.json" 2>/dev/null)
	[[ $st == 503 && $hs == draining ]] && pass "drain: /health answers 503 \"draining\"" ||
		fail "drain: /health while draining" "$st $(head -c 200 "$TMP/h.json")"
	wait "$Q1"
	grep -q '\[DONE\]' "$TMP/s1.txt" && s1done=1 || s1done=0
	if [[ $(cat "$TMP/q1.st") == 503 && $s1done == 0 ]] && is_error "$TMP/q1.json"; then
		pass "drain: the queued request gets 503 at once, the stream goes on"
	else fail "drain: queued request" "status $(cat "$TMP/q1.st"), stream done $s1done: $(head -c 200 "$TMP/q1.json")"; fi
	st=$(curl -s --max-time 10 -o "$TMP/n1.json" -w '%{http_code}' -D "$TMP/n1.h" -d "$(body 5)" "$URL/v1/completions")
	if [[ $st == 503 ]] && is_error "$TMP/n1.json" && grep -qi '^connection: close' "$TMP/n1.h"; then
		pass "drain: a new request gets 503 (a JSON error, Connection: close)"
	else fail "drain: new request" "$st $(head -c 200 "$TMP/n1.json")"; fi
	curl -s --max-time 10 -o "$TMP/m1.txt" "$URL/metrics"
	if grep -qx 'egang_draining 1' "$TMP/m1.txt" && grep -qx 'egang_requests_in_flight 1' "$TMP/m1.txt"; then
		pass "drain: /metrics shows egang_draining 1, the stream in egang_requests_in_flight"
	else fail "drain: /metrics" "$(grep -E '^egang_(draining|requests_in_flight) ' "$TMP/m1.txt" | tr '\n' ' ')"; fi
	server_exit
	wait "$S1"
	r=$(/usr/bin/python3 "$TMP/sse_check.py" "$TMP/s1.txt" 1000)
	[[ $r == finished ]] && pass "drain: the running stream ends on its own (finish_reason, [DONE])" ||
		fail "drain: running stream" "$r"
	[[ $RC == 0 ]] && pass "drain: every generation finished, exit 0" || fail "drain: exit status" "$RC $(tail -2 "$TMP/drain.err")"
fi

# ---- --drain-seconds 1: what still runs at its end is cut, exit 3 ----
if start_server cut -m "$M" --ctx 2048 --cores 0 --parallel 2 --drain-seconds 1 -q; then
	/usr/bin/python3 "$TMP/stream.py" "$URL" "$(body 2000 s)" "$TMP/s2.txt" &
	S2=$!
	curl -s --max-time 120 -o "$TMP/n2.json" -w '%{http_code}' -d "$(body 2000)" "$URL/v1/completions" >"$TMP/n2.st" &
	N2=$!
	wait_for "$TMP/s2.txt" '"text"'
	health_is 'j["busy"] and j["queue"] == 0' || fail "cut: the requests did not start"
	kill -TERM "$SPID"
	server_exit
	wait "$S2" "$N2"
	r=$(/usr/bin/python3 "$TMP/sse_check.py" "$TMP/s2.txt" 2000)
	[[ $r == cut ]] && pass "cut: the stream ends with an SSE error event, no finish_reason, no [DONE]" ||
		fail "cut: the stream" "$r"
	if [[ $(cat "$TMP/n2.st") == 503 ]] && is_error "$TMP/n2.json"; then
		pass "cut: the plain request gets a 503 JSON error"
	else fail "cut: the plain request" "$(cat "$TMP/n2.st") $(head -c 200 "$TMP/n2.json")"; fi
	[[ $RC == 3 ]] && grep -q "cut 2 running generations" "$TMP/cut.err" &&
		pass "cut: exit 3, the two cut generations counted" || fail "cut: exit status" "$RC $(tail -2 "$TMP/cut.err")"
fi

# ---- a second SIGTERM cuts at once ----
if start_server twice -m "$M" --ctx 2048 --cores 0 --parallel 1 --drain-seconds 300 -q; then
	/usr/bin/python3 "$TMP/stream.py" "$URL" "$(body 2000 s)" "$TMP/s3.txt" &
	S3=$!
	wait_for "$TMP/s3.txt" '"text"'
	kill -TERM "$SPID"
	health_is 'j["status"] == "draining"' || fail "twice: not draining"
	kill -TERM "$SPID"
	server_exit
	wait "$S3"
	r=$(/usr/bin/python3 "$TMP/sse_check.py" "$TMP/s3.txt" 2000)
	[[ $RC == 3 && $r == cut ]] && pass "a second SIGTERM cuts the drain at once (exit 3, the stream cut)" ||
		fail "second SIGTERM" "exit $RC, stream $r"
fi

# ---- --drain-seconds 0: cut at once; an idle server exits 0 ----
if start_server zero -m "$M" --ctx 2048 --cores 0 --drain-seconds 0 -q; then
	curl -s --max-time 120 -o "$TMP/n4.json" -w '%{http_code}' -d "$(body 2000)" "$URL/v1/completions" >"$TMP/n4.st" &
	N4=$!
	health_is 'j["busy"]' || fail "zero: the request did not start"
	kill -TERM "$SPID"
	server_exit
	wait "$N4"
	[[ $RC == 3 && $(cat "$TMP/n4.st") == 503 ]] && is_error "$TMP/n4.json" &&
		pass "--drain-seconds 0 cuts at once (503 JSON error, exit 3)" ||
		fail "--drain-seconds 0" "exit $RC, $(cat "$TMP/n4.st") $(head -c 200 "$TMP/n4.json")"
fi
if start_server idle -m "$M" --ctx 2048 --cores 0 --drain-seconds 0 -q; then
	stop_server "an idle server with --drain-seconds 0"
fi
exit 0
