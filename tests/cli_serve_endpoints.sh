#!/usr/bin/env bash
# egang serve end to end, a real server on loopback with curl as client:
#  - /v1/models/ID: OpenAI's model object with llama.cpp server's meta
#    (the context, the model's facts); the id /v1/models lists, the file
#    name, a URL-encoded name decoded; 404 in OpenAI's error shape;
#  - CORS: off by default (no Access-Control-* header, not even on a
#    preflight); --cors ORIGIN answers that origin (a comma list, case
#    aside, *), preflights with the allowed methods and headers; other
#    origins get nothing; a bad --cors value exits 2 with one line;
#  - n > 1 on both endpoints: choice i is the request with seed + i
#    alone, all equal at temperature 0, usage counts the prompt once and
#    every choice's tokens, streamed chunks carry their index, the later
#    choices copy the first's prompt KV (the prefix-cache counter grows by
#    (n - 1) x the prompt), and the serial scheduler (--parallel 1) gives
#    the same choices.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

# json_get FILE EXPR: a python expression over the parsed JSON `j`
# json_get FILE EXPR: tests/lib.sh; post (below) goes through req

# req METHOD PATH [curl args...]: body to $TMP/r.json, headers to
# $TMP/h.txt (lower-cased names), prints the status
req() {
	local method=$1 path=$2; shift 2
	curl -s --max-time 120 -X "$method" -o "$TMP/r.json" -D "$TMP/h.raw" -w '%{http_code}' \
		"$@" "$URL$path"
	tr -d '\r' <"$TMP/h.raw" | awk -F': ' '{print tolower($1) ": " $2}' >"$TMP/h.txt"
}

# header NAME: the value of a response header of the last req ("" if none)
header() { sed -n "s/^$1: //p" "$TMP/h.txt" | head -1; }

# post PATH JSON [curl args...]: a POST of JSON (req's outputs)
post() {
	local path=$1 body=$2; shift 2
	req POST "$path" -H 'Content-Type: application/json' -d "$body" "$@"
}

# metric NAME: a counter's value from /metrics
metric() { curl -s --max-time 10 "$URL/metrics" | sed -n "s/^$1 //p"; }

if have_models "serve endpoints with stories260K"; then
	cp "$MODELS/stories260K.gguf" "$TMP/my model.gguf"
else
	"$EGANG" synth stories260k --type f32 -o "$TMP/my model.gguf" >/dev/null 2>&1
fi
MODEL="$TMP/my model.gguf"
SIZE=$(stat -c %s "$MODEL")

