#!/usr/bin/env bash
# Chat templates render as their Jinja source does (python3-jinja2, set up
# as transformers' apply_chat_template): for each template and each
# conversation of tests/data/chat-conversations.json and
# tests/data/chat-tool-conversations.json (tools, assistant tool_calls,
# tool results), `egang chat --render` must print the reference rendering
# byte for byte. Templates: ChatML, Llama 2 and Zephyr (as those models
# publish them), Qwen2.5 and Llama 3.1 (tool syntaxes of their own; the
# copies in llama.cpp's models/templates) in tests/data/chat-templates, on
# stories260K's vocabulary, and the Llama 3, Qwen3 and Gemma 3 templates
# of the real tokenizers (tools/tokenizers.sh; skipped when they cannot be
# fetched), each on a model carrying its vocabulary. A template without a
# tool syntax of its own renders the tool conversations as egang's generic
# fallback documents (chat_template_ref.py --generic-tools: the
# conversation lowered to plain turns, then the template).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
ROOT=$PWD
/usr/bin/python3 -c 'import jinja2' 2>/dev/null ||
	{ skip chat-templates "python3-jinja2 is not installed (tools/deps.sh)"; exit 0; }
DATA=$ROOT/tests/data
STORIES=$MODELS/stories260K.gguf
[[ -f $STORIES ]] || { missing_model chat-templates "no $STORIES"; exit 0; }
W=$TMP
/usr/bin/python3 - "$DATA/chat-conversations.json" "$DATA/chat-tool-conversations.json" "$W" <<'PY'
import json, sys
for prefix, path in (("c", sys.argv[1]), ("t", sys.argv[2])):
    for i, c in enumerate(json.load(open(path))):
        json.dump(c, open(f"{sys.argv[3]}/{prefix}{i}.json", "w"), ensure_ascii=False)
PY
checked=0 bad=0
bad() { fail "$@"; bad=$((bad + 1)); }
check() { # name model template-file bos eos tools|generic
	local name=$1 model=$2 tmpl=$3 bos=$4 eos=$5 tools=$6 c ref
	local generic=()
	[[ $tools == generic ]] && generic=(--generic-tools)
	rm -rf "$W/ref" && mkdir "$W/ref"
	/usr/bin/python3 "$ROOT/tests/chat_template_ref.py" --out-dir "$W/ref" "$tmpl" "$bos" "$eos" "$W"/c*.json 2>/dev/null &&
	/usr/bin/python3 "$ROOT/tests/chat_template_ref.py" "${generic[@]}" --out-dir "$W/ref" "$tmpl" "$bos" "$eos" "$W"/t*.json 2>/dev/null ||
		{ bad "chat-template-$name" "the reference renderer failed"; return; }
	for c in "$W"/c*.json "$W"/t*.json; do
		ref=$W/ref/$(basename "$c")
		"$EGANG" chat -m "$model" --chat-template-file "$tmpl" --render "$c" >"$W/got" 2>"$W/err"
		local grc=$?
		if [[ -f $ref.refused ]]; then # the template refuses this conversation
			[[ $grc -eq 2 ]] || bad "chat-template-$name" "$(basename "$c"): Jinja refuses it, egang exit $grc"
			continue
		fi
		[[ -f $ref.ref ]] || { bad "chat-template-$name" "$(basename "$c"): no reference rendering"; continue; }
		[[ $grc -eq 0 ]] || { bad "chat-template-$name" "$(basename "$c"): egang: $(cat "$W/err")"; continue; }
		if cmp -s "$ref.ref" "$W/got"; then
			checked=$((checked + 1))
		else
			bad "chat-template-$name" "$(basename "$c"): egang [$(head -c 300 "$W/got" | od -An -c | tr -s ' \n' ' ')] Jinja [$(head -c 300 "$ref.ref" | od -An -c | tr -s ' \n' ' ')]"
		fi
	done
}
for t in chatml llama2 zephyr; do
	check "$t" "$STORIES" "$DATA/chat-templates/$t.jinja" "<s>" "</s>" generic
done
for t in qwen2.5 llama3.1; do
	check "$t" "$STORIES" "$DATA/chat-templates/$t.jinja" "<s>" "</s>" tools
done
if TOK=$("$ROOT/tools/tokenizers.sh" 2>/dev/null); then
	for v in llama3 qwen3 gemma3; do
		/usr/bin/python3 -c "import json,sys; sys.stdout.write(json.load(open('$TOK/$v/tokenizer_config.json'))['chat_template'])" >"$W/$v.jinja"
		"$EGANG" synth stories260k --layers 1 --type f32 -q --tokenizer "$TOK/$v/tokenizer.json" \
			--tokenizer-config "$TOK/$v/tokenizer_config.json" -o "$W/$v.gguf" ||
			{ bad "chat-template-$v" "synth failed"; continue; }
		read -r bos eos < <(/usr/bin/python3 -c "
import json; c=json.load(open('$TOK/$v/tokenizer_config.json'))
g=lambda k: (c.get(k) or {}).get('content', '') if isinstance(c.get(k), dict) else (c.get(k) or '')
print(g('bos_token') or '-', g('eos_token') or '-')")
		[[ $bos == - ]] && bos=""
		tools=generic
		[[ $v == qwen3 ]] && tools=tools
		check "$v" "$W/$v.gguf" "$W/$v.jinja" "$bos" "$eos" $tools
		rm -f "$W/$v.gguf"
	done
else
	skip chat-template-real "the real tokenizers could not be fetched (tools/tokenizers.sh)"
fi
echo "$checked renderings equal to Jinja's"
[[ $bad -eq 0 ]] && pass "chat-templates ($checked renderings)"
