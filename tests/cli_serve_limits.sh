#!/usr/bin/env bash
# egang serve against hostile clients on raw sockets (src/server/http.c,
# http_conn.c, http_error.c), a real server on loopback, python's socket
# module as the client and curl as the well-behaved one:
#  - a Transfer-Encoding other than chunked (gzip, chunked) gets a 501
#    JSON error and the connection closed at once, never a hang; chunked
#    not last, or alone a coding, gets 400;
#  - what libmicrohttpd rejects itself (a malformed request line, header
#    field or chunk, a Content-Length it cannot read, 413, 414, 431, 505)
#    comes back as one response with the JSON error shape, not HTML;
#  - --request-timeout: a client that trickles a header line every half
#    second is closed once the deadline passes, however active it is;
#  - 300 slow connections (a header line every 2 s) from ten source
#    addresses (30 each, under the per-IP limit) and then from one, with
#    --max-conns 200: plain and generation requests from 127.0.0.1 are
#    still answered, the slow ones past --max-conns are evicted (counted
#    in /metrics), one address holds at most --max-conns-per-ip, and a
#    request from it past the limit gets a 429 JSON error.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

M=$TMP/chat.gguf
"$EGANG" synth smollm-135m --layers 1 --type q8_0 -o "$M" >/dev/null 2>&1

