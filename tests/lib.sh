# Shared helpers of the shell tests: each check prints "PASS: name",
# "FAIL: name (why)" or "SKIP: name (why)"; tests/run.sh counts them.
# Python is /usr/bin/python3, Debian's, with the python3-* packages that
# tools/deps.sh installs (python3-jinja2): never a python3 found first on
# PATH (a pyenv or venv build with other site-packages and versions).
# The one exception is the `openai` client, not in Debian 12: the pinned
# venv of tools/pyclient.sh (tests/cli_openai.sh).
EGANG=${EGANG:-$(pwd)/egang}
# ../shared/models: the larger set of real models and reference outputs
MODELS=${EGANG_MODELS:-$(pwd)/../shared/models}
# models/: stories260K.bin and tok512.bin, in every clone (models/README.md)
REPO_MODELS=${EGANG_REPO_MODELS:-$(pwd)/models}
TMP=$(mktemp -d /tmp/egang-sh-XXXXXX)
SERVERS=()
# kills the servers start_server left running, removes $TMP; a test with
# its own EXIT trap calls it from there
lib_cleanup() {
	local p
	for p in "${SERVERS[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap lib_cleanup EXIT

pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1${2:+ ($2)}"; }
skip() { echo "SKIP: $1${2:+ ($2)}"; }

# check NAME CMD...: passes when CMD exits 0
check() {
	local name=$1; shift
	if "$@" >"$TMP/check.out" 2>&1; then pass "$name"; else
		fail "$name" "$(tail -3 "$TMP/check.out" | tr '\n' ' ')"; fi
}

# missing_model NAME WHY: SKIP for the named group, or FAIL under CI=true
# (CI has every model: a missing one there is a broken setup, not a skip).
missing_model() {
	if [[ ${CI:-} == true ]]; then fail "$1" "$2 (under CI)"
	else skip "$1" "$2"; fi
}

# have_models NAME: true when ../shared/models is there (the models beyond
# stories260K + tok512, the reference outputs); otherwise SKIP/FAIL as
# missing_model for the named group.
have_models() {
	if [[ -r $MODELS/stories260K.gguf && -d $MODELS/expected ]]; then return 0; fi
	missing_model "$1" "no $MODELS (a clone without ../shared)"
	return 1
}

# have_repo_models NAME: true when models/ holds stories260K.bin and
# tok512.bin (it always should: they are committed).
have_repo_models() {
	if [[ -r $REPO_MODELS/stories260K.bin && -r $REPO_MODELS/tok512.bin ]]; then return 0; fi
	fail "$1" "no $REPO_MODELS/stories260K.bin or tok512.bin (they are part of the repository)"
	return 1
}

# expect_exit NAME CODE PATTERN CMD...: CMD exits CODE and its stderr is one
# line matching PATTERN (extended regex).
expect_exit() {
	local name=$1 code=$2 pat=$3; shift 3
	"$@" >"$TMP/ee.out" 2>"$TMP/ee.err"
	local rc=$?
	local lines
	lines=$(wc -l <"$TMP/ee.err")
	if [[ $rc -ne $code ]]; then
		fail "$name" "exit $rc, expected $code: $(head -c 300 "$TMP/ee.err")"
	elif ! grep -Eq -- "$pat" "$TMP/ee.err"; then
		fail "$name" "stderr does not match /$pat/: $(head -c 300 "$TMP/ee.err")"
	elif [[ $code -ne 0 && $lines -ne 1 ]]; then
		fail "$name" "error is $lines lines, expected one: $(head -c 300 "$TMP/ee.err")"
	else
		pass "$name"
	fi
}

# gang_stat FILE FIELD: a number from the "gang: ..." line egang generate
# prints on stderr (FIELD: tokens, latch changes, joins, departures)
gang_stat() {
	sed -n '/^gang: /p' "$1" | grep -o "[0-9][0-9]* $2" | head -1 | cut -d' ' -f1
}

# ---- servers ----

# json_get FILE EXPR: prints a python expression over the parsed JSON `j`
# (Debian's python3), nothing when FILE is not JSON.
json_get() {
	/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null
}

# post PATH JSON [curl args...]: POSTs JSON to $URL$PATH (the server a test
# started), the body to $TMP/r.json; prints the status. POST_TIMEOUT (s,
# default 60) bounds it.
post() {
	local path=$1 body=$2; shift 2
	curl -s --max-time "${POST_TIMEOUT:-60}" -o "$TMP/r.json" -w '%{http_code}' \
		-H 'Content-Type: application/json' -d "$body" "$@" "$URL$path"
}

free_port() {
	/usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'
}

# start_server NAME ARGS...: `egang serve --port P ARGS...` in the
# background (stdout/stderr in $TMP/NAME.out/.err); sets SPID and URL,
# waits for /health (30 s). FAIL and status 1 if it does not come up.
# A port taken between free_port and the server's bind (another test
# running beside this one: tests/run.sh TEST_JOBS) is retried on another.
start_server() {
	local name=$1; shift
	local port try
	for try in 1 2 3; do
		port=$(free_port)
		"$EGANG" serve --port "$port" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
		SPID=$!
		SERVERS+=("$SPID")
		URL="http://127.0.0.1:$port"
		for _ in $(seq 150); do
			if curl -s --max-time 1 "$URL/health" >/dev/null 2>&1; then return 0; fi
			if ! kill -0 "$SPID" 2>/dev/null; then break; fi
			sleep 0.2
		done
		grep -q "cannot listen on" "$TMP/$name.err" || break
	done
	fail "$name: server did not come up" "$(head -c 300 "$TMP/$name.err")"
	return 1
}

# stop_server NAME: SIGTERM, then the exit status must be 0 within 20 s
stop_server() {
	local name=$1 rc
	kill -TERM "$SPID" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.2; done
	if kill -0 "$SPID" 2>/dev/null; then
		kill -9 "$SPID"; wait "$SPID" 2>/dev/null
		fail "$name: SIGTERM did not stop the server"
		return
	fi
	wait "$SPID"; rc=$?
	if [[ $rc -eq 0 ]]; then pass "$name: SIGTERM, exit 0"
	else fail "$name: exit $rc after SIGTERM" "$(tail -2 "$TMP/$name.err")"; fi
}

# synth_generates SHAPE TYPE N [SYNTH-FLAG...]: a one-layer synthetic SHAPE
# in TYPE (seed 3) is written, loads and samples N tokens; PASS or FAIL, the
# file removed
synth_generates() {
	local shape=$1 type=$2 n=$3 f=$TMP/$1-$2.gguf out rc
	shift 3
	if ! "$EGANG" synth "$shape" --type "$type" --layers 1 --seed 3 "$@" -o "$f" -q 2>"$TMP/err"; then
		fail "synth $shape $type" "$(cat "$TMP/err")"; return
	fi
	out=$("$EGANG" generate -m "$f" -n "$n" -p "Hello world" -t 0.7 -q 2>"$TMP/err")
	rc=$?
	if [[ $rc -eq 0 && -n $out ]]; then pass "synth $shape $type loads and generates"
	else fail "synth $shape $type loads and generates" "rc=$rc $(cat "$TMP/err")"; fi
	rm -f "$f"
}
