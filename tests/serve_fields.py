"""No request field silently ignored (issue 32's "Done when"): every field
of OpenAI's chat/completions and (legacy) completions request bodies, and
every field `egang serve --help` lists, sent one at a time with a value
other than its default to a real server. Each answer must be either

  - 200, when the help lists the field as implemented for that endpoint,
    with the field's effect where this test can see it (EFFECTS), or
  - 400 invalid_request_error naming the field (param) with code
    unsupported_parameter, when the help lists it as refused, as taken at
    its default only, or not at all (then its default, where the help
    gives it as JSON, must be a 200).

The accepted set is read from the help (HELP_FILE), not written here, so a
field that moves from refused to implemented keeps this test right; a
field the help lists that this test has no value for is a failure (give
it one in VALUES).

usage: /usr/bin/python3 tests/serve_fields.py URL HELP_FILE
Prints PASS:/FAIL: lines (tests/lib.sh's format)."""
import json
import re
import sys
import urllib.error
import urllib.request

URL, HELP = sys.argv[1], sys.argv[2]
EPS = {"chat": "/v1/chat/completions", "cmpl": "/v1/completions"}

# OpenAI's request bodies (API reference, "Create chat completion" and
# "Create completion"; the chat list includes the deprecated functions,
# function_call and max_tokens), without messages/prompt, which every
# request here carries.
OPENAI = {
    "chat": ["audio", "frequency_penalty", "function_call", "functions",
             "logit_bias", "logprobs", "max_completion_tokens", "max_tokens",
             "metadata", "modalities", "model", "n", "parallel_tool_calls",
             "prediction", "presence_penalty", "prompt_cache_key",
             "prompt_cache_retention", "reasoning_effort", "response_format",
             "safety_identifier", "seed", "service_tier", "stop", "store",
             "stream", "stream_options", "temperature", "tool_choice", "tools",
             "top_logprobs", "top_p", "user", "verbosity", "web_search_options"],
    "cmpl": ["best_of", "echo", "frequency_penalty", "logit_bias", "logprobs",
             "max_tokens", "model", "n", "presence_penalty", "seed", "stop",
             "stream", "stream_options", "suffix", "temperature", "top_p",
             "user"],
}

TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "the weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
GRAMMAR = 'root ::= "yes" | "no"'
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}},
          "required": ["a"], "additionalProperties": False}

# field -> the value sent (not the default), and the fields it needs beside
# it to mean something (COMPANIONS); "@" values are filled in at run time.
VALUES = {
    "audio": {"voice": "alloy", "format": "wav"},
    "best_of": 2,
    "echo": True,
    "frequency_penalty": 2.0,
    "function_call": "auto",
    "functions": [TOOL["function"]],
    "logit_bias": "@bias",
    "logprobs": {"chat": True, "cmpl": 2},
    "max_completion_tokens": 3,
    "max_tokens": 3,
    "metadata": {"k": "v"},
    "modalities": ["text", "audio"],
    "model": "@model",
    "n": 2,
    "parallel_tool_calls": False,
    "prediction": {"type": "content", "content": "Once upon a time"},
    "presence_penalty": 2.0,
    "prompt_cache_key": "k",
    "prompt_cache_retention": "24h",
    "reasoning_effort": "low",
    "response_format": {"type": "json_object"},
    "safety_identifier": "u",
    "seed": 42,
    "service_tier": "flex",
    "stop": "@stop",
    "store": True,
    "stream": True,
    # include_usage alone is taken (usage comes anyway); this asks more
    "stream_options": {"include_usage": True, "include_obfuscation": True},
    "suffix": " The end.",
    "temperature": 0,
    "tool_choice": "required",
    "tools": [TOOL],
    "top_logprobs": 2,
    "top_p": 1e-6,
    "user": "u",
    "verbosity": "low",
    "web_search_options": {},
    # llama.cpp's extensions
    "top_k": 1,
    "min_p": 1.0,
    "repetition_penalty": 1.5,
    "repeat_last_n": 8,
    "grammar": GRAMMAR,
    "json_schema": SCHEMA,
}
COMPANIONS = {
    "stream_options": {"stream": True},
    "top_logprobs": {"logprobs": True},
    "logit_bias": {"temperature": 0},
    "stop": {"temperature": 0},
    "frequency_penalty": {"temperature": 0},
    "presence_penalty": {"temperature": 0},
    "repetition_penalty": {"temperature": 0},
    "tool_choice": {"tools": [TOOL]},
}

# the penalties need a text long enough to repeat a token
PENALTIES = ("frequency_penalty", "presence_penalty", "repetition_penalty")
LONG = 96

results = []


def report(ok, name, why=""):
    results.append(ok)
    print(("PASS: " if ok else "FAIL: ") + name + ("" if ok or not why else " (%s)" % why))


