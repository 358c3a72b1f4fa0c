"""The soak's hostile and disconnecting clients (tools/fleet/soak.sh), with
raw sockets against one `egang serve`, for SECONDS:

  hostile      malformed requests one after another: broken JSON, wrong
               types, invalid UTF-8, an unknown path or method, a body
               over the server's 1 MiB cap, a Content-Length with no body
               behind it, a 64 KiB header, a bad chunked body;
  disconnect   streamed and plain completions dropped early: after the
               first event, before any answer, halfway through the
               headers, or reset (SO_LINGER 0);
  slowloris    SLOW connections (default 20) that each send a request a
               byte every 2 s for 20 s, then close, and start again.

Prints one line: "soak clients: ..." with each kind's count and the
statuses seen, then up to five unexpected answers: a hostile request
answered with a 5xx or a body that is not egang's JSON error shape, or
closed unanswered where the framing was sound (a closed connection is a
valid answer to the broken framings; a client gives those up after 5 s).
These are reported, not judged: the soak judges the server's resources
(soak.sh). Exit status 0, or 2 on bad usage.

usage: soak_clients.py HOST PORT SECONDS [SLOW]
"""
import collections
import json
import socket
import sys
import threading
import time

BIG = 1 << 20  # the server's body cap (server/http.h SERVER_MAX_BODY)


def request(path, body, method="POST", extra=b""):
    """One HTTP/1.1 request with Connection: close."""
    if isinstance(body, str):
        body = body.encode()
    return (b"%s %s HTTP/1.1\r\nHost: soak\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\n%sContent-Length: %d\r\n\r\n"
            % (method.encode(), path.encode(), extra, len(body))) + body


def hostile_cases():
    """(name, bytes to send, whether the connection may close unanswered)."""
    c = "/v1/completions"
    return [
        ("json", request(c, '{"prompt": "Once", "max_tokens": '), False),
        ("type", request(c, '{"prompt": 7, "max_tokens": "many"}'), False),
        ("range", request(c, '{"prompt": "a", "max_tokens": -5}'), False),
        ("utf8", request(c, b'{"prompt": "\xff\xfe", "max_tokens": 2}'), False),
        ("chat", request("/v1/chat/completions", '{"messages": [{"role": "x"}]}'), False),
        ("path", request("/v1/nothing", "{}"), False),
        ("method", request(c, "", method="DELETE"), False),
        ("big", request(c, '{"prompt": "' + "a" * BIG + '"}'), True),
        ("short", b"POST /v1/completions HTTP/1.1\r\nHost: soak\r\n"
                  b"Content-Length: 5000\r\n\r\n{\"prompt\"", True),
        ("header", b"GET /health HTTP/1.1\r\nHost: soak\r\nX-Big: " +
                   b"h" * 65536 + b"\r\n\r\n", True),
        ("chunked", b"POST /v1/completions HTTP/1.1\r\nHost: soak\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n0\r\n\r\n", True),
    ]


class Tally:
    def __init__(self):
        self.mu = threading.Lock()
        self.counts = collections.Counter()
        self.bad = []

    def add(self, key, bad=None):
        with self.mu:
            self.counts[key] += 1
            if bad and len(self.bad) < 5:
                self.bad.append(bad)


def connect(host, port):
    s = socket.create_connection((host, port), timeout=30)
    return s


def read_all(s):
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except OSError:
        pass
    return out


def hostile(host, port, stop, tally):
    cases = hostile_cases()
    i = 0
    while not stop.is_set():
        name, data, may_close = cases[i % len(cases)]
        i += 1
        try:
            s = connect(host, port)
            if may_close:
                s.settimeout(5)
            try:
                s.sendall(data)
            except OSError:
                pass  # the server answered early and closed (413, 431)
            resp = read_all(s)
            s.close()
        except OSError as e:
            tally.add("hostile error", "%s: %s" % (name, e))
            continue
        if not resp:
            tally.add("hostile closed")
            if not may_close:
                tally.add("hostile unexpected", "%s: closed without an answer" % name)
            continue
        head, _, body = resp.partition(b"\r\n\r\n")
        try:
            status = int(head.split(b" ", 2)[1])
        except (IndexError, ValueError):
            tally.add("hostile unexpected", "%s: no status line: %r" % (name, resp[:60]))
            continue
        tally.add("hostile %d" % status)
        try:
            json.loads(body)["error"]["message"]
            shaped = True
        except (ValueError, KeyError, TypeError):
            shaped = False
        if status >= 500 or not shaped:
            tally.add("hostile unexpected", "%s: %d %r" % (name, status, body[:80]))
        time.sleep(0.02)


def disconnect(host, port, stop, tally):
    c = "/v1/completions"
    stream = request(c, '{"prompt": "Once upon", "max_tokens": 200, "stream": true}')
    plain = request(c, '{"prompt": "Once upon", "max_tokens": 200}')
    i = 0
    while not stop.is_set():
        kind = ("first-event", "before-answer", "half-headers", "reset")[i % 4]
        i += 1
        try:
            s = connect(host, port)
            if kind == "first-event":
                s.sendall(stream)
                got = b""
                while b"data: " not in got:
                    b = s.recv(4096)
                    if not b:
                        break
                    got += b
            elif kind == "before-answer":
                s.sendall(plain)
                time.sleep(0.05)
            elif kind == "half-headers":
                s.sendall(stream[:30])
            else:
                s.sendall(stream)
                s.recv(64)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
            s.close()
            tally.add("disconnect " + kind)
        except OSError as e:
            tally.add("disconnect error", "%s: %s" % (kind, e))
        time.sleep(0.05)


def slowloris(host, port, stop, tally, offset):
    data = request("/v1/completions", '{"prompt": "a", "max_tokens": 2}')
    stop.wait(offset)
    while not stop.is_set():
        try:
            s = connect(host, port)
            t_end = time.time() + 20
            k = 0
            while time.time() < t_end and not stop.is_set() and k < len(data) - 1:
                s.sendall(data[k:k + 1])
                k += 1
                stop.wait(2)
            s.close()
            tally.add("slowloris")
        except OSError:
            tally.add("slowloris closed by the server")
            stop.wait(1)


def main(argv):
    if len(argv) not in (4, 5):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    host, port, seconds = argv[1], int(argv[2]), float(argv[3])
    slow = int(argv[4]) if len(argv) == 5 else 20
    stop, tally = threading.Event(), Tally()
    th = [threading.Thread(target=hostile, args=(host, port, stop, tally)),
          threading.Thread(target=hostile, args=(host, port, stop, tally)),
          threading.Thread(target=disconnect, args=(host, port, stop, tally)),
          threading.Thread(target=disconnect, args=(host, port, stop, tally))]
    th += [threading.Thread(target=slowloris, args=(host, port, stop, tally, 20.0 * i / slow))
           for i in range(slow)]
    for t in th:
        t.start()
    stop.wait(seconds)
    stop.set()
    for t in th:
        t.join()
    parts = ["%s %d" % (k, v) for k, v in sorted(tally.counts.items())]
    print("soak clients: " + ", ".join(parts))
    for b in tally.bad:
        print("  unexpected: " + b)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
