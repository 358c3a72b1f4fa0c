#!/usr/bin/env bash
# egang serve's API key from each of its sources: --api-key, the first
# line of --api-key-file (kept out of /proc/PID/cmdline), the environment
# variable EGANG_API_KEY. A flag wins over the variable; both flags, an
# empty key, a key with a control byte or over 4096 bytes, and a file that
# cannot be read are refused with one line and exit 2, before the model is
# opened (so `-m x` names no file). A served key: 401 without it or with
# another, 200 with it, /health open.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

# ---- refused, before the model (-m x does not exist) ----
K=$TMP/key
printf 'k1\n' >"$K"
expect_exit "--api-key and --api-key-file together" 2 \
	"^egang: error: serve: --api-key and --api-key-file both give the API key; pass one$" \
	"$EGANG" serve -m x --api-key k0 --api-key-file "$K"
expect_exit "--api-key-file missing" 2 \
	"^egang: error: serve: --api-key-file $TMP/none: No such file or directory$" \
	"$EGANG" serve -m x --api-key-file "$TMP/none"
expect_exit "--api-key-file a directory" 2 \
	"^egang: error: serve: --api-key-file $TMP: Is a directory$" \
	"$EGANG" serve -m x --api-key-file "$TMP"
: >"$TMP/empty"
expect_exit "--api-key-file empty" 2 "^egang: error: serve: --api-key-file $TMP/empty: the file is empty$" \
	"$EGANG" serve -m x --api-key-file "$TMP/empty"
printf '\nk2\n' >"$TMP/blank"
expect_exit "--api-key-file with an empty first line" 2 \
	"^egang: error: serve: --api-key-file: the API key is empty$" \
	"$EGANG" serve -m x --api-key-file "$TMP/blank"
printf '\r\n' >"$TMP/cr"
expect_exit "--api-key-file with a CR alone" 2 "--api-key-file: the API key is empty$" \
	"$EGANG" serve -m x --api-key-file "$TMP/cr"
printf 'ab\tc\n' >"$TMP/tab"
expect_exit "--api-key-file with a control byte" 2 \
	"--api-key-file: the API key has the control byte 0x09 at offset 2$" \
	"$EGANG" serve -m x --api-key-file "$TMP/tab"
printf 'ab\0cd\n' >"$TMP/nul"
expect_exit "--api-key-file with a NUL byte" 2 "control byte 0x00 at offset 2$" \
	"$EGANG" serve -m x --api-key-file "$TMP/nul"
head -c 5000 /dev/zero | tr '\0' a >"$TMP/long"
expect_exit "--api-key-file with a 5000-byte line" 2 "--api-key-file: the API key is over 4096 bytes$" \
	"$EGANG" serve -m x --api-key-file "$TMP/long"
expect_exit "--api-key-file /dev/zero (reads no further than a key)" 2 "the API key is over 4096 bytes$" \
	"$EGANG" serve -m x --api-key-file /dev/zero
if [[ $(id -u) -ne 0 ]]; then
	printf 'k3\n' >"$TMP/closed"
	chmod 000 "$TMP/closed"
	expect_exit "--api-key-file unreadable" 2 "--api-key-file $TMP/closed: Permission denied$" \
		"$EGANG" serve -m x --api-key-file "$TMP/closed"
else
	skip "--api-key-file unreadable" "root reads any file"
fi
expect_exit "--api-key-file whose read fails (/proc/self/mem)" 2 \
	"^egang: error: serve: --api-key-file /proc/self/mem: Input/output error$" \
	"$EGANG" serve -m x --api-key-file /proc/self/mem
expect_exit "--api-key empty" 2 "^egang: error: --api-key: the value is empty$" \
	"$EGANG" serve -m x --api-key ""
expect_exit "EGANG_API_KEY empty" 2 "^egang: error: serve: EGANG_API_KEY: the API key is empty$" \
	env EGANG_API_KEY= "$EGANG" serve -m x
expect_exit "EGANG_API_KEY with a newline" 2 "EGANG_API_KEY: the API key has the control byte 0x0a" \
	env EGANG_API_KEY=$'k\n' "$EGANG" serve -m x
# a good key gets as far as the model
expect_exit "a good --api-key-file, then the model is opened" 2 "x: No such file" \
	"$EGANG" serve -m x --api-key-file "$K"

# ---- served ----
if have_models "API keys from a file and the environment"; then
	MODEL=$MODELS/stories260K.gguf
else
	MODEL=$TMP/stories.gguf
	"$EGANG" synth stories260k --type f32 -o "$MODEL" >/dev/null 2>&1
fi
# status KEY: the status of a completion sent with 'Bearer KEY' ("" none)
status() {
	curl -s --max-time 30 -o /dev/null -w '%{http_code}' ${1:+-H "Authorization: Bearer $1"} \
		-d '{"prompt":"a","max_tokens":1}' "$URL/v1/completions"
}
# served NAME GOOD BAD...: GOOD opens the completions, each BAD and none
# get 401, /health answers without a key; then the server stops
served() {
	local name=$1 good=$2 got want b
	shift 2
	got="$(status "$good")"
	want=200
	for b in "" "$@"; do got+=" $(status "$b")"; want+=" 401"; done
	got+=" $(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$URL/health")"
	want+=" 200"
	[[ $got == "$want" ]] && pass "$name" || fail "$name" "statuses $got, want $want"
	stop_server "$name"
}
printf 'from-file\r\nsecond-line\n' >"$TMP/crlf"
if start_server file -m "$MODEL" --ctx 32 --api-key-file "$TMP/crlf" -q; then
	if tr '\0' ' ' <"/proc/$SPID/cmdline" | grep -q from-file; then
		fail "--api-key-file: the key is not in /proc/PID/cmdline"
	else pass "--api-key-file: the key is not in /proc/PID/cmdline"; fi
	served "--api-key-file: the first line, CR LF stripped" from-file "from-file$(printf '\r')" second-line
fi
if EGANG_API_KEY=from-env start_server env -m "$MODEL" --ctx 32 -q; then
	served "EGANG_API_KEY" from-env wrong
fi
if EGANG_API_KEY=from-env start_server both -m "$MODEL" --ctx 32 --api-key-file "$K" -q; then
	served "--api-key-file wins over EGANG_API_KEY" k1 from-env
fi
if EGANG_API_KEY=from-env start_server flag -m "$MODEL" --ctx 32 --api-key from-flag -q; then
	served "--api-key wins over EGANG_API_KEY" from-flag from-env
fi
