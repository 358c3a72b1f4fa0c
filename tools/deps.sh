#!/usr/bin/env bash
# Installs the Debian 12 packages egang needs, when any is missing.
# Runs as root (or with sudo); prints nothing when all are there.
set -eu
exec "$(dirname "$0")/apt-ensure.sh" \
	gcc clang make python3 libcmocka-dev libhwloc-dev libjansson-dev \
	libmicrohttpd-dev libpcre2-dev libcurl4-openssl-dev curl gnuplot-nox \
	python3-jinja2 python3-pip tmux spin libclang-rt-14-dev