# raw.py PORT NAME: sends the named raw request on one connection, reads
# until the server closes it (10 s at most) and checks the reply: one
# status line with the expected status, a JSON error body of OpenAI's
# shape; prints "ok" or what was wrong.
cat >"$TMP/raw.py" <<'EOF'
import json, socket, sys
port, name = int(sys.argv[1]), sys.argv[2]
post = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
cases = {
    "te-gzip-chunked": (501, post + b"Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
    "te-chunked-gzip": (400, post + b"Transfer-Encoding: chunked, gzip\r\n\r\nhello"),
    "te-gzip": (400, post + b"Transfer-Encoding: gzip\r\n\r\nhello"),
    "bad-request-line": (400, b"GET /health HTTP/1.1 extra\r\nHost: x\r\n\r\n"),
    "bad-header-field": (400, b"GET /health HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n"),
    "bad-chunk": (400, post + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"),
    "bad-content-length": (400, post + b"Content-Length: abc\r\n\r\n"),
    "huge-content-length": (413, post + b"Content-Length: 99999999999999999999999\r\n\r\n"),
    "huge-chunk": (413, post + b"Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\nabc\r\n"),
    "long-uri": (414, b"GET /" + b"a" * 200000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
    "big-headers": (431, b"GET /health HTTP/1.1\r\nHost: x\r\n" +
                    b"".join(b"X-%d: %s\r\n" % (i, b"v" * 1000) for i in range(300)) + b"\r\n"),
    "http-version": (505, b"GET /health HTTP/2.5\r\nHost: x\r\n\r\n"),
}
want, req = cases[name]
s = socket.create_connection(("127.0.0.1", port), timeout=10)
try:
    s.sendall(req)
except OSError:
    pass  # the server may answer and close before it has read everything
data = b""
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
except socket.timeout:
    print("no close within 10 s: %r" % data[:200]); sys.exit()
except OSError as e:
    if not data:
        print("error %r before any reply" % e); sys.exit()
head, _, body = data.partition(b"\r\n\r\n")
lines = head.decode("latin-1").split("\r\n")
hdr = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
try:
    err = json.loads(body)["error"]
    shape = isinstance(err["message"], str) and err["message"] and "type" in err and "param" in err and "code" in err
except Exception:
    shape = False
if not lines[0].startswith("HTTP/1.1 %d " % want):
    print("status line %r, want %d" % (lines[0], want))
elif body.startswith(b"HTTP/"):
    print("a second status line: %r" % data[:300])
elif hdr.get("content-type") != "application/json" or not shape:
    print("not a JSON error: %r" % data[:300])
elif int(hdr.get("content-length", -1)) != len(body):
    print("Content-Length %s, body %d bytes" % (hdr.get("content-length"), len(body)))
else:
    print("ok")
EOF

# trickle.py PORT LINES: one connection sends a request line, then a
# header line every 0.5 s, LINES in all; prints "closed after N lines"
# when the server closes it first, else "sent all N lines".
cat >"$TMP/trickle.py" <<'EOF'
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
s.setblocking(False)
for i in range(n):
    time.sleep(0.5)
    try:
        if s.recv(4096) == b"":
            print("closed after %d lines" % i); sys.exit()
    except BlockingIOError:
        pass
    except OSError:
        print("closed after %d lines" % i); sys.exit()
    try:
        s.send(b"X-Slow-%d: y\r\n" % i)
    except OSError:
        print("closed after %d lines" % i); sys.exit()
print("sent all %d lines" % n)
EOF

# slow.py PORT N ADDR...: N connections spread over the source addresses
# ADDR, each sending a request line and then one header line every 2 s,
# never the blank line that ends the headers. Writes "ready" once all
# were opened and holds them until SIGTERM (60 s at most), then prints
# "held H closed C refused R" (H still open at the end; C closed by the
# server; R not connected at all).
cat >"$TMP/slow.py" <<'EOF'
import select, signal, socket, sys, time
port, n, addrs = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
socks, refused = [], 0
for i in range(n):
    s = socket.socket()
    s.bind((addrs[i % len(addrs)], 0))
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
        s.setblocking(False)
        socks.append(s)
    except OSError:
        refused += 1
        s.close()
print("ready", flush=True)
open_, closed = set(socks), 0
end, line, next_line = time.time() + 60, 0, time.time() + 2
while not stop and time.time() < end:
    r, _, _ = select.select(list(open_), [], [], 0.2)
    for s in r:  # readable: the server closed it (or answered, then closed)
        try:
            gone = s.recv(4096) == b""
        except OSError:
            gone = True
        if gone:
            open_.discard(s); closed += 1; s.close()
    if time.time() >= next_line:
        line, next_line = line + 1, next_line + 2
        for s in list(open_):
            try:
                s.send(b"X-Slow-%d: y\r\n" % line)
            except OSError:
                open_.discard(s); closed += 1; s.close()
print("held %d closed %d refused %d" % (len(open_), closed, refused), flush=True)
EOF

# ---- transfer codings and libmicrohttpd's own errors: JSON, closed ----
if start_server raw -m "$M" --ctx 512 --cores 0 -q; then
	port=${URL##*:}
	for c in te-gzip-chunked te-chunked-gzip te-gzip bad-request-line bad-header-field \
		bad-chunk bad-content-length huge-content-length huge-chunk long-uri big-headers \
		http-version; do
		r=$(/usr/bin/python3 "$TMP/raw.py" "$port" "$c" 2>&1)
		[[ $r == ok ]] && pass "raw $c: one JSON error response, the connection closed" ||
			fail "raw $c" "$r"
	done
	st=$(curl -s --max-time 20 -o "$TMP/ok.json" -w '%{http_code}' \
		-d '{"prompt":"Once","max_tokens":4}' "$URL/v1/completions")
	[[ $st == 200 ]] && pass "raw: a completion is still served" || fail "raw: completion after" "$st"
	stop_server raw
fi

# ---- --request-timeout: the deadline does not reset on every byte ----
if start_server deadline -m "$M" --ctx 512 --cores 0 --request-timeout 2 -q; then
	r=$(/usr/bin/python3 "$TMP/trickle.py" "${URL##*:}" 16 2>&1)
	curl -s --max-time 10 -o "$TMP/dl.txt" "$URL/metrics"
	n=$(sed -n 's/^egang_connections_closed_total{reason="request_timeout"} //p' "$TMP/dl.txt")
	if [[ $r == "closed after "* && ${r//[^0-9]/} -lt 16 && ${n:-0} -ge 1 ]]; then
		pass "--request-timeout 2: a client trickling a header line every 0.5 s is closed ($r; counted)"
	else fail "--request-timeout" "$r, metric ${n:-none}"; fi
	stop_server deadline
fi

# served NAME: a /health, a /v1/models and a completion from 127.0.0.1,
# each within curl's 10 s; PASS or FAIL
served() {
	local st1 st2 st3
	st1=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$URL/health")
	st2=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$URL/v1/models")
	st3=$(curl -s --max-time 10 -o "$TMP/c.json" -w '%{http_code}' \
		-d '{"prompt":"Once","max_tokens":4}' "$URL/v1/completions")
	if [[ $st1 == 200 && $st2 == 200 && $st3 == 200 ]] && grep -q '"finish_reason"' "$TMP/c.json"; then
		pass "$1"
	else fail "$1" "health $st1, models $st2, completion $st3"; fi
}
# slow_start OUT ADDR...: 300 slow connections (slow.py) in the background
# (pid P), once they are all open
slow_start() {
	local out=$1; shift
	/usr/bin/python3 "$TMP/slow.py" "$port" 300 "$@" >"$out" 2>&1 &
	P=$!
	for _ in $(seq 100); do grep -q ready "$out" 2>/dev/null && break; sleep 0.2; done
}
# slow_stop OUT: ends slow.py; sets held, closed and refused from its line
slow_stop() {
	kill -TERM "$P"; wait "$P"
	read -r _ held _ closed _ refused <<<"$(tail -1 "$1")"
}

# ---- 300 slow connections from ten addresses, then from one ----
# --max-conns 200: libmicrohttpd's own limit (200 + 200/4 + 16 = 266) is
# then below 300, so the requests are served only because the slow ones
# are evicted
if start_server slow -m "$M" --ctx 512 --cores 0 --max-conns 200 -q; then
	port=${URL##*:}
	addrs=()
	for i in $(seq 2 11); do addrs+=("127.0.0.$i"); done
	slow_start "$TMP/slow1.txt" "${addrs[@]}"
	served "300 slow connections from 10 addresses: ordinary requests are served"
	sleep 4 # two more header lines on each slow connection
	served "300 slow connections from 10 addresses: ordinary requests are served 4 s later"
	slow_stop "$TMP/slow1.txt"
	curl -s --max-time 10 -o "$TMP/sl.txt" "$URL/metrics"
	ev=$(sed -n 's/^egang_connections_closed_total{reason="evicted"} //p' "$TMP/sl.txt")
	if [[ ${held:-999} -le 200 && ${ev:-0} -ge 100 && $((held + closed + refused)) == 300 ]]; then
		pass "300 slow connections from 10 addresses: those past --max-conns 200 were evicted ($(tail -1 "$TMP/slow1.txt"), evicted $ev)"
	else fail "10 addresses: eviction" "$(tail -1 "$TMP/slow1.txt"), evicted ${ev:-none}"; fi

	slow_start "$TMP/slow2.txt" 127.0.0.12
	served "300 slow connections from one address: ordinary requests are served"
	st=$(curl -s --max-time 10 --interface 127.0.0.12 -o "$TMP/ip.json" -w '%{http_code}' "$URL/health")
	if [[ $st == 429 ]] && grep -q '"type":"rate_limit_error"' "$TMP/ip.json" && grep -q 'max-conns-per-ip' "$TMP/ip.json"; then
		pass "a request from the address past --max-conns-per-ip gets a 429 JSON error"
	else fail "per-IP 429" "$st $(head -c 300 "$TMP/ip.json")"; fi
	# the 236 past the limit are closed (evicted, or a second without a
	# request): wait for the count, at most 20 s
	for _ in $(seq 100); do
		curl -s --max-time 10 -o "$TMP/sl.txt" "$URL/metrics"
		n=$(awk '/^egang_connections_closed_total\{reason="(evicted|per_ip)"\}/ { n += $2 } END { print n + 0 }' "$TMP/sl.txt")
		((${n:-0} >= 236 + ev)) && break
		sleep 0.2
	done
	slow_stop "$TMP/slow2.txt"
	if [[ ${held:-999} -le 64 && $((held + closed + refused)) == 300 ]]; then
		pass "300 slow connections from one address: at most --max-conns-per-ip 64 held ($(tail -1 "$TMP/slow2.txt"))"
	else fail "one address: per-IP limit" "$(tail -1 "$TMP/slow2.txt")"; fi
	stop_server slow
fi
exit 0