# ---- /v1/models/ID, CORS on ----
if start_server cors -m "$MODEL" --ctx 128 --cores 0 -q \
	--cors http://app.test:3000 --cors 'https://B.test,http://[::1]:8080'; then
	st=$(req GET /v1/models)
	ID=$(json_get "$TMP/r.json" 'j["data"][0]["id"]')
	st=$(req GET "/v1/models/$ID")
	got=$(json_get "$TMP/r.json" '"|".join(str(x) for x in (j["id"], j["object"], j["owned_by"], type(j["created"]).__name__, j["meta"]["n_ctx"], j["meta"]["n_vocab"], j["meta"]["size"], j["meta"]["n_ctx_train"] > 0, j["meta"]["n_params"] > 0, j["meta"]["n_embd"] > 0))')
	[[ $st == 200 && -n $ID && $got == "$ID|model|egang|int|128|512|$SIZE|True|True|True" ]] &&
		pass "/v1/models/ID: the model object, meta with the context (128), vocabulary, size" ||
		fail "/v1/models/ID" "$st '$ID' $got"
	st=$(req GET "/v1/models/my%20model.gguf")
	[[ $st == 200 && $(json_get "$TMP/r.json" 'j["id"]') == "$ID" ]] &&
		pass "/v1/models/my%20model.gguf: the file name, URL-decoded, names the model" ||
		fail "/v1/models/FILE" "$st $(head -c 200 "$TMP/r.json")"
	st=$(req GET /v1/models/nope)
	got=$(json_get "$TMP/r.json" 'j["error"]["type"]+"|"+j["error"]["param"]+"|"+j["error"]["code"]')
	[[ $st == 404 && $got == "invalid_request_error|model|model_not_found" ]] &&
		pass "/v1/models/nope: 404 in OpenAI's error shape" || fail "/v1/models/nope" "$st $got"

	# a preflight from an allowed origin, then the request itself
	st=$(req OPTIONS /v1/chat/completions -H 'Origin: http://app.test:3000' \
		-H 'Access-Control-Request-Method: POST' \
		-H 'Access-Control-Request-Headers: authorization, content-type')
	if [[ $st == 204 && $(header access-control-allow-origin) == "http://app.test:3000" &&
		$(header access-control-allow-methods) == *POST* &&
		$(header access-control-allow-headers) == *Authorization* &&
		$(header access-control-allow-headers) == *Content-Type* &&
		$(header access-control-max-age) -gt 0 && $(header vary) == Origin ]]; then
		pass "--cors: a preflight from the origin gets 204, Allow-Origin/Methods/Headers, Max-Age, Vary"
	else fail "--cors preflight" "$st $(tr '\n' ' ' <"$TMP/h.txt")"; fi
	st=$(post /v1/completions '{"prompt":"Once","max_tokens":2}' -H 'Origin: http://app.test:3000')
	[[ $st == 200 && $(header access-control-allow-origin) == "http://app.test:3000" &&
		-z $(header access-control-allow-methods) && $(header vary) == Origin ]] &&
		pass "--cors: the request from the origin gets Allow-Origin (no preflight headers)" ||
		fail "--cors request" "$st $(tr '\n' ' ' <"$TMP/h.txt")"
	st=$(post /v1/completions '{"prompt":"Once","max_tokens":2,"stream":true}' -H 'Origin: https://b.test')
	[[ $st == 200 && $(header access-control-allow-origin) == "https://b.test" ]] &&
		pass "--cors: a stream, from the comma list's origin in other case, gets Allow-Origin" ||
		fail "--cors stream" "$st $(tr '\n' ' ' <"$TMP/h.txt")"
	st=$(req GET "/v1/models/$ID" -H 'Origin: http://[::1]:8080')
	[[ $st == 200 && $(header access-control-allow-origin) == "http://[::1]:8080" ]] &&
		pass "--cors: a bracketed IPv6 origin" || fail "--cors IPv6 origin" "$st"
	bad=
	for o in http://evil.test http://app.test http://app.test:3001 https://app.test:3000 null; do
		st=$(req OPTIONS /v1/completions -H "Origin: $o" -H 'Access-Control-Request-Method: POST')
		grep -q '^access-control-' "$TMP/h.txt" && bad+=" preflight:$o"
		st2=$(post /v1/completions '{"prompt":"Once","max_tokens":1}' -H "Origin: $o")
		grep -q '^access-control-' "$TMP/h.txt" && bad+=" post:$o"
		[[ $st == 204 && $st2 == 200 ]] || bad+=" status:$st/$st2"
	done
	[[ -z $bad ]] && pass "--cors: other origins (host, port, scheme, null) get no Access-Control-* header" ||
		fail "--cors other origins" "$bad"
	stop_server cors
fi

# ---- CORS off (the default); --cors * ; bad values ----
if start_server nocors -m "$MODEL" --ctx 64 --cores 0 --api-key k -q; then
	st=$(req OPTIONS /v1/chat/completions -H 'Origin: http://app.test:3000' \
		-H 'Access-Control-Request-Method: POST')
	st2=$(req GET /v1/models -H 'Authorization: Bearer k' -H 'Origin: http://app.test:3000')
	if [[ $st == 204 && $st2 == 200 ]] && ! grep -q '^access-control-\|^vary:' "$TMP/h.txt"; then
		pass "CORS off by default: a preflight (no key needed) and a request get no Access-Control-* header"
	else fail "CORS off" "$st $st2 $(tr '\n' ' ' <"$TMP/h.txt")"; fi
	st=$(req OPTIONS /v1/chat/completions)
	[[ $st == 204 && $(header allow) == "POST, OPTIONS" ]] && pass "OPTIONS: 204 with the endpoint's Allow" ||
		fail "OPTIONS Allow" "$st $(header allow)"
	stop_server nocors
