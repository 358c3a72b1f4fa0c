# Shared helpers of the shell tests: each check prints "PASS: name",
# "FAIL: name (why)" or "SKIP: name (why)"; tests/run.sh counts them.
EGANG=${EGANG:-$(pwd)/egang}
MODELS=${EGANG_MODELS:-$(pwd)/../shared/models}
TMP=$(mktemp -d /tmp/egang-sh-XXXXXX)
trap 'rm -rf "$TMP"' EXIT

pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1${2:+ ($2)}"; }
skip() { echo "SKIP: $1${2:+ ($2)}"; }

# check NAME CMD...: passes when CMD exits 0
check() {
	local name=$1; shift
	if "$@" >"$TMP/check.out" 2>&1; then pass "$name"; else
		fail "$name" "$(tail -3 "$TMP/check.out" | tr '\n' ' ')"; fi
}

# have_models: true when ../shared/models is there; otherwise prints SKIP
# (or FAIL under CI=true) for the named group.
have_models() {
	if [[ -r $MODELS/stories260K.bin ]]; then return 0; fi
	if [[ ${CI:-} == true ]]; then fail "$1" "no models in $MODELS under CI"
	else skip "$1" "no $MODELS (a clone without ../shared)"; fi
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
