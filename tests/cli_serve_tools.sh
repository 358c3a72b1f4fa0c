#!/usr/bin/env bash
# Tool calling through a real `egang serve` on loopback
# (tests/serve_tools_check.py makes the requests and prints the checks):
# the prompt of each tool conversation (tests/data/chat-tool-conversations.json)
# has the tokens of the Jinja rendering of the template the server uses;
# 400s naming the field; tool_choice "auto" answering with text; "required"
# and a named function giving one valid call (the generation constrained by
# the call's grammar), whole and streamed; a call and its result sent back.
# Servers: stories260K with the built-in ChatML (Hermes syntax; the
# reference is chatml.jinja with the generic lowering, which renders the
# same), and, with the real tokenizers (tools/tokenizers.sh; skipped when
# they cannot be fetched), one-layer random-weight models carrying the
# Qwen3 vocabulary and template (Hermes) and the Llama 3 vocabulary with
# the Llama 3.1 template (tests/data/chat-templates/llama3.1.jinja); and
# SmolLM2-135M-Instruct when tools/models.sh installed it (a required call
# asks about the city the user named).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
ROOT=$PWD
have_repo_models "serve stories260K with tools" || exit 0
/usr/bin/python3 -c 'import jinja2' 2>/dev/null ||
	{ skip serve-tools "python3-jinja2 is not installed (tools/deps.sh)"; exit 0; }

# serve_check NAME TEMPLATE BOS EOS [generic] -- SERVE-ARGS...
serve_check() {
	local name=$1 tmpl=$2 bos=$3 eos=$4 mode=$5
	shift 6
	if start_server "$name" "$@" --ctx 512 --parallel 2 -q; then
		/usr/bin/python3 tests/serve_tools_check.py "$URL" "$name" "$tmpl" "$bos" "$eos" $mode ||
			fail "$name: serve_tools_check.py exits 0"
		stop_server "$name"
	fi
}

serve_check stories-chatml "$ROOT/tests/data/chat-templates/chatml.jinja" "<s>" "</s>" "generic --small" -- \
	-m "$REPO_MODELS/stories260K.bin" -z "$REPO_MODELS/tok512.bin" --chat-template chatml

if TOK=$("$ROOT/tools/tokenizers.sh" 2>/dev/null); then
	"$EGANG" synth stories260k --layers 1 --type f32 -q --tokenizer "$TOK/qwen3/tokenizer.json" \
		--tokenizer-config "$TOK/qwen3/tokenizer_config.json" -o "$TMP/qwen3.gguf" &&
	/usr/bin/python3 -c "import json,sys; sys.stdout.write(json.load(open('$TOK/qwen3/tokenizer_config.json'))['chat_template'])" >"$TMP/qwen3.jinja" &&
		serve_check qwen3 "$TMP/qwen3.jinja" "" "<|im_end|>" tools -- -m "$TMP/qwen3.gguf" ||
		fail "qwen3: a model with the Qwen3 vocabulary and template"
	rm -f "$TMP/qwen3.gguf"
	# the Llama 3 vocabulary with the Llama 3.1 template in its config
	/usr/bin/python3 - "$TOK/llama3/tokenizer_config.json" "$ROOT/tests/data/chat-templates/llama3.1.jinja" \
		"$TMP/llama31_config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["chat_template"] = open(sys.argv[2]).read()
json.dump(c, open(sys.argv[3], "w"))
PY
	"$EGANG" synth stories260k --layers 1 --type f32 -q --tokenizer "$TOK/llama3/tokenizer.json" \
		--tokenizer-config "$TMP/llama31_config.json" -o "$TMP/llama31.gguf" &&
		serve_check llama31 "$ROOT/tests/data/chat-templates/llama3.1.jinja" "<|begin_of_text|>" "<|eot_id|>" tools -- \
			-m "$TMP/llama31.gguf" ||
		fail "llama31: a model with the Llama 3 vocabulary and the Llama 3.1 template"
	rm -f "$TMP/llama31.gguf"
else
	skip serve-tools-real "the real tokenizers could not be fetched (tools/tokenizers.sh)"
fi

# a real instruct model (SmolLM2-135M-Instruct, ChatML), when
# tools/models.sh installed it: a required call names the city asked about
SMOL=$(tools/models.sh --path smollm2-135m-instruct)
if [[ -f $SMOL ]]; then
	if start_server smollm2 -m "$SMOL" --ctx 2048 -q; then
		/usr/bin/python3 - "$URL" <<'PY'
import json, sys, urllib.request
body = {"messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        "tools": [{"type": "function", "function": {
            "name": "get_weather", "description": "Get the current weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 30}},
                           "required": ["city"]}}}],
        "tool_choice": "required", "max_tokens": 80, "temperature": 0}
req = urllib.request.Request(sys.argv[1] + "/v1/chat/completions", json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
r = json.load(urllib.request.urlopen(req, timeout=120))
c = r["choices"][0]
calls = c["message"].get("tool_calls") or [{}]
f = calls[0].get("function", {})
good = (c["finish_reason"] == "tool_calls" and f.get("name") == "get_weather" and
        "paris" in json.loads(f.get("arguments", "{}")).get("city", "").lower())
print(("PASS: smollm2: a required call asks get_weather about Paris" if good else
       "FAIL: smollm2: a required call asks get_weather about Paris (%s)" % json.dumps(r)[:400]))
PY
		stop_server smollm2
	fi
else
	skip smollm2-tools "SmolLM2-135M-Instruct is not installed (tools/models.sh smollm2-135m-instruct)"
fi
exit 0