fi
if start_server anycors -m "$MODEL" --ctx 64 --cores 0 --cors '*' -q; then
	st=$(req GET /health -H 'Origin: http://whoever.example:1234')
	[[ $st == 200 && $(header access-control-allow-origin) == "http://whoever.example:1234" ]] &&
		pass "--cors '*': any origin is answered with itself" || fail "--cors *" "$st"
	st=$(req GET /health)
	grep -q '^access-control-' "$TMP/h.txt" && fail "--cors * without Origin" "$(cat "$TMP/h.txt")" ||
		pass "--cors '*': a request without Origin gets no Access-Control-* header"
	stop_server anycors
fi
expect_exit "--cors not an origin: exit 2, one line" 2 "--cors 'localhost:3000' is not an origin" \
	"$EGANG" serve -m "$MODEL" --cors localhost:3000
expect_exit "--cors with a path: exit 2" 2 "is not an origin" "$EGANG" serve -m "$MODEL" --cors http://a.test/
expect_exit "--cors list with a bad item: exit 2 naming it" 2 "'ftp://b' is not an origin" \
	"$EGANG" serve -m "$MODEL" --cors http://a.test,ftp://b
expect_exit "--cors port 0: exit 2" 2 "is not an origin" "$EGANG" serve -m "$MODEL" --cors http://a.test:0

# ---- n > 1 ----
PROMPT="Once upon a time, in a small town by the sea, there lived an old fisherman who"
# texts FILE FIELD: the choices' texts of a reply, in index order, one per line (repr)
texts() { json_get "$1" '"\n".join(repr(c["'"$2"'"] if "'"$2"'" == "text" else c["message"]["content"]) for c in sorted(j["choices"], key=lambda c: c["index"]))'; }

