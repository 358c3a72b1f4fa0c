#!/usr/bin/env bash
# No request field silently ignored (issue 32): tests/serve_fields.py sends
# every field of OpenAI's chat/completions and completions requests, and
# every field `egang serve --help` lists, one at a time with a value other
# than its default, to a real server on loopback; each answer is a 200
# with the field's effect (where the test can see it) when the help says
# the field is implemented, else a 400 unsupported_parameter naming it.
# The accepted set comes from the help, so the test follows the table.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

# stories260K as the repository carries it (llama2.c weights and its
# 512-token vocabulary): real weights in every clone, with or without
# ../shared
have_repo_models "serve fields with stories260K" || exit 0
"$EGANG" serve --help >"$TMP/help" 2>&1
if start_server fields -m "$REPO_MODELS/stories260K.bin" -z "$REPO_MODELS/tok512.bin" \
	--ctx 512 --chat-template chatml -q; then
	/usr/bin/python3 tests/serve_fields.py "$URL" "$TMP/help" 2>&1 |
		sed 's/^Traceback/FAIL: serve_fields.py: Traceback/'
	stop_server fields
fi
