#!/usr/bin/env bash
# egang serve's output constraints end to end, on a real server: llama.cpp's
# `json_schema` and `grammar` fields and OpenAI's `response_format`
# (json_schema, json_object), on /v1/completions and /v1/chat/completions,
# plain and streamed, one job at a time (--parallel 1) and batched
# (--parallel 2, a constrained and an unconstrained request in one batch).
# Every reply is parsed as JSON and checked against its schema
# (tests/json_validate.py: by hand, Debian 12 has no python3-jsonschema by
# default). Bad constraints are 400s naming the field and where (grammar
# line and column, schema path); a grammar that admits no token ends the
# request with an error. The robustness claim: on a synthetic model with
# random weights (`egang synth`), at temperature 0 and 1, a schema's
# bounded grammar still completes valid JSON within max_tokens.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

POST_TIMEOUT=120 # json_get and post: tests/lib.sh
# the text of a reply (completions or chat), streamed (SSE) or not
reply_text() {
	/usr/bin/python3 - "$1" <<'PY'
import json, sys
raw = open(sys.argv[1], encoding="utf-8").read()
if raw.startswith("data: "):
    out = []
    for line in raw.splitlines():
        if line.startswith("data: {"):
            c = json.loads(line[6:])["choices"][0]
            out.append(c.get("text") or (c.get("delta") or {}).get("content") or "")
    sys.stdout.write("".join(out))
else:
    c = json.loads(raw)["choices"][0]
    sys.stdout.write(c["text"] if "text" in c else c["message"]["content"])
PY
}
finish() { json_get "$TMP/r.json" 'j["choices"][0]["finish_reason"]'; }
# valid NAME SCHEMA_FILE: the last reply (in $TMP/r.json) ended with "stop"
# and its text is JSON valid under the schema
valid() {
	local name=$1 schema=$2 text v fr
	text=$(reply_text "$TMP/r.json")
	v=$(/usr/bin/python3 tests/json_validate.py "$schema" "$text")
	fr=$(finish)
	if [[ $v == ok && $fr == stop ]]; then pass "$name"
	else fail "$name" "finish $fr, $v: $(head -c 200 <<<"$text")"; fi
}

have_repo_models "serve with grammars" || exit 0
MODEL=$REPO_MODELS/stories260K.bin
TOK=$REPO_MODELS/tok512.bin

cat >"$TMP/person.json" <<'EOF'
{"type": "object",
 "properties": {"name": {"type": "string", "maxLength": 16},
                "age": {"type": "integer"},
                "pet": {"enum": ["cat", "dog", "bird"]}},
 "required": ["name", "age", "pet"], "additionalProperties": false}
