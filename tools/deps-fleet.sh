#!/usr/bin/env bash
# Installs what `make test-fleet` needs beyond tools/deps.sh, when missing:
# Debian 12's haproxy (2.6), the balancer in front of the replicas
# (tools/fleet/). Its package starts no listener of its own (Debian's
# /etc/haproxy/haproxy.cfg has no frontend); the tests run their own
# haproxy with tools/fleet/haproxy.cfg on loopback.
# Prints nothing when all is there. Exit status 1, with one line, when it
# cannot install (the caller decides: make test-fleet then says SKIP, or
# fails under CI).
exec "$(dirname "$0")/apt-ensure.sh" --label fleet haproxy
