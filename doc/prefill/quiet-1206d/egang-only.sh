#!/bin/bash
# the egang half of run.sh's 16k point, rerun alone after `generate
# --prompt-ids` stopped capping the list at 4,096 ids (run.sh's llama.cpp
# half stands): the same ids and flags as compare-llamacpp's egang_long
cd "$(dirname "$0")/../../.."
O=$1; E=build/gcc-release/egang; M=~/.cache/egang/models/llama3.2-1b-q8_0.gguf
hdr() { date -u; uptime; git log -1 --format='main at %h'; $E bench membw --cores 0-1 --quiet 2>&1; }
hdr > $O/egang-only.txt 2>&1
info=$($E info $M); [[ $info =~ vocab\ ([0-9]+) ]] && vocab=${BASH_REMATCH[1]}; [[ $info =~ bos\ ([0-9]+) ]] && bos=${BASH_REMATCH[1]}
ids=$bos; for ((i = 1; i < 16000; i++)); do ids+=",$((1 + (i * 7919) % (vocab - 1)))"; done
/usr/bin/time -f 'max_rss_kb %M' $E generate -m $M --prompt-ids "$ids" -t 0 -n 64 --ctx 16065 --cores 0-1 --no-echo >> $O/egang-only.txt 2>&1
hdr >> $O/egang-only.txt 2>&1
