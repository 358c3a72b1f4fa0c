#!/usr/bin/env bash
# egang serve --parallel N (continuous batching, server/sched_batch.c) end to end,
# a real server on a loopback port and real HTTP clients:
#  - batch invariance: every request's per-position logits hashes
#    (EGANG_SERVE_LOGITS_DIR) are the same bits when it runs alone and when
#    it runs with up to 7 others that join and leave at random steps, on
#    synthetic f32, q8_0, q4_0 and q4_k_m models, on 2 cores (the gang's
#    membership changes as it goes), half of them with logit_bias, the
#    penalties and min_p; the prefix cache serves the repeats;
#  - the lone request equals `egang generate` (greedy);
#  - the KV budget: requests that do not fit wait and complete, a prompt
#    over the budget gets 400; /metrics has the batch families;
#  - faults: clients that disconnect mid-prefill, 200 clients at once (200
#    or 429, the server answers afterwards), requests that end at
#    max_tokens while others join; the other streams are unchanged.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

# clients.py URL OUTDIR [--serial] SPEC...: one thread per SPEC
# "name:delay_s:max_tokens:seed:prompt" posting a completion after delay
# (a name ending in "s" adds logit_bias, the penalties and min_p) (--serial:
# one after the other, in one thread); OUTDIR/name.json gets the
# reply, OUTDIR/name.status the status, OUTDIR/name.id the completion's id.
# (One python for many requests: a python start costs more than a request.)
cat >"$TMP/clients.py" <<'PY'
import json, sys, threading, time, urllib.request, urllib.error
url, out = sys.argv[1], sys.argv[2]
def run(spec):
    name, delay, mt, seed, prompt = spec.split(":", 4)
    time.sleep(float(delay))
    req = {"prompt": prompt, "max_tokens": int(mt), "temperature": 0.9, "seed": int(seed)}
    if name.endswith("s"): # the logits processing fields too (sampler.h)
        req.update(presence_penalty=0.7, frequency_penalty=0.4, repetition_penalty=1.3,
                   repeat_last_n=16, min_p=0.02, logit_bias={"7": 3, "11": -100, "400": -2.5})
    body = json.dumps(req).encode()
    req = urllib.request.Request(url + "/v1/completions", body,
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            st, data = r.status, r.read()
    except urllib.error.HTTPError as e:
        st, data = e.code, e.read()
    except Exception as e:
        st, data = 0, str(e).encode()
    open(f"{out}/{name}.json", "wb").write(data)
    open(f"{out}/{name}.status", "w").write(f"{st}\n")
    try:
        open(f"{out}/{name}.id", "w").write(json.loads(data)["id"] + "\n")
    except Exception:
        pass
specs = sys.argv[3:]
if specs[:1] == ["--serial"]:
    for s in specs[1:]: run(s)
    sys.exit(0)
ts = [threading.Thread(target=run, args=(s,)) for s in specs]
for t in ts: t.start()
for t in ts: t.join()
PY

# hash_of DIR NAME: the hash file of the reply OUTDIR/NAME.json
hash_of() {
	local id=""
	[[ -s $1/$2.id ]] && id=$(<"$1/$2.id")
	echo "$HDIR/$id.hash"
}

PROMPTS=("Once upon a time" "the quick brown fox jumps over the lazy dog and"
	"a b c d e f g h i j k l m n o p q r s t u v w x y z" "hello"
	"In the beginning there was nothing but a long and winding road that went on"
	"Tell me a story" "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24"
	"The cat sat")
NP=${#PROMPTS[@]}
COMPARED=0

# pname I: request I's name; the odd ones carry the logits processing
# fields, so their sampled tokens (in the hash files) go through them
pname() { if (( $1 % 2 )); then echo "p$1s"; else echo "p$1"; fi; }

# invariance TYPE [MODEL [KV]]: the per-request hashes alone vs in random
# batches (MODEL: a file instead of a synthetic TYPE; KV: --kv-type, none:
# the default)
invariance() {
	local type=$1 m=${2:-$TMP/inv-$1.gguf} kvopt=()
	[[ -n ${2:-} ]] || "$EGANG" synth smollm-135m --layers 2 --vocab 4096 --type "$type" --seed 9 -o "$m" -q
	if [[ -n ${3-} ]]; then kvopt=(--kv-type "$3"); type="$type-kv-$3"; fi
	HDIR=$TMP/h-$type; mkdir -p "$HDIR"
	EGANG_SERVE_LOGITS_DIR=$HDIR start_server "inv-$type" -m "$m" --ctx 256 --cores 0-1 \
		--parallel 4 --prefill-chunk 8 "${kvopt[@]}" -q || return
	local i r specs bad=0 n=0
	mkdir -p "$TMP/alone-$type"
	specs=()
	for ((i = 0; i < NP; i++)); do # alone, one after the other
		specs+=("$(pname $i):0:$((8 + i * 3)):$((i + 1)):${PROMPTS[$i]}")
	done
	/usr/bin/python3 "$TMP/clients.py" "$URL" "$TMP/alone-$type" --serial "${specs[@]}"
	for r in 1 2; do # together, joining at random times
		mkdir -p "$TMP/b$r-$type"
		specs=()
		for ((i = 0; i < NP; i++)); do
			specs+=("$(pname $i):0.$((RANDOM % 30)):$((8 + i * 3)):$((i + 1)):${PROMPTS[$i]}")
		done
		/usr/bin/python3 "$TMP/clients.py" "$URL" "$TMP/b$r-$type" "${specs[@]}"
		for ((i = 0; i < NP; i++)); do
			local a b
			a=$(hash_of "$TMP/alone-$type" "$(pname $i)"); b=$(hash_of "$TMP/b$r-$type" "$(pname $i)")
			if [[ -s $a && -s $b ]] && cmp -s "$a" "$b"; then
				n=$((n + $(wc -l <"$a")))
			else
				bad=$((bad + 1))
			fi
		done
	done
	COMPARED=$((COMPARED + n))
	local hits
	hits=$(curl -s "$URL/metrics" | sed -n 's/^egang_prefix_cache_hits_total //p')
	if [[ $bad -eq 0 && $n -gt 0 ]]; then pass "$type: logits of 8 requests alone = in random batches ($n positions)"
	else fail "$type: batch invariance" "$bad requests differ"; fi
	if [[ ${hits:-0} -ge 1 ]]; then pass "$type: prefix cache hits ($hits)"
	else fail "$type: prefix cache hits" "${hits:-none}"; fi
	stop_server "inv-$type"
}

for type in ${INV_TYPES-f32 q8_0 q4_0 q4_k_m}; do invariance $type; done
# a real model too: the random weights' logits are so far apart that the
# penalties and min_p change no token there; stories260K's are not
if have_models "batch invariance with the sampler's fields on stories260K"; then
	invariance stories260K "$MODELS/stories260K.gguf"
fi
# the other KV cache types (above: the default f16)
for kv in ${INV_KVS-f32 q8_0}; do invariance q4_0 "" $kv; done
echo "batch invariance: $COMPARED logits positions compared"

# ---- the lone request is `egang generate`'s, the metrics ----
M=$TMP/inv-q8_0.gguf
[[ -f $M ]] || "$EGANG" synth smollm-135m --layers 2 --vocab 4096 --type q8_0 --seed 9 -o "$M" -q
if start_server par -m "$M" --ctx 256 --cores 0-1 --parallel 4 -q; then
	want=$("$EGANG" generate -m "$M" --ctx 256 -p "Once upon a time" -n 16 -t 0 --no-echo -q --cores 0 2>/dev/null)
	got=$(curl -s -d '{"prompt":"Once upon a time","max_tokens":16,"temperature":0}' "$URL/v1/completions" |
		/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["text"])')
	if [[ -n $want && "$got" == "$want" ]]; then pass "--parallel 4: greedy completion equals egang generate"
	else fail "--parallel 4 greedy" "'$got' vs '$want'"; fi
	curl -s "$URL/metrics" >"$TMP/m.txt"
	ok=1
	for fam in egang_batch_size_bucket egang_queue_wait_seconds_count egang_kv_bytes_in_use \
		egang_kv_bytes_budget egang_prefix_cache_hits_total egang_prefix_cache_tokens_saved_total; do
		grep -q "^$fam" "$TMP/m.txt" || { ok=0; echo "  no $fam"; }
	done
	[[ $ok -eq 1 ]] && pass "/metrics: batch size, queue wait, KV in use, prefix cache" || fail "/metrics batch families"

	# bench serve --vary twice against this server: the second run sends
	# its own prompts, not the first run's again, so its 4 requests reuse
	# at most their first few tokens (BOS, the tag's) of a ~50-token prompt
	long=$(for i in 1 2 3 4 5 6 7 8; do printf 'the cat sat on the mat '; done)
	saved=()
	for r in 1 2; do
		"$EGANG" bench serve --url "$URL" --clients 2 --requests 4 --seconds 60 \
			--max-tokens 2 --prompt "$long" --vary >"$TMP/vary$r.out" 2>&1
		saved+=("$(curl -s "$URL/metrics" | sed -n 's/^egang_prefix_cache_tokens_saved_total //p')")
	done
	if [[ -n ${saved[0]} && -n ${saved[1]} && $((saved[1] - saved[0])) -lt 40 ]] &&
		grep -q ' ok 4 ' "$TMP/vary1.out" && grep -q ' ok 4 ' "$TMP/vary2.out"
	then pass "bench serve --vary: a second run reuses no prompt of the first (tokens saved ${saved[0]} -> ${saved[1]})"
	else fail "bench serve --vary across runs" "tokens saved ${saved[*]}; $(cat "$TMP"/vary?.out)"; fi

	# 200 clients at once: each 200 or 429, and the server answers after
	specs=()
	for ((i = 0; i < 200; i++)); do specs+=("c$i:0:4:$i:client $i says"); done
	mkdir -p "$TMP/many"
	/usr/bin/python3 "$TMP/clients.py" "$URL" "$TMP/many" "${specs[@]}"
	n200=$(cat "$TMP"/many/*.status | grep -c '^200$'); n429=$(cat "$TMP"/many/*.status | grep -c '^429$')
	if [[ $((n200 + n429)) -eq 200 && $n200 -ge 4 ]]; then pass "200 clients at once: $n200 x 200, $n429 x 429"
	else fail "200 clients at once" "200: $n200, 429: $n429"; fi
	st=$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")
	[[ $st == 200 ]] && pass "the server answers after 200 clients" || fail "health after 200 clients" "$st"
	stop_server par
fi

# ---- faults under load: disconnects mid-prefill, max_tokens as others join ----
HDIR=$TMP/h-fault; mkdir -p "$HDIR"
LONG=$(for i in $(seq 1 120); do printf "word%d " $i; done)
if EGANG_SERVE_LOGITS_DIR=$HDIR start_server fault -m "$M" --ctx 1024 --cores 0-1 --parallel 4 \
	--prefill-chunk 1 -q; then
	mkdir -p "$TMP/fa" "$TMP/fb"
	/usr/bin/python3 "$TMP/clients.py" "$URL" "$TMP/fa" "s:0:40:7:The story goes"
	# the same request again while short ones end at max_tokens 1..3 as
	# others join, and streaming clients with long prompts go away
	specs=("s:0.2:40:7:The story goes")
	for i in 1 2 3 4 5 6; do specs+=("m$i:0.$((i * 7)):$((i % 3 + 1)):$i:short $i"); done
	gone=()
	for i in 1 2 3; do
		curl -s --max-time 0.$((i + 1)) -d "{\"prompt\":\"$LONG\",\"max_tokens\":200}" \
			-w "%{http_code}\n" -o "$TMP/gone$i.json" "$URL/v1/completions" >"$TMP/gone$i.st" 2>&1 &
		gone+=($!)
	done
	/usr/bin/python3 "$TMP/clients.py" "$URL" "$TMP/fb" "${specs[@]}"
	wait "${gone[@]}"
	a=$(hash_of "$TMP/fa" s); b=$(hash_of "$TMP/fb" s)
	if [[ -s $a ]] && cmp -s "$a" "$b"; then pass "a stream is unchanged by disconnects and max_tokens ends around it"
	else fail "stream under faults" "$a $b"; fi
	ok=1
	for i in 1 2 3 4 5 6; do [[ $(cat "$TMP/fb/m$i.status") == 200 ]] || ok=0; done
	[[ $ok -eq 1 ]] && pass "requests ending at max_tokens as others join: all 200" || fail "max_tokens requests"
	sleep 1
	c=$(curl -s "$URL/metrics" | sed -n 's/^egang_generations_cancelled_total //p')
	if [[ ${c:-0} -ge 1 ]]; then pass "clients gone mid-prefill are cancelled ($c)"
	else fail "cancel mid-prefill" "${c:-none} $(cat "$TMP"/gone1.json)"; fi
	stop_server fault
fi

# ---- the KV budget ----
# f32: 2 layers x 3 KV heads x 64 x 2 x 4 bytes = 3 KiB per position: 1 MiB
# holds 341 positions (f16 682, q8_0 1285)
BIG=$(for i in $(seq 1 200); do printf 'w%d ' $i; done) # about 690 tokens
if start_server kv -m "$M" --ctx 1024 --cores 0 --parallel 4 --kv-mb 1 --kv-type f32 -q; then # serial
	st=$(curl -s -o "$TMP/big.json" -w '%{http_code}' -d "{\"prompt\":\"$BIG\",\"max_tokens\":4}" "$URL/v1/completions")
	if [[ $st == 400 ]] && grep -q "KV budget" "$TMP/big.json"; then pass "a prompt over the KV budget: 400"
	else fail "prompt over the KV budget" "$st $(head -c 200 "$TMP/big.json")"; fi
	specs=()
	MID=$(for i in $(seq 1 40); do printf 'v%d ' $i; done)
	for i in 1 2 3 4; do specs+=("k$i:0:100:$i:$MID $i"); done
	mkdir -p "$TMP/kv"
	/usr/bin/python3 "$TMP/clients.py" "$URL" "$TMP/kv" "${specs[@]}"
	ok=1
	for i in 1 2 3 4; do [[ $(cat "$TMP/kv/k$i.status") == 200 ]] || ok=0; done
	[[ $ok -eq 1 ]] && pass "requests whose KV does not fit wait and complete" || fail "KV waits"
	stop_server kv
fi
# the budget counts the cache's type: in q8_0 the same MiB holds the prompt
if start_server kvq -m "$M" --ctx 1024 --cores 0 --parallel 4 --kv-mb 1 --kv-type q8_0 -q; then
	st=$(curl -s -o "$TMP/bigq.json" -w '%{http_code}' -d "{\"prompt\":\"$BIG\",\"max_tokens\":4}" "$URL/v1/completions")
	if [[ $st == 200 ]]; then pass "--kv-type q8_0: the prompt over the f32 budget fits"
	else fail "--kv-type q8_0 budget" "$st $(head -c 200 "$TMP/bigq.json")"; fi
	stop_server kvq
fi
