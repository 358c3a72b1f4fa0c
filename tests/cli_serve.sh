#!/usr/bin/env bash
# egang serve end to end: a real server on a free loopback port, driven
# with curl and python3 sockets. Greedy completions equal `egang generate`,
# streaming (SSE), chat (ChatML), /v1/models, /health, /metrics (Prometheus
# text), a table of malformed and hostile requests (each a JSON error, and
# the server still answers), API keys, a full queue (429), a client that
# goes away (cancelled), SIGTERM (exit 0), and a short `egang bench serve`.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

# free_port, start_server NAME ARGS... and stop_server NAME: tests/lib.sh

# json_get FILE EXPR and post PATH JSON: tests/lib.sh

# sse_text FILE FIELD: concatenates the text of every data: event
sse_text() {
	/usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
out = []
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip("\n")
    if not line.startswith("data: ") or line == "data: [DONE]":
        continue
    c = json.loads(line[6:])["choices"][0]
    v = c["text"] if sys.argv[2] == "text" else c["delta"].get("content")
    out.append(v or "")
sys.stdout.write("".join(out))
PY
}

# logprobs_check FILE SHAPE [STREAM]: the logprobs of a greedy reply (or
# of the SSE file's chunks put together) are consistent: a token per
# completion token, the sampled token the likeliest of its top list, each
# list sorted, its probabilities summing to at most 1, the tokens making
# the text. Prints "ok N DIGEST" (DIGEST: of the tokens and their
# values) or what is wrong.
logprobs_check() {
	/usr/bin/python3 - "$@" <<'PY'
import hashlib, json, math, sys
path, shape = sys.argv[1], sys.argv[2]
stream = len(sys.argv) > 3
if stream:
    chunks = [json.loads(l[6:]) for l in open(path, encoding="utf-8")
              if l.startswith("data: {")]
    usage = chunks[-1]["usage"]
    cs = [c["choices"][0] for c in chunks]
else:
    j = json.load(open(path, encoding="utf-8"))
    usage, cs = j["usage"], [j["choices"][0]]
toks, text = [], ""
for c in cs:
    lp = c["logprobs"]
    if shape == "chat":
        text += (c["delta"] if stream else c["message"]).get("content") or ""
        if lp is None:
            continue
        for e in lp["content"]:
            top = [(t["logprob"], t["token"]) for t in e["top_logprobs"]]
            toks.append((e["token"], e["logprob"], top))
    else:
        text += c["text"]
        if lp is None:
            continue
        for t, l, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]):
            toks.append((t, l, [(v, k) for k, v in top.items()]))
bad = []
if len(toks) != usage["completion_tokens"]:
    bad.append("%d tokens, usage says %d" % (len(toks), usage["completion_tokens"]))
if "".join(t[0] for t in toks) != text:
    bad.append("the tokens do not make the text")
for i, (t, l, top) in enumerate(toks):
    ps = [v for v, _ in top]
    if not top or abs(l - max(ps)) > 1e-6 or ps != sorted(ps, reverse=True):
        bad.append("token %d: %r %g is not the top of %r" % (i, t, l, top))
    if sum(math.exp(v) for v in ps) > 1 + 1e-6 or l > 0:
        bad.append("token %d: probabilities over 1" % i)
digest = hashlib.sha256(json.dumps(toks).encode()).hexdigest()[:12]
print("ok %d %s" % (len(toks), digest) if not bad and toks else "; ".join(bad[:3]) or "no tokens")
PY
}

# ---- the command line ----
"$EGANG" serve --help >"$TMP/help" 2>&1
if [[ $? -eq 0 ]] && grep -q usage "$TMP/help"; then pass "serve --help"; else fail "serve --help"; fi
if grep -q '^  top_k .*both' "$TMP/help" && grep -q '^  tools .*chat' "$TMP/help" &&
	grep -q 'unsupported_parameter' "$TMP/help" &&
	awk 'length > 80 {bad = 1} END {exit bad}' "$TMP/help"; then
	pass "serve --help lists the request fields, the refused ones too"
else fail "serve --help lists the request fields"; fi
expect_exit "serve without -m" 2 "-m/--model is required" "$EGANG" serve
expect_exit "serve --policy bogus" 2 "--policy: 'bogus' names no record" "$EGANG" serve -m x --policy bogus
expect_exit "serve --policy static:0" 2 "--policy: 'static:0' names no record" "$EGANG" serve -m x --policy static:0
expect_exit "serve --port out of range" 2 "--port: 70000 is out of range" "$EGANG" serve -m x --port 70000
expect_exit "serve --host not numeric" 2 "--host 'localhost' is not a numeric" "$EGANG" serve -m x --host localhost

# ---- models ----
if have_models "serve with stories260K"; then
	MODEL=$MODELS/stories260K.gguf
else
	MODEL=$TMP/stories.gguf
	"$EGANG" synth stories260k --type f32 -o "$MODEL" >/dev/null 2>&1
