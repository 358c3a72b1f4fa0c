#!/usr/bin/env bash
# egang serve driven by the official `openai` Python client (its pinned
# venv: tools/pyclient.sh): a real server on loopback with the repository's
# stories260K, the chatml template, --parallel 2 and a key from
# --api-key-file; tests/openai_client.py makes the calls (models, chat and
# completions whole and streamed, seed, max_tokens, stop, logprobs,
# logit_bias, tools (a named and a required call, whole and streamed, the
# result sent back), the refused fields as BadRequestError, NotFoundError,
# AuthenticationError, streams closed early and a client timeout) and
# prints a PASS or FAIL line for each. Without the venv: SKIP, or FAIL
# under CI=true (.ci/run installs it first).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

if ! PY=$(tools/pyclient.sh --check 2>"$TMP/py.err"); then
	why="$(cat "$TMP/py.err")"
	if [[ ${CI:-} == true ]]; then fail "the openai client's venv" "$why (under CI)"
	else skip "the openai client" "$why"; fi
	exit 0
fi
have_repo_models "serve stories260K for the openai client" || exit 0

MODEL=$REPO_MODELS/stories260K.bin
TOK=$REPO_MODELS/tok512.bin
PROMPT="Once upon a time"
# the text without the newline `egang generate` ends it with
want=$("$EGANG" generate -m "$MODEL" -z "$TOK" --ctx 512 -p "$PROMPT" -n 24 -t 0 --no-echo -q \
	--cores 0 2>"$TMP/want.err")
printf '%s' "$want" >"$TMP/want.txt"
if [[ -z $want ]]; then
	fail "egang generate gives the greedy text" "$(head -c 300 "$TMP/want.err")"
	exit 0
fi
printf 'k-openai-test\n' >"$TMP/key"
if start_server openai -m "$MODEL" -z "$TOK" --chat-template chatml --ctx 512 \
	--parallel 2 --api-key-file "$TMP/key" -q; then
	"$PY" tests/openai_client.py "$URL" k-openai-test "$(basename "$MODEL")" \
		"$PROMPT" "$TMP/want.txt" 2>"$TMP/client.err"
	rc=$?
	[[ $rc -eq 0 ]] || fail "openai_client.py exits 0" "exit $rc: $(tail -3 "$TMP/client.err" | tr '\n' ' ')"
	stop_server openai
fi
exit 0
