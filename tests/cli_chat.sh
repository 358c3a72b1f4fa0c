#!/usr/bin/env bash
# egang chat through a pseudo-terminal (tmux): streamed answers with the
# speed line, the KV cache reused by the second turn, /system and /reset,
# Ctrl-C stopping a long answer while the program goes on, /exit.
# stories260K.gguf with the Llama 2 template (--chat-template llama2).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
command -v tmux >/dev/null || { skip chat-pty "tmux is not installed (tools/deps.sh)"; exit 0; }
M=$MODELS/stories260K.gguf
[[ -f $M ]] || { missing_model chat-pty "no $M"; exit 0; }
S=egang-chat-test-$$
export TMUX_TMPDIR=$TMP
trap 'tmux kill-server 2>/dev/null; lib_cleanup' EXIT
LOG=$TMP/chat.log
# start_chat SESSION LOG ARGS...: egang chat in a tmux session whose output
# goes to LOG. The command waits for LOG.go, made once pipe-pane is on, so
# that no output (the first prompt) comes before the pipe; LOG.rc gets
# "EXIT=<status>" in one rename, so a reader never sees it half written.
start_chat() {
	local s=$1 log=$2; shift 2
	tmux new-session -d -s "$s" -x 200 -y 50 \
		"while [ ! -f $log.go ]; do sleep 0.05; done; $EGANG chat $* 2>&1; echo EXIT=\$? >$log.rc.tmp; mv $log.rc.tmp $log.rc; sleep 30"
	tmux pipe-pane -t "$s" -o "cat >>$log"
	touch "$log.go"
}
start_chat "$S" "$LOG" -m "$M" --chat-template llama2 --cores 0 -n 24 -t 0
# wait_for N TEXT: until TEXT has appeared N times in the log (60 s: a
# liveness bound for a loaded machine, not a timing)
wait_for() {
	local i
	for i in $(seq 600); do
		[[ $(grep -c -- "$2" "$LOG" 2>/dev/null) -ge $1 ]] && return 0
		sleep 0.1
	done
	return 1
}
send() { tmux send-keys -t "$S" -l "$1"; tmux send-keys -t "$S" Enter; }
ok=1
wait_for 1 '> ' || { fail chat-pty "no prompt: $(tail -c 300 "$LOG")"; exit 0; }
send "Once upon a time"
if wait_for 1 'tok/s' && grep -q '\[24 tokens, .* tok/s; prompt [0-9]* tokens, 0 reused' "$LOG"; then
	pass chat-answer-and-speed
else fail chat-answer-and-speed "$(tail -c 300 "$LOG")"; ok=0; fi
send "Tell me more"
# the second prompt reuses every position of the first turn: its prompt and
# its answer (all but the last token sampled, which was never fed, unless
# an end token stopped the answer)
if wait_for 2 'tok/s'; then
	read -r g1 p1 _ < <(grep -o '\[[0-9]* tokens, [0-9.]* tok/s; prompt [0-9]* tokens, [0-9]* reused' "$LOG" |
		sed -n 1p | tr -c '0-9.\n' ' ' | awk '{print $1, $3, $4}')
	r2=$(grep -o '[0-9]* reused' "$LOG" | sed -n 2p | tr -dc 0-9)
	if [[ -n $r2 && $r2 -ge $((p1 + g1 - 1)) ]]; then pass chat-kv-reused
	else fail chat-kv-reused "first turn $p1 + $g1 ids, second reused ${r2:-?}"; ok=0; fi
else fail chat-kv-reused "no second answer: $(tail -c 300 "$LOG")"; ok=0; fi
send "/system Be brief."
wait_for 1 'system message set' && pass chat-system || fail chat-system
send "/reset"
wait_for 1 'conversation reset)' && pass chat-reset || fail chat-reset
# Ctrl-C during the answer: the answer stops, the program goes on (the
# answers of this model are 24 tokens: Ctrl-C may land after one; the
# long answer below cannot end before it)
tmux send-keys -t "$S" -l "Write a long story" ; tmux send-keys -t "$S" Enter
sleep 0.05
tmux send-keys -t "$S" C-c
if wait_for 3 'tok/s'; then
	pass chat-ctrl-c-keeps-running
else fail chat-ctrl-c-keeps-running "$(tail -c 300 "$LOG")"; fi
send "/exit"
for i in $(seq 600); do [[ -f $LOG.rc ]] && break; sleep 0.1; done
if grep -q 'EXIT=0' "$LOG.rc" 2>/dev/null; then pass chat-exit
else fail chat-exit "$(cat "$LOG.rc" 2>/dev/null) $(tail -c 200 "$LOG")"; fi

# a long answer (a 32000-token model of one wide layer: some hundred
# tokens/s at most, a 2000-token answer takes seconds) stopped by Ctrl-C
# once under way: '; stopped' on its line, a new prompt, the program alive
BIG=$TMP/big.gguf
"$EGANG" synth tinyllama-1.1b --layers 1 --type q4_0 -q -o "$BIG" ||
	{ fail chat-ctrl-c-stops-the-answer "synth failed"; exit 0; }
S2=$S-2
LOG=$TMP/chat2.log
start_chat "$S2" "$LOG" -m "$BIG" --chat-template llama2 --cores 0 -n 2000 -t 0.8
S=$S2
wait_for 1 '> ' || { fail chat-ctrl-c-stops-the-answer "no prompt: $(tail -c 300 "$LOG")"; exit 0; }
send "Tell me everything"
sleep 1
tmux send-keys -t "$S" C-c
if wait_for 1 'tok/s' && grep -q '; stopped\]' "$LOG" && wait_for 2 '> '; then
	send "/exit"
	for i in $(seq 600); do [[ -f $LOG.rc ]] && break; sleep 0.1; done
	grep -q 'EXIT=0' "$LOG.rc" 2>/dev/null && pass chat-ctrl-c-stops-the-answer ||
		fail chat-ctrl-c-stops-the-answer "no clean exit after it: $(tail -c 200 "$LOG")"
else fail chat-ctrl-c-stops-the-answer "$(grep 'tok/s' "$LOG" | tail -1) $(tail -c 200 "$LOG")"; fi