fi
CHAT=$TMP/smollm.gguf
"$EGANG" synth smollm-135m --layers 1 --type q8_0 -o "$CHAT" >/dev/null 2>&1

# ---- completions ----
if start_server main -m "$MODEL" --ctx 64 --timeout 2 -q; then
	MAIN_URL=$URL
	PROMPT="Once upon a time"
	want=$("$EGANG" generate -m "$MODEL" --ctx 64 -p "$PROMPT" -n 24 -t 0 --no-echo -q --cores 0 2>/dev/null)
	st=$(post /v1/completions "{\"prompt\":\"$PROMPT\",\"max_tokens\":24,\"temperature\":0}")
	got=$(json_get "$TMP/r.json" 'j["choices"][0]["text"]')
	if [[ $st == 200 && -n $want && "$got" == "$want" ]]; then pass "greedy completion over HTTP equals egang generate"
	else fail "greedy completion" "status $st: '$got' vs '$want'"; fi
	ntok=$(json_get "$TMP/r.json" 'j["usage"]["completion_tokens"]')
	[[ $ntok -ge 1 && $ntok -le 24 ]] && pass "usage counts tokens" || fail "usage" "$ntok"
	curl -sN --max-time 60 -o "$TMP/s.txt" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":24,\"temperature\":0,\"stream\":true}" "$URL/v1/completions"
	sgot=$(sse_text "$TMP/s.txt" text)
	if [[ "$sgot" == "$want" && $(grep -c '^data: ' "$TMP/s.txt") -ge 3 && $(grep '^data: ' "$TMP/s.txt" | tail -1) == "data: [DONE]" ]]; then
		pass "streaming completion: SSE chunks add up to the same text, then [DONE]"
	else fail "streaming completion" "'$sgot' vs '$want'"; fi
	# stop strings: cut before the first occurrence, streamed or not
	word=$(echo "$want" | awk '{print $3}')
	st=$(post /v1/completions "{\"prompt\":\"$PROMPT\",\"max_tokens\":24,\"temperature\":0,\"stop\":[\"zzz\",\"$word\"]}")
	got=$(json_get "$TMP/r.json" 'j["choices"][0]["text"]+"|"+j["choices"][0]["finish_reason"]')
	exp="${want%%"$word"*}"
	if [[ $st == 200 && "$got" == "$exp|stop" ]]; then pass "stop string cuts the text (finish_reason stop)"
	else fail "stop string" "'$got' vs '$exp|stop'"; fi
	curl -sN --max-time 60 -o "$TMP/s2.txt" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":24,\"temperature\":0,\"stream\":true,\"stop\":\"$word\"}" "$URL/v1/completions"
	[[ "$(sse_text "$TMP/s2.txt" text)" == "$exp" ]] && pass "stop string while streaming" || fail "stop string while streaming" "$(sse_text "$TMP/s2.txt" text)"
	# seeded sampling is reproducible
	a=$(post /v1/completions '{"prompt":"Once","max_tokens":16,"temperature":0.9,"top_p":0.9,"seed":7}'; json_get "$TMP/r.json" 'j["choices"][0]["text"]')
	b=$(post /v1/completions '{"prompt":"Once","max_tokens":16,"temperature":0.9,"top_p":0.9,"seed":7}'; json_get "$TMP/r.json" 'j["choices"][0]["text"]')
	[[ "$a" == "$b" && ${#a} -gt 3 ]] && pass "same seed, same sample" || fail "seeded sampling" "'$a' vs '$b'"
	# the logits processing fields, each seen to change greedy's text:
	# +100 forces one token (8 times the same piece), -100 bans (the
	# greedy text's tokens banned, another text), the penalties change
	# it, min_p 1 at temperature 2 leaves greedy's token only
	ctext() { post /v1/completions "$1" >/dev/null; json_get "$TMP/r.json" 'j["choices"][0]["text"]'; }
	t8=$(ctext "{\"prompt\":\"$PROMPT\",\"max_tokens\":8,\"temperature\":0,\"logit_bias\":{\"428\":100}}")
	[[ -n $t8 && $(( ${#t8} % 8 )) == 0 && $t8 == $(printf "${t8:0:$(( ${#t8} / 8 ))}%.0s" 1 2 3 4 5 6 7 8) ]] &&
		pass "logit_bias 100 forces the token ('$t8')" || fail "logit_bias 100" "'$t8'"
	ids=$("$EGANG" tokenize -m "$MODEL" --no-bos "$want" 2>/dev/null | tr ' ' '\n' | sort -u | awk '{printf "%s\"%s\":-100", (NR > 1 ? "," : ""), $1}')
	t=$(ctext "{\"prompt\":\"$PROMPT\",\"max_tokens\":24,\"temperature\":0,\"logit_bias\":{$ids}}")
	[[ -n $ids && -n $t && $t != "$want" ]] && pass "logit_bias -100 bans greedy's tokens ('$t')" || fail "logit_bias -100" "'$t' vs '$want'"
	# (60 tokens: the penalties need a token generated twice)
	w60=$(ctext "{\"prompt\":\"$PROMPT\",\"max_tokens\":60,\"temperature\":0}")
	for f in '"presence_penalty":2' '"frequency_penalty":2' '"repetition_penalty":2'; do
		t=$(ctext "{\"prompt\":\"$PROMPT\",\"max_tokens\":60,\"temperature\":0,$f}")
		[[ -n $t && $t != "$w60" ]] && pass "$f changes greedy's text" || fail "$f" "'$t' equals greedy's"
	done
	t=$(ctext "{\"prompt\":\"$PROMPT\",\"max_tokens\":24,\"temperature\":2,\"seed\":3,\"min_p\":1}")
	t0=$(ctext "{\"prompt\":\"$PROMPT\",\"max_tokens\":24,\"temperature\":2,\"seed\":3}")
	[[ $t == "$want" && $t0 != "$want" ]] && pass "min_p 1 at temperature 2 is greedy" || fail "min_p" "'$t' / '$t0' vs '$want'"
	st=$(post /v1/completions '{"prompt":"a","min_p":2}')
	[[ $st == 400 && $(json_get "$TMP/r.json" 'j["error"]["param"]') == min_p ]] && pass "min_p out of range -> 400" || fail "min_p 2" "$st"
	# logprobs: greedy's token is the likeliest, streamed or not
	post /v1/completions "{\"prompt\":\"$PROMPT\",\"max_tokens\":24,\"temperature\":0,\"logprobs\":5}" >/dev/null
	r=$(logprobs_check "$TMP/r.json" cmpl)
	[[ $r == ok* ]] && pass "completions logprobs: greedy's token on top, sums <= 1 ($r)" || fail "completions logprobs" "$r"
	curl -sN --max-time 60 -o "$TMP/lp.txt" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":24,\"temperature\":0,\"logprobs\":5,\"stream\":true}" "$URL/v1/completions"
	r2=$(logprobs_check "$TMP/lp.txt" cmpl stream)
	[[ $r2 == "$r" ]] && pass "completions logprobs streamed: the same tokens ($r2)" || fail "completions logprobs streamed" "$r2 vs $r"
	# with the penalties and a ban, greedy's token is still the top one:
	# the logprobs are those after them
	PENREQ="{\"prompt\":\"$PROMPT\",\"max_tokens\":40,\"temperature\":0,\"logprobs\":3,\"frequency_penalty\":1,\"repetition_penalty\":1.3,\"logit_bias\":{\"261\":-100}}"
	post /v1/completions "$PENREQ" >/dev/null
	LP_BATCHED=$(logprobs_check "$TMP/r.json" cmpl)
	[[ $LP_BATCHED == ok* ]] && pass "logprobs after the penalties and logit_bias ($LP_BATCHED)" || fail "logprobs after the penalties" "$LP_BATCHED"
	# /tokenize = egang tokenize; /detokenize gives the text back
	want_ids=$("$EGANG" tokenize -m "$MODEL" --no-bos "$PROMPT" 2>/dev/null)
	post /tokenize "{\"content\":\"$PROMPT\"}" >/dev/null
	got_ids=$(json_get "$TMP/r.json" '" ".join(str(i) for i in j["tokens"])')
	[[ -n $want_ids && $got_ids == "$want_ids" ]] && pass "/tokenize = egang tokenize ($got_ids)" || fail "/tokenize" "'$got_ids' vs '$want_ids'"
	post /tokenize "{\"content\":\"$PROMPT\",\"add_special\":true}" >/dev/null
	post /detokenize "{\"tokens\":$(json_get "$TMP/r.json" 'json.dumps(j["tokens"])')}" >/dev/null
	t=$(json_get "$TMP/r.json" 'j["content"]')
	[[ $t == "$PROMPT" ]] && pass "/detokenize of /tokenize's ids is the text" || fail "/detokenize" "'$t'"
	# models, health, model name
	curl -s --max-time 10 -o "$TMP/m.json" "$URL/v1/models"
	id=$(json_get "$TMP/m.json" 'j["data"][0]["id"]')
	[[ -n $id ]] && pass "/v1/models lists '$id'" || fail "/v1/models"
	st=$(post /v1/completions "{\"model\":\"$id\",\"prompt\":\"a\",\"max_tokens\":2}")
	st2=$(post /v1/completions "{\"model\":\"$(basename "$MODEL")\",\"prompt\":\"a\",\"max_tokens\":2}")
	[[ $st == 200 && $st2 == 200 ]] && pass "model by id and by file name" || fail "model names" "$st $st2"
	[[ $(curl -s --max-time 10 "$URL/health") == *'"ok"'* ]] && pass "/health" || fail "/health"
	# metrics: Prometheus text; counters move between two scrapes
	curl -s --max-time 10 -o "$TMP/m1.txt" "$URL/metrics"
	post /v1/completions '{"prompt":"a","max_tokens":3}' >/dev/null
	curl -s --max-time 10 -o "$TMP/m2.txt" "$URL/metrics"
	bad=$(grep -v '^#' "$TMP/m1.txt" | grep -Ecv '^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? ([0-9eE+.-]+|NaN|[+-]Inf)$')
	[[ $bad -eq 0 && $(grep -c . "$TMP/m1.txt") -gt 20 ]] && pass "/metrics parses as Prometheus text" || fail "/metrics format" "$bad bad lines"
	missing=""
	for m in egang_requests_total egang_prompt_tokens_total egang_generated_tokens_total \
		egang_prefill_tokens_per_second egang_decode_tokens_per_second \
		egang_time_to_first_token_seconds_bucket egang_time_per_output_token_seconds_count \
		egang_queue_depth egang_gang_width egang_gang_latch_changes_total egang_gang_joins_total \
		egang_gang_departures_total egang_policy_index egang_policy_invalid_index_total \
		process_resident_memory_bytes process_cpu_seconds_total; do
		grep -q "^$m" "$TMP/m1.txt" || missing+="$m "
	done
	if [[ -z $missing ]]; then pass "/metrics has every required family"
	else fail "/metrics has every required family" "missing: $missing"; fi
	sum() { grep "^$1" "$2" | awk '{s+=$NF} END {print s+0}'; }
	if [[ $(sum egang_generated_tokens_total "$TMP/m2.txt") -gt $(sum egang_generated_tokens_total "$TMP/m1.txt") &&
	      $(sum egang_requests_total "$TMP/m2.txt") -gt $(sum egang_requests_total "$TMP/m1.txt") ]]; then
		pass "/metrics counters move between scrapes"
	else fail "/metrics counters move"; fi

	# ---- the bad-request table ----
	/usr/bin/python3 - "${URL#http://127.0.0.1:}" >"$TMP/bad.out" 2>&1 <<'PY'
import json, socket, sys, time
port = int(sys.argv[1])
BIG = b'{"prompt":"' + b"a" * (1 << 20) + b'"}'

def raw(data, wait_close=10.0, pause=None):
    s = socket.create_connection(("127.0.0.1", port), timeout=wait_close)
    try:
        if pause is None:
            s.sendall(data)
        else:
            s.sendall(data[:pause[0]]); time.sleep(pause[1]); s.sendall(data[pause[0]:])
        buf = b""
        while True:
            try:
                d = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not d:
                break
            buf += d
        return buf
    finally:
        s.close()

def req(method, path, body=b"", headers=None, chunked=False):
    h = {"Host": "x", "Connection": "close"}
    h.update(headers or {})
    if chunked:
        h["Transfer-Encoding"] = "chunked"
        enc = b""
        for i in range(0, len(body), 65536):
            c = body[i:i + 65536]
            enc += b"%x\r\n" % len(c) + c + b"\r\n"
        body = enc + b"0\r\n\r\n"
    elif body or method == "POST":
        h["Content-Length"] = str(len(body))
    head = "%s %s HTTP/1.1\r\n" % (method, path) + "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n"
    return raw(head.encode() + body)

def parse(resp):
    head, _, body = resp.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else 0
    if b"chunked" in head.lower():
        out, rest = b"", body
        while rest:
            n, _, rest = rest.partition(b"\r\n")
            n = int(n, 16)
            if n == 0: break
            out, rest = out + rest[:n], rest[n + 2:]
        body = out
    return status, body

def health_ok():
    st, body = parse(req("GET", "/health"))
    return st == 200

C = "/v1/completions"; CH = "/v1/chat/completions"
cases = [
    ("broken JSON", "POST", C, b'{"prompt":', 400),
    ("JSON array body", "POST", C, b'[1,2]', 400),
    ("empty body", "POST", C, b'', 400),
    ("trailing garbage", "POST", C, b'{"prompt":"a"} x', 400),
    ("huge real max_tokens", "POST", C, b'{"prompt":"a","max_tokens":1e400}', 400),
    ("huge integer max_tokens", "POST", C, b'{"prompt":"a","max_tokens":99999999999999999999999}', 400),
    ("negative max_tokens", "POST", C, b'{"prompt":"a","max_tokens":-5}', 400),
    ("zero max_tokens", "POST", C, b'{"prompt":"a","max_tokens":0}', 400),
    ("max_tokens past the context", "POST", C, b'{"prompt":"a","max_tokens":100000}', 400),
    ("max_tokens a string", "POST", C, b'{"prompt":"a","max_tokens":"10"}', 400),
    ("max_tokens a fraction", "POST", C, b'{"prompt":"a","max_tokens":1.5}', 400),
    ("prompt a number", "POST", C, b'{"prompt":5}', 400),
    ("prompt missing", "POST", C, b'{"max_tokens":3}', 400),
    ("prompt null", "POST", C, b'{"prompt":null}', 400),
    ("prompt array of two", "POST", C, b'{"prompt":["a","b"]}', 400),
    ("prompt an object", "POST", C, b'{"prompt":{"a":1}}', 400),
    ("temperature a string", "POST", C, b'{"prompt":"a","temperature":"hot"}', 400),
    ("temperature negative", "POST", C, b'{"prompt":"a","temperature":-1}', 400),
    ("temperature too high", "POST", C, b'{"prompt":"a","temperature":50}', 400),
    ("top_p zero", "POST", C, b'{"prompt":"a","top_p":0}', 400),
    ("top_p 0 as a float", "POST", C, b'{"prompt":"a","top_p":1e-46}', 400),
    ("seed negative", "POST", C, b'{"prompt":"a","seed":-3}', 400),
    ("stream a string", "POST", C, b'{"prompt":"a","stream":"yes"}', 400),
    ("stop a number", "POST", C, b'{"prompt":"a","stop":5}', 400),
    ("stop array of numbers", "POST", C, b'{"prompt":"a","stop":[1,2]}', 400),
    ("five stop strings", "POST", C, b'{"prompt":"a","stop":["a","b","c","d","e"]}', 400),
    ("n = 9", "POST", C, b'{"prompt":"a","n":9}', 400),
    ("echo true", "POST", C, b'{"prompt":"a","echo":true}', 400),
    ("invalid UTF-8 bytes", "POST", C, b'{"prompt":"\xff\xfe\xc3"}', 400),
    ("lone surrogate escape", "POST", C, b'{"prompt":"\\ud800"}', 400),
    ("NUL escape", "POST", C, b'{"prompt":"a\\u0000b"}', 400),
    ("deep nesting", "POST", C, b'[' * 100000, 400),
    ("unknown model", "POST", C, b'{"model":"gpt-4","prompt":"a"}', 404),
    ("model a number", "POST", C, b'{"model":3,"prompt":"a"}', 400),
    ("prompt longer than --ctx", "POST", C, json.dumps({"prompt": "the cat sat " * 200}).encode(), 400),
    ("chat without messages", "POST", CH, b'{"prompt":"a"}', 400),
    ("chat with empty messages", "POST", CH, b'{"messages":[]}', 400),
    ("chat on a model without a template", "POST", CH, b'{"messages":[{"role":"user","content":"hi"}]}', 400),
    ("GET on completions", "GET", C, b'', 405),
    ("DELETE on chat", "DELETE", CH, b'', 405),
    ("POST on models", "POST", "/v1/models", b'{}', 405),
    ("unknown path", "GET", "/v2/everything", b'', 404),
    ("root path", "GET", "/", b'', 404),
    ("unknown model path", "GET", "/v1/models/nope", b'', 404),
    ("body over 1 MiB", "POST", C, BIG, 413),
]
bad = 0
for name, method, path, body, want in cases:
    st, resp = parse(req(method, path, body))
    try:
        err = json.loads(resp)["error"]
        ok = isinstance(err["message"], str) and len(err["message"]) > 0 and "type" in err
    except Exception:
        ok = False
    if st == want and ok and health_ok():
        print("PASS: bad request: %s -> %d + JSON error" % (name, want))
    else:
        print("FAIL: bad request: %s (status %d, want %d, body %r)" % (name, st, want, resp[:200]))
# chunked upload past the cap (no Content-Length)
st, resp = parse(req("POST", C, BIG, chunked=True))
print(("PASS" if st == 413 and b'"error"' in resp and health_ok() else "FAIL") + ": bad request: chunked body over 1 MiB -> 413 (%d)" % st)
# truncated body: Content-Length says more than is sent, client hangs up
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"prompt\":\"a\"" % C.encode())
s.close()
print(("PASS" if health_ok() else "FAIL") + ": bad request: truncated body, client hangs up; server still answers")
# slow body: Content-Length larger than the body, the client waits: the
# idle timeout (--timeout 2) closes the connection
t0 = time.time()
resp = raw(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"prompt\":" % C.encode(), wait_close=15)
dt = time.time() - t0
print(("PASS" if dt < 12 and health_ok() else "FAIL") + ": bad request: stalled body closed by the idle timeout (%.1f s)" % dt)
# slowloris headers
t0 = time.time()
resp = raw(b"GET /health HTTP/1.1\r\nHost: x\r\nX-a: ", wait_close=15)
dt = time.time() - t0
print(("PASS" if dt < 12 and health_ok() else "FAIL") + ": bad request: stalled headers closed by the idle timeout (%.1f s)" % dt)
# a slow but live body still works
st, resp = parse(raw(b"POST %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 29\r\n\r\n{\"prompt\":\"a\",\"max_tokens\":2}" % C.encode(), pause=(60, 1.0)))
print(("PASS" if st == 200 else "FAIL") + ": slow (1 s pause) but complete body answered (%d)" % st)
# garbage request line
raw(b"\x00\x01GARBAGE\r\n\r\n", wait_close=5)
print(("PASS" if health_ok() else "FAIL") + ": garbage request line; server still answers")
PY
	cat "$TMP/bad.out"
	[[ $(grep -c '^PASS' "$TMP/bad.out") -ge 30 ]] && pass "at least 30 hostile requests answered" || fail "hostile request count"
	st=$(post /v1/completions '{"prompt":"Once","max_tokens":4}')
	[[ $st == 200 ]] && pass "a good request after the hostile ones" || fail "good request after hostile ones" "$st"
	# fields egang does not implement: 400 unsupported_parameter naming
	# each; their no-op defaults are fine
	for f in '"suffix":"x"' '"best_of":2' '"frobnicate":1' '"tools":[]'; do
		name=${f%%\":*}; name=${name#\"}
		st=$(post /v1/completions "{\"prompt\":\"a\",\"max_tokens\":2,$f}")
		got=$(json_get "$TMP/r.json" 'j["error"]["code"]+"|"+j["error"]["param"]')
		[[ $st == 400 && $got == "unsupported_parameter|$name" ]] && pass "unsupported field $name -> 400 naming it" ||
			fail "unsupported field $name" "$st $got"
	done
	st=$(post /v1/completions '{"prompt":"a","max_tokens":2,"n":1,"echo":false,"best_of":1,"suffix":"","stream_options":{"include_usage":true},"user":"u","seed":null}')
	[[ $st == 200 ]] && pass "no-op defaults and null fields accepted" || fail "no-op defaults" "$st $(head -c 200 "$TMP/r.json")"

	# ---- load ----
	"$EGANG" bench serve --url "$URL" --clients 8 --seconds 3 --max-tokens 8 >"$TMP/bench.out" 2>"$TMP/bench.err"
	rc=$?
	line=$(grep '^bench serve' "$TMP/bench.out")
	if [[ $rc -eq 0 && $line == *" failed 0 "* ]]; then pass "bench serve: only 200/429, none lost ($line)"
	else fail "bench serve" "rc $rc: $line $(head -c 200 "$TMP/bench.err")"; fi
	# the server's CPU over the run, from its process_cpu_seconds_total:
	# 8 clients for 3 s keep the gang busy, so it is well above 0
	if [[ $line =~ server_cpu_s\ ([0-9.]+)\ cpu_ms_per_tok\ ([0-9.]+) ]] &&
	   awk -v c="${BASH_REMATCH[1]}" -v t="${BASH_REMATCH[2]}" 'BEGIN {exit !(c > 0.1 && t > 0)}'; then
		pass "bench serve: the server's CPU seconds and CPU ms per token"
	else fail "bench serve: server CPU" "$line"; fi
	# --ramp: the 4 clients start 0.5 s apart; all of them still send
	"$EGANG" bench serve --url "$URL" --clients 4 --seconds 3 --ramp 2 --max-tokens 4 \
		>"$TMP/bench.out" 2>"$TMP/bench.err"
	rc=$?
	line=$(grep '^bench serve' "$TMP/bench.out")
	if [[ $rc -eq 0 && $line == *"clients 4 "* && $line == *" failed 0 "* ]]; then pass "bench serve --ramp ($line)"
	else fail "bench serve --ramp" "rc $rc: $line $(head -c 200 "$TMP/bench.err")"; fi
	expect_exit "bench serve --ramp not shorter than --seconds" 2 "--ramp 5 is not shorter than --seconds 2" \
		"$EGANG" bench serve --url "$URL" --ramp 5 --seconds 2
	# --turns with --log: every request one CSV line, each conversation's
	# turns 1 and 2, the logged response header; no request left in flight.
	# A short --prompt keeps turn 2 (id, prompt, answer, prompt) and its 4
	# tokens inside the server's 64-token context.
	"$EGANG" bench serve --url "$URL" --clients 2 --seconds 2 --max-tokens 4 --turns 2 --prompt Once \
		--session-header X-Session-Id --log "$TMP/load.csv" --log-header Content-Type \
		>"$TMP/bench.out" 2>"$TMP/bench.err"
	rc=$?
	n=$(sed -n 's/^bench serve: .* requests \([0-9]*\) .*/\1/p' "$TMP/bench.out")
	summary=$(/usr/bin/python3 - "$TMP/load.csv" <<'PY'
import csv, sys
rs = list(csv.DictReader(open(sys.argv[1])))
turns = {r["session"]: set() for r in rs}
for r in rs:
    turns[r["session"]].add(r["turn"])
print(len(rs), sorted({r["outcome"] for r in rs}), sorted({r["header"] for r in rs}),
      sum(1 for t in turns.values() if {"1", "2"} <= t))
PY
)
	inflight=$(curl -s "$URL/metrics" | sed -n 's/^egang_requests_in_flight //p')
	if [[ $rc -eq 0 && $summary == "$n ['ok'] ['text/event-stream'] "[1-9]* && $inflight == 0 ]]; then
		pass "bench serve --turns --log: one line per request, turns 1 and 2, in flight 0 after ($summary)"
	else fail "bench serve --turns --log" "rc $rc requests '$n' csv '$summary' in flight '$inflight' $(head -c 200 "$TMP/bench.err")"; fi
	expect_exit "bench serve --session-header without --turns" 2 "--session-header needs --turns" \
		"$EGANG" bench serve --url "$URL" --session-header X-Session-Id
	expect_exit "bench serve --log in a missing directory" 2 "--log $TMP/no/such.csv: No such file" \
		"$EGANG" bench serve --url "$URL" --seconds 1 --log "$TMP/no/such.csv"
	stop_server main
fi

# ---- one request at a time (engine_generate, not the batch loop) ----
if start_server serial -m "$MODEL" --ctx 64 --parallel 1 -q; then
	post /v1/completions "$PENREQ" >/dev/null
	r=$(logprobs_check "$TMP/r.json" cmpl)
	[[ $r == ok* && $r == "${LP_BATCHED:-}" ]] && pass "--parallel 1: the same tokens and logprobs with the penalties ($r)" ||
		fail "--parallel 1 logprobs" "$r vs ${LP_BATCHED:-}"
	stop_server serial
fi

# ---- API key ----
if start_server auth -m "$MODEL" --ctx 64 --api-key s3cret -q; then
	st=$(post /v1/completions '{"prompt":"a","max_tokens":2}')
	e1=$(json_get "$TMP/r.json" 'j["error"]["type"]')
	st2=$(post /v1/completions '{"prompt":"a","max_tokens":2}' -H 'Authorization: Bearer wrong')
	st3=$(post /v1/completions '{"prompt":"a","max_tokens":2}' -H 'Authorization: Bearer s3cret')
	st4=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$URL/metrics")
	st5=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$URL/health")
	if [[ $st == 401 && -n $e1 && $st2 == 401 && $st3 == 200 && $st4 == 401 && $st5 == 200 ]]; then
		pass "--api-key: 401 without or with a wrong key, 200 with it; /health open"
	else fail "--api-key" "$st $st2 $st3 $st4 $st5"; fi
	stop_server auth
fi

# ---- --chat-template: a built-in template for a model without one ----
if start_server builtin -m "$MODEL" --ctx 64 --chat-template llama2 -q; then
	st=$(post /v1/chat/completions '{"messages":[{"role":"user","content":"Hello"}],"max_tokens":4,"temperature":0}')
	[[ $st == 200 ]] && pass "--chat-template llama2: chat on a model without a template -> 200" ||
		fail "--chat-template llama2" "$st $(head -c 200 "$TMP/r.json")"
	stop_server builtin
fi
"$EGANG" serve -m "$MODEL" --chat-template nosuch >/dev/null 2>"$TMP/ct.err"
[[ $? == 2 ]] && grep -q "chat-template 'nosuch'" "$TMP/ct.err" &&
	pass "--chat-template with an unknown name -> exit 2" || fail "--chat-template nosuch" "$(cat "$TMP/ct.err")"

# ---- chat (ChatML vocabulary), queue full, cancel on disconnect ----
# --drain-seconds 0: the SIGTERM at the end cuts the stream in flight at once
if start_server chat -m "$CHAT" --ctx 2048 --max-queue 1 --cores 0 --drain-seconds 0 -q; then
	st=$(post /v1/chat/completions '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}],"max_tokens":8,"temperature":0}')
	c=$(json_get "$TMP/r.json" 'j["object"]+"|"+j["choices"][0]["message"]["role"]+"|"+str(type(j["choices"][0]["message"]["content"])==str)')
	[[ $st == 200 && $c == "chat.completion|assistant|True" ]] && pass "chat completion (ChatML)" || fail "chat completion" "$st $c $(head -c 200 "$TMP/r.json")"
	want=$(json_get "$TMP/r.json" 'j["choices"][0]["message"]["content"]')
	curl -sN --max-time 60 -o "$TMP/c.txt" -d '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}],"max_tokens":8,"temperature":0,"stream":true}' "$URL/v1/chat/completions"
	first=$(grep -m1 '^data: ' "$TMP/c.txt")
	if [[ $first == *'"role":"assistant"'* && "$(sse_text "$TMP/c.txt" chat)" == "$want" && $(grep '^data: ' "$TMP/c.txt" | tail -1) == "data: [DONE]" ]]; then
		pass "streaming chat: role delta, content deltas = the same text, [DONE]"
	else fail "streaming chat" "$(head -c 300 "$TMP/c.txt")"; fi
	for f in '"functions":[{"name":"f"}]' '"function_call":"auto"'; do
		name=${f%%\":*}; name=${name#\"}
		st=$(post /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":2,$f}")
		got=$(json_get "$TMP/r.json" 'j["error"]["code"]+"|"+j["error"]["param"]')
		[[ $st == 400 && $got == "unsupported_parameter|$name" ]] && pass "chat: unsupported field $name -> 400 naming it" ||
			fail "chat: unsupported field $name" "$st $got"
	done
	lpreq='{"messages":[{"role":"user","content":"Hello"}],"max_tokens":12,"temperature":0,"logprobs":true,"top_logprobs":3'
	post /v1/chat/completions "$lpreq}" >/dev/null
	r=$(logprobs_check "$TMP/r.json" chat)
	[[ $r == ok* ]] && pass "chat logprobs: greedy's token on top, sums <= 1 ($r)" || fail "chat logprobs" "$r"
	curl -sN --max-time 60 -o "$TMP/clp.txt" -d "$lpreq,\"stream\":true}" "$URL/v1/chat/completions"
	r2=$(logprobs_check "$TMP/clp.txt" chat stream)
	[[ $r2 == "$r" ]] && pass "chat logprobs streamed: the same tokens ($r2)" || fail "chat logprobs streamed" "$r2 vs $r"
	st=$(post /v1/chat/completions '{"messages":[{"role":"wizard","content":"x"}]}')
	[[ $st == 400 ]] && pass "chat with an unknown role -> 400" || fail "chat unknown role" "$st"
	st=$(post /v1/chat/completions '{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}')
	[[ $st == 400 ]] && pass "chat with a non-text part -> 400" || fail "chat non-text part" "$st"
	# queue full: one runs, one waits, the rest get 429
	QP=()
	for i in 1 2 3 4 5 6; do
		# 300 tokens keep the first one running while the others arrive;
		# the time limit is a hang guard sized for the TSan build (~2 min
		# a generation there, the waiting one after the running one)
		curl -s --max-time 600 -o "$TMP/q$i.json" -w '%{http_code}\n' -d '{"prompt":"Once","max_tokens":300,"temperature":0.8}' "$URL/v1/completions" >"$TMP/q$i.st" &
		QP+=($!)
	done
	wait "${QP[@]}"
	n429=0 nok=0 other=0
	for i in 1 2 3 4 5 6; do
		case $(cat "$TMP/q$i.st") in
		200) nok=$((nok + 1));;
		429) n429=$((n429 + 1)); grep -q '"rate_limit_error"' "$TMP/q$i.json" || other=$((other + 1));;
		*) other=$((other + 1));;
		esac
	done
	[[ $n429 -ge 1 && $nok -ge 1 && $other -eq 0 ]] && pass "full queue: $nok x 200, $n429 x 429 with JSON errors" || fail "full queue" "$nok ok $n429 busy $other other"
	# a client that goes away mid-generation cancels it, streaming or not
	# (a non-streaming one sees nothing before the end). 2000 tokens of
	# this one-layer model take seconds; 500 could end inside the
	# client's half second on a fast core, leaving nothing to cancel.
	cancelled() { curl -s --max-time 10 "$URL/metrics" | awk '/^egang_generations_cancelled_total/ {print $2}'; }
	for body in '{"prompt":"Once","max_tokens":2000,"stream":true}' '{"prompt":"Once","max_tokens":2000}'; do
		c0=$(cancelled)
		curl -sN --max-time 0.5 -o /dev/null -d "$body" "$URL/v1/completions"
		ok=0
		for _ in $(seq 50); do
			c1=$(cancelled)
			if [[ $c1 -gt $c0 ]]; then ok=1; break; fi
			sleep 0.2
		done
		[[ $ok -eq 1 ]] && pass "a client that disconnects cancels its generation ($body)" || fail "cancel on disconnect ($body)" "$c0 -> $c1"
	done
	# SIGTERM with a stream in flight and --drain-seconds 0: the stream is
	# cut at once, ends with an SSE error event and no [DONE], exit 3
	curl -sN --max-time 60 -o "$TMP/term.txt" -d '{"prompt":"Once","max_tokens":2000,"stream":true}' "$URL/v1/completions" &
	CURL=$!
	for _ in $(seq 100); do grep -q '"text"' "$TMP/term.txt" 2>/dev/null && break; sleep 0.2; done
	kill -TERM "$SPID"
	for _ in $(seq 100); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.2; done
	if kill -0 "$SPID" 2>/dev/null; then kill -9 "$SPID"; fi
	wait "$SPID"; rc=$?
	wait $CURL
	last=$(grep '^data: ' "$TMP/term.txt" | tail -1)
	if [[ $rc == 3 && $last == 'data: {"error":'*'"server_error"'* ]] && ! grep -q '\[DONE\]' "$TMP/term.txt"; then
		pass "SIGTERM with a stream in flight (--drain-seconds 0): the stream ends with an error event, no [DONE]; exit 3"
	else fail "SIGTERM with a stream in flight" "exit $rc, last event ${last:0:200}"; fi
fi
exit 0