def post(path, body):
    """(status, parsed JSON or the SSE chunks as a list, raw text)"""
    data = json.dumps(body).encode()
    rq = urllib.request.Request(URL + path, data, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(rq, timeout=120) as r:
            st, raw, ctype = r.status, r.read().decode("utf-8", "replace"), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        st, raw, ctype = e.code, e.read().decode("utf-8", "replace"), ""
    if "event-stream" in ctype:
        ev = [l[6:] for l in raw.split("\n") if l.startswith("data: ")]
        return st, [json.loads(e) for e in ev if e != "[DONE]"], raw
    try:
        return st, json.loads(raw), raw
    except ValueError:
        return st, None, raw


# ---- the help's table ----

def parse_help(path):
    """{(name, ep): (kind, only)} with kind used|default|refused and only
    the default's text (default kind)."""
    kinds = [("Implemented:", "used"), ("Accepted only at", "default"),
             ("Refused, whatever", "refused")]
    table, kind, pending = {}, None, None
    row = re.compile(r'^  ([a-z_]+)(?::\s(.*?))?\s+(both|chat|cmpl)( |$)')
    alone = re.compile(r'^  ([a-z_]+)(?::\s(.*))?$')
    cont = re.compile(r'^ {25}(both|chat|cmpl)( |$)')
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        for head, k in kinds:
            if head in line:
                kind = k
        if kind is None:
            continue
        if line.startswith("Any other field"):
            break
        m = row.match(line)
        c = cont.match(line)
        if pending and c:
            name, only, eps = pending[0], pending[1], c.group(1)
        elif m:
            name, only, eps = m.group(1), m.group(2), m.group(3)
        else:
            m = alone.match(line)
            pending = (m.group(1), m.group(2)) if m else None
            continue
        pending = None
        for ep in (("chat", "cmpl") if eps == "both" else (eps,)):
            table[(name, ep)] = (kind, only)
    return table


# ---- what the model does without the fields (effects compare to it) ----

BASE = {"chat": {"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 24},
        "cmpl": {"prompt": "Once upon a time", "max_tokens": 24}}


def text_of(ep, j):
    """The first choice's text of a reply, or of SSE chunks put together."""
    if isinstance(j, list):
        out = ""
        for c in j:
            for ch in c.get("choices", []):
                if ch.get("index") == 0:
                    out += (ch["delta"].get("content") or "") if ep == "chat" else ch["text"]
        return out
    c = j["choices"][0]
    return c["message"]["content"] if ep == "chat" else c["text"]


def greedy(ep, extra=None):
    st, j, raw = post(EPS[ep], dict(BASE[ep], temperature=0, **(extra or {})))
    if st != 200:
        raise SystemExit("FAIL: the greedy baseline on %s: %d %s" % (ep, st, raw[:200]))
    return text_of(ep, j), j


def effects(ep, g, g_long, piece):
    """field -> check(reply, body) returning '' or what is wrong (g: the
    greedy text of BASE, g_long: of LONG tokens)."""
    def same_as_greedy(j, body):
        t = text_of(ep, j)
        return "" if t == g else "text %r, greedy %r" % (t, g)

    def differs(j, body):
        t = text_of(ep, j)
        return "" if t != g_long else "the same text as without it: %r" % t

    def at_most_3(j, body):
        u = j["usage"]["completion_tokens"]
        return "" if u <= 3 else "%d tokens" % u

    def stopped(j, body):
        t, w = text_of(ep, j), body["stop"]
        if w not in g:
            return "the stop %r is not in the greedy text %r" % (w, g)
        want = g[:g.index(w)]
        fin = j["choices"][0]["finish_reason"]
        return "" if t == want and fin == "stop" else "%r/%s, want %r/stop" % (t, fin, want)

    def streamed(j, body):
        return "" if isinstance(j, list) and text_of(ep, j) else "not server-sent events"

    def usage_streamed(j, body):
        return "" if isinstance(j, list) and any(c.get("usage") for c in j) else "no usage chunk"

    def forced(j, body):
        t, n = text_of(ep, j), (j["usage"]["completion_tokens"])
        return "" if n > 0 and t.replace(piece, "").strip() == "" else \
            "%r is not %d x %r" % (t, n, piece)

    def two(j, body):
        idx = sorted(c["index"] for c in j["choices"])
        return "" if idx == [0, 1] else "choices %s" % idx

    def lp(j, body):
        l = j["choices"][0]["logprobs"]
        n = j["usage"]["completion_tokens"]
        if ep == "chat":
            ok = l and len(l["content"]) == n
        else:
            ok = l and len(l["tokens"]) == n and all(len(t) == 2 for t in l["top_logprobs"])
        return "" if ok else "logprobs %s" % json.dumps(l)[:120]

    def top2(j, body):
        l = j["choices"][0]["logprobs"]
        ok = l and l["content"] and all(len(e["top_logprobs"]) == 2 for e in l["content"])
        return "" if ok else "top_logprobs %s" % json.dumps(l)[:120]

    def reproducible(j, body):
        st, j2, raw = post(EPS[ep], body)
        return "" if st == 200 and text_of(ep, j2) == text_of(ep, j) else "the same seed gave another text"

    def model_named(j, body):
        return "" if j["model"] == body["model"] else "model %s" % j["model"]

    def echoed(j, body):
        return "" if text_of(ep, j).startswith(body["prompt"]) else "not echoed"

    def yes_no(j, body):
        t = text_of(ep, j)
        return "" if t in ("yes", "no") else "%r outside the grammar" % t

    def json_text(j, body):
        t, fin = text_of(ep, j), j["choices"][0]["finish_reason"]
        if fin != "stop":
            return ""  # cut by max_tokens: a prefix, not checked here
        try:
            return "" if isinstance(json.loads(t), dict) else "%r is not an object" % t
        except ValueError:
            return "%r is not JSON" % t

    return {
        "temperature": same_as_greedy, "top_p": same_as_greedy, "top_k": same_as_greedy,
        "min_p": same_as_greedy, "max_tokens": at_most_3, "max_completion_tokens": at_most_3,
        "stop": stopped, "stream": streamed, "stream_options": usage_streamed,
        "logit_bias": forced, "n": two, "logprobs": lp, "top_logprobs": top2,
        "seed": reproducible, "model": model_named, "echo": echoed,
        "frequency_penalty": differs, "presence_penalty": differs,
        "repetition_penalty": differs, "grammar": yes_no, "json_schema": json_text,
        "response_format": json_text,
    }


def value_of(name, ep, run):
    v = VALUES[name]
    if isinstance(v, dict) and set(v) == {"chat", "cmpl"}:
        v = v[ep]
    if isinstance(v, str) and v.startswith("@"):
        v = run[v[1:]]
    return v


def main():
    table = parse_help(HELP)
    if len(table) < 20:
        report(False, "the help's field table", "only %d entries parsed" % len(table))
        return
    report(True, "the help lists %d (field, endpoint) entries" % len(table))
    # the model's id, a token to force, a word of the greedy text to stop at
    st, models, _ = post("/tokenize", {"content": " the"})
    bias_id = models["tokens"][-1] if st == 200 and models.get("tokens") else 300
    st, d, _ = post("/detokenize", {"tokens": [bias_id]})
    piece = (d or {}).get("content", "").strip() or "?"
    mid = json.load(urllib.request.urlopen(URL + "/v1/models", timeout=30))["data"][0]["id"]
    for ep in ("chat", "cmpl"):
        g, _ = greedy(ep)
        g_long, _ = greedy(ep, {"max_tokens": LONG})
        words = g.split()
        run = {"model": mid, "bias": {str(bias_id): 100},
               "stop": words[len(words) // 2] if len(words) > 2 else g[len(g) // 2:] or "."}
        eff = effects(ep, g, g_long, piece)
        names = sorted(set(OPENAI[ep]) | {n for (n, e) in table if e == ep} - {"messages", "prompt"})
        for name in names:
            where = "%s %s" % (ep, name)
            if name not in VALUES:
                report(False, where, "the help lists it and this test has no value for it: add one to VALUES")
                continue
            kind, only = table.get((name, ep), ("absent", None))
            # the field first: the refusal names the first field egang
            # does not take, and a companion may be one too
            body = {name: value_of(name, ep, run)}
            body.update({k: v for k, v in BASE[ep].items() if k not in body})
            body.update({k: v for k, v in COMPANIONS.get(name, {}).items() if k not in body})
            if name == "max_completion_tokens":
                del body["max_tokens"]  # which would win
            if name in PENALTIES:
                body["max_tokens"] = LONG  # room for a repeat to be penalized
            st, j, raw = post(EPS[ep], body)
            if kind == "used":
                if st != 200:
                    report(False, where + ": implemented (help), honoured", "status %d: %s" % (st, raw[:200]))
                    continue
                check = eff.get(name)
                why = check(j, body) if check else ""
                report(not why, where + (": implemented, its effect seen" if check else
                                         ": implemented, 200 (no effect this test can see)"), why)
                continue
            err = (j or {}).get("error", {}) if isinstance(j, dict) else {}
            ok = st == 400 and err.get("param") == name and \
                err.get("type") == "invalid_request_error" and err.get("code") == "unsupported_parameter"
            report(ok, "%s: %s -> 400 unsupported_parameter naming it" %
                   (where, {"absent": "not in the help", "default": "default only (help)",
                            "refused": "refused (help)"}[kind]),
                   "status %d: %s" % (st, raw[:200]))
            if kind == "default" and only is not None:
                try:
                    dv = json.loads(only)
                except ValueError:
                    continue  # a default the help gives in words
                st, j, raw = post(EPS[ep], dict(BASE[ep], **{name: dv}))
                report(st == 200, "%s: its default %s -> 200" % (where, only), "status %d: %s" % (st, raw[:200]))
    print("fields: %d checks, %d failed" % (len(results), results.count(False)))


main()