# n_checks NAME: the choices of a server (URL) against single requests
n_checks() {
	local name=$1 st want got i ntok np sum
	# the prefix counter first: a fresh server, nothing cached before
	local saved0 saved1
	saved0=$(metric egang_prefix_cache_tokens_saved_total)
	st=$(post /v1/completions "{\"prompt\":\"$PROMPT\",\"max_tokens\":10,\"n\":4,\"seed\":7}")
	saved1=$(metric egang_prefix_cache_tokens_saved_total)
	np=$(json_get "$TMP/r.json" 'j["usage"]["prompt_tokens"]')
	ntok=$(json_get "$TMP/r.json" 'j["usage"]["completion_tokens"]')
	got=$(texts "$TMP/r.json" text)
	cp "$TMP/r.json" "$TMP/n4.json"
	if [[ $name == batch ]]; then
		[[ $st == 200 && $((saved1 - saved0)) -eq $((3 * (np - 1))) ]] &&
			pass "n=4 ($name): the later choices copy the first's prompt KV (saved $((saved1 - saved0)) = 3 x $((np - 1)))" ||
			fail "n=4 ($name): prompt shared" "status $st, saved $saved0 -> $saved1, prompt $np"
	fi
	want= sum=0
	for i in 0 1 2 3; do
		post /v1/completions "{\"prompt\":\"$PROMPT\",\"max_tokens\":10,\"seed\":$((7 + i))}" >/dev/null
		want+=$(texts "$TMP/r.json" text)$'\n'
		sum=$((sum + $(json_get "$TMP/r.json" 'j["usage"]["completion_tokens"]')))
	done
	idx=$(json_get "$TMP/n4.json" '[c["index"] for c in j["choices"]]')
	[[ $st == 200 && $idx == "[0, 1, 2, 3]" && "$got"$'\n' == "$want" && $(sort -u <<<"$got" | wc -l) -gt 1 ]] &&
		pass "n=4 ($name): choices[i] is the request alone with seed 7+i (and they differ)" ||
		fail "n=4 ($name): seeds" "status $st idx $idx: $got vs $want"
	[[ $ntok == "$sum" && $np -gt 10 && $(json_get "$TMP/n4.json" 'j["usage"]["total_tokens"]') == $((np + sum)) ]] &&
		pass "n=4 ($name): usage counts the prompt once ($np) and every choice's tokens ($sum)" ||
		fail "n=4 ($name): usage" "$ntok vs $sum, prompt $np"
	st=$(post /v1/completions "{\"prompt\":\"$PROMPT\",\"max_tokens\":8,\"n\":3,\"temperature\":0}")
	got=$(texts "$TMP/r.json" text)
	post /v1/completions "{\"prompt\":\"$PROMPT\",\"max_tokens\":8,\"temperature\":0}" >/dev/null
	want=$(texts "$TMP/r.json" text)
	[[ $st == 200 && "$got" == "$want"$'\n'"$want"$'\n'"$want" ]] &&
		pass "n=3 ($name), temperature 0: three copies of the greedy text" ||
		fail "n=3 ($name) greedy" "$got vs $want"
	# chat, streamed and not: the same choices; chunks tagged with their index
	local body='{"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":6,"n":2,"seed":3'
	st=$(post /v1/chat/completions "$body}")
	want=$(texts "$TMP/r.json" chat)
	local nt
	nt=$(json_get "$TMP/r.json" 'j["usage"]["completion_tokens"]')
	curl -sN --max-time 120 -o "$TMP/s.txt" -d "$body,\"stream\":true}" "$URL/v1/chat/completions"
	got=$(/usr/bin/python3 - "$TMP/s.txt" "$nt" <<'PY'
import json, sys
ev = [l[6:].rstrip("\n") for l in open(sys.argv[1], encoding="utf-8") if l.startswith("data: ")]
bad = []
if ev[-1] != "[DONE]":
    bad.append("no [DONE] last")
chunks = [json.loads(e) for e in ev[:-1]]
text, fin, roles = {}, {}, {}
for k, c in enumerate(chunks):
    if len(c["choices"]) != 1:
        bad.append("a chunk with %d choices" % len(c["choices"]))
    ch = c["choices"][0]
    i = ch["index"]
    d = ch["delta"]
    roles[i] = roles.get(i, 0) + (d.get("role") == "assistant")
    text[i] = text.get(i, "") + (d.get("content") or "")
    if ch["finish_reason"]:
        fin[i] = fin.get(i, 0) + 1
    if "usage" in c and k != len(chunks) - 1:
        bad.append("usage before the last chunk")
if sorted(text) != [0, 1] or fin != {0: 1, 1: 1} or roles != {0: 1, 1: 1}:
    bad.append("indices %s finishes %s roles %s" % (sorted(text), fin, roles))
if chunks[-1].get("usage", {}).get("completion_tokens") != int(sys.argv[2]):
    bad.append("usage %s" % chunks[-1].get("usage"))
print("\n".join(repr(text.get(i, "")) for i in (0, 1)) if not bad else "BAD " + "; ".join(bad))
PY
)
	[[ $st == 200 && "$got" == "$want" ]] &&
		pass "chat n=2 ($name) streamed: chunks tagged 0 and 1 make the same texts, one finish and role each, usage last" ||
		fail "chat n=2 ($name) stream" "$got vs $want"
	for n in 0 9 '"2"'; do
		st=$(post /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"n\":$n}")
		[[ $st == 400 && $(json_get "$TMP/r.json" 'j["error"]["param"]') == n ]] || fail "n=$n ($name)" "$st"
	done
	pass "n=0, 9, \"2\" ($name): 400 naming n"
}

if start_server batch -m "$MODEL" --ctx 256 --chat-template chatml --parallel 4 -q; then
	n_checks batch
	stop_server batch
fi
if start_server serial -m "$MODEL" --ctx 256 --chat-template chatml --parallel 1 -q; then
	n_checks serial
	stop_server serial
fi