EOF
cat >"$TMP/nested.json" <<'EOF'
{"type": "object",
 "properties": {"user": {"type": "object",
                         "properties": {"id": {"type": "integer"},
                                        "born": {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}$"},
                                        "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3}},
                         "required": ["id", "born", "tags"]},
                "ok": {"type": "boolean"}},
 "required": ["user", "ok"]}
EOF
echo '{"type": "object"}' >"$TMP/object.json"
"$EGANG" grammar from-schema "$TMP/object.json" >"$TMP/object.gbnf"
PERSON=$(tr -d '\n' <"$TMP/person.json")
NESTED=$(tr -d '\n' <"$TMP/nested.json")
CHAT='"messages":[{"role":"user","content":"Tell me about a cat."}]'

# the checks every server runs; $1 names the server in the messages
constrained_checks() {
	local s=$1 st seed m
	st=$(post /v1/completions "{\"prompt\":\"Once upon a time\",\"max_tokens\":300,\"temperature\":0,\"json_schema\":$PERSON}")
	[[ $st == 200 ]] && valid "$s: completions json_schema (greedy): valid JSON" "$TMP/person.json" || fail "$s: completions json_schema" "$st $(head -c 200 "$TMP/r.json")"
	for seed in 1 2 3; do
		st=$(post /v1/chat/completions "{$CHAT,\"max_tokens\":400,\"temperature\":1,\"seed\":$seed,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"n\",\"strict\":true,\"schema\":$NESTED}}}")
		[[ $st == 200 ]] && valid "$s: chat response_format json_schema, 2 levels (seed $seed)" "$TMP/nested.json" || fail "$s: chat json_schema seed $seed" "$st $(head -c 200 "$TMP/r.json")"
	done
	# json_object: any object (free-form strings up to 256 characters): a
	# complete object, or at max_tokens a text the grammar still accepts as
	# a beginning (stories260K writes long strings)
	for t in 0 1; do
		st=$(post /v1/chat/completions "{$CHAT,\"max_tokens\":480,\"temperature\":$t,\"seed\":4,\"response_format\":{\"type\":\"json_object\"}}")
		if [[ $st == 200 && $(finish) == stop ]]; then
			valid "$s: chat response_format json_object (temperature $t): a JSON object" "$TMP/object.json"
		else
			reply_text "$TMP/r.json" >"$TMP/obj.txt"
			m=$("$EGANG" grammar match "$TMP/object.gbnf" "$TMP/obj.txt")
			[[ $st == 200 && $(finish) == length && $m == prefix:* ]] && pass "$s: json_object (temperature $t) at max_tokens: the beginning of an object ($m)" ||
				fail "$s: json_object t $t" "$st $(finish) $m $(head -c 200 "$TMP/r.json")"
		fi
	done
	st=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":8,"temperature":0,"grammar":"root ::= (\"yes\" | \"no\") \".\""}')
	m=$(reply_text "$TMP/r.json")
	[[ $st == 200 && ($m == yes. || $m == no.) && $(finish) == stop ]] && pass "$s: grammar field: '$m'" || fail "$s: grammar field" "$st '$m'"
	curl -sN --max-time 120 -o "$TMP/r.json" -d "{$CHAT,\"max_tokens\":300,\"temperature\":0,\"stream\":true,\"json_schema\":$PERSON}" "$URL/v1/chat/completions"
	m=$(/usr/bin/python3 tests/json_validate.py "$TMP/person.json" "$(reply_text "$TMP/r.json")")
	[[ $m == ok && $(grep '^data: ' "$TMP/r.json" | tail -1) == "data: [DONE]" ]] && pass "$s: streamed chat json_schema: the deltas make valid JSON" || fail "$s: streamed json_schema" "$m"
	# a grammar that no token can follow: an error, never a hang
	st=$(post /v1/completions '{"prompt":"Once","max_tokens":8,"grammar":"root ::= \"\\u0001\""}')
	m=$(json_get "$TMP/r.json" 'j["error"]["message"]')
	[[ $st -ge 400 && $m == *grammar* ]] && pass "$s: a grammar that admits no token: $st naming it" || fail "$s: stuck grammar" "$st $(head -c 200 "$TMP/r.json")"
	curl -sN --max-time 60 -o "$TMP/r.json" -d '{"prompt":"Once","max_tokens":8,"stream":true,"grammar":"root ::= \"\\u0001\""}' "$URL/v1/completions"
	grep -q '"error"' "$TMP/r.json" && grep -qi grammar "$TMP/r.json" && pass "$s: streamed, an error event naming the grammar" || fail "$s: stuck grammar streamed" "$(head -c 200 "$TMP/r.json")"
}

# the 400s (the server's parallelism does not matter)
error_checks() {
	local st got
	st=$(post /v1/completions '{"prompt":"a","grammar":"root ::= \"a\"\nx ::= (\"b\""}')
	got=$(json_get "$TMP/r.json" 'j["error"]["type"]+"|"+j["error"]["param"]+"|"+j["error"]["message"]')
	[[ $st == 400 && $got == "invalid_request_error|grammar|"*"line 2, column"* ]] && pass "a malformed grammar: 400 with its line and column" || fail "malformed grammar" "$st $got"
	st=$(post /v1/chat/completions "{$CHAT,\"json_schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"maximum\":3}}}}")
	got=$(json_get "$TMP/r.json" 'j["error"]["param"]+"|"+j["error"]["message"]')
	[[ $st == 400 && $got == "json_schema|"*"#/properties/a/maximum"*maximum* ]] && pass "an unsupported schema keyword: 400 with its path" || fail "unsupported keyword" "$st $got"
	st=$(post /v1/chat/completions "{$CHAT,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"type\":\"string\",\"pattern\":\"^a(?!b)$\"}}}}")
	got=$(json_get "$TMP/r.json" 'j["error"]["param"]+"|"+j["error"]["message"]')
	[[ $st == 400 && $got == "response_format|"*"#/pattern"* ]] && pass "an untranslatable pattern in response_format: 400 with its path" || fail "pattern" "$st $got"
	st=$(post /v1/chat/completions "{$CHAT,\"response_format\":{\"type\":\"yaml\"}}")
	[[ $st == 400 && $(json_get "$TMP/r.json" 'j["error"]["param"]') == response_format ]] && pass "response_format type yaml: 400" || fail "response_format yaml" "$st"
	st=$(post /v1/chat/completions "{$CHAT,\"grammar\":\"root ::= \\\"a\\\"\",\"json_schema\":{\"type\":\"integer\"}}")
	got=$(json_get "$TMP/r.json" 'j["error"]["param"]+"|"+j["error"]["message"]')
	[[ $st == 400 && $got == "json_schema|"*"both constrain"* ]] && pass "two constraints at once: 400" || fail "two constraints" "$st $got"
}

for par in 1 2; do
	if start_server "p$par" -m "$MODEL" -z "$TOK" --chat-template chatml --ctx 512 --parallel "$par" --cores 0 -q; then
		constrained_checks "parallel $par"
		if ((par == 1)); then error_checks; fi
		if ((par == 2)); then
			# a constrained and an unconstrained request at once (one batch):
			# the unconstrained text is the one it gets alone
			post /v1/completions '{"prompt":"Once upon a time","max_tokens":40,"temperature":0}' >/dev/null
			alone=$(reply_text "$TMP/r.json")
			curl -s --max-time 120 -o "$TMP/c.json" -H 'Content-Type: application/json' \
				-d "{\"prompt\":\"Once upon a time\",\"max_tokens\":300,\"temperature\":0,\"json_schema\":$PERSON}" "$URL/v1/completions" &
			cpid=$!
			post /v1/completions '{"prompt":"Once upon a time","max_tokens":40,"temperature":0}' >/dev/null
			both=$(reply_text "$TMP/r.json")
			wait "$cpid"
			cp "$TMP/c.json" "$TMP/r.json"
			[[ -n $alone && $both == "$alone" ]] && pass "batched beside a constrained request, an unconstrained one is unchanged" || fail "batch beside constrained" "'$both' vs '$alone'"
			valid "batched: the constrained one is valid JSON" "$TMP/person.json"
		fi
		stop_server "p$par"
	fi
done

# the robustness claim: random weights, bounded schemas
if "$EGANG" synth smollm-135m --layers 1 --vocab 1024 --type q8_0 --seed 7 -o "$TMP/rand.gguf" -q 2>"$TMP/synth.err"; then
	if start_server rand -m "$TMP/rand.gguf" --ctx 1024 --parallel 2 --cores 0 -q; then
		for t in 0 1; do
			for seed in 1 2; do
				st=$(post /v1/completions "{\"prompt\":\"Hello\",\"max_tokens\":400,\"temperature\":$t,\"seed\":$seed,\"json_schema\":$NESTED}")
				[[ $st == 200 ]] && valid "random weights, 2-level schema, temperature $t seed $seed: valid within 400 tokens" "$TMP/nested.json" ||
					fail "random weights t $t seed $seed" "$st $(head -c 200 "$TMP/r.json")"
			done
		done
		st=$(post /v1/completions "{\"prompt\":\"Hello\",\"max_tokens\":300,\"temperature\":1,\"seed\":3,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"p\",\"schema\":$PERSON}}}")
		[[ $st == 200 ]] && valid "random weights, response_format json_schema: valid" "$TMP/person.json" || fail "random weights response_format" "$st"
		stop_server rand
	fi
else
	fail "egang synth" "$(cat "$TMP/synth.err")"
fi
