#!/usr/bin/python3
"""Tool calling against a running `egang serve` (tests/cli_serve_tools.sh):
prints a PASS or FAIL line per check, for tests/run.sh to count.

    serve_tools_check.py URL NAME TEMPLATE BOS EOS [generic] [--small] [--no-grammar]

NAME names the checks; TEMPLATE is the Jinja source the server renders
(the reference: tests/chat_template_ref.py, with --generic-tools when the
sixth argument is "generic"). The checks:
  - the prompt of each conversation of tests/data/chat-tool-conversations.json
    has as many tokens (usage.prompt_tokens) as the server's /tokenize
    makes of the Jinja rendering (the template refuses it: a 400);
  - 400s: a tool_choice naming a function not in tools, malformed tools,
    a call's arguments that are not JSON, the deprecated functions;
  - tool_choice "auto": 200 with text (a tiny model writes no call);
  - tool_choice "required" and a named function: finish_reason
    "tool_calls", message.tool_calls[0] {id "call_...", type "function",
    function {name, arguments: a JSON object valid under the schema}},
    whole and streamed (the deltas assembled as OpenAI streams them);
  - the call and its result sent back: 200.
--small: one tool with one short argument and 64 tokens for the call, for
a model of 512 positions whose vocabulary spends a token on every few
characters (stories260K: the tools' prompt alone is 430 tokens)."""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

url, name, tmpl, bos, eos = sys.argv[1:6]
generic = "generic" in sys.argv[6:]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
failed = 0


def ok(what, cond, why=""):
    global failed
    if cond:
        print(f"PASS: {name}: {what}")
    else:
        failed += 1
        print(f"FAIL: {name}: {what} ({why})"[:600])


def post(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def post_json(path, body):
    st, text = post(path, body)
    try:
        return st, json.loads(text)
    except ValueError:
        return st, {"raw": text}


# one small function with bounded arguments (an enum), one without any
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "enum": ["Paris", "Rome"]},
            "days": {"type": "integer", "enum": [1, 2, 3]}},
            "required": ["city", "days"]}}},
    {"type": "function", "function": {"name": "now", "description": "The time"}},
]
USER = [{"role": "user", "content": "Weather?"}]
MAX_CALL = 120
if "--small" in sys.argv[6:]:
    TOOLS = [{"type": "function", "function": {"name": "w", "parameters": {
        "type": "object", "properties": {"c": {"enum": ["P", "R"]}}, "required": ["c"]}}}]
    MAX_CALL = 64


def args_ok(call):
    f = call.get("function", {})
    try:
        a = json.loads(f.get("arguments"))
    except (TypeError, ValueError):
        return False
    if f.get("name") == "now":
        return a == {}
    if f.get("name") == "w":
        return a in ({"c": "P"}, {"c": "R"})
    return (f.get("name") == "get_weather" and isinstance(a, dict) and
            a.get("city") in ("Paris", "Rome") and a.get("days") in (1, 2, 3) and
            len(a) == 2)


# ---- the prompt as the template renders it ----
convos = json.load(open(os.path.join(ROOT, "tests/data/chat-tool-conversations.json")))
for i, c in enumerate(convos):
    path = f"/tmp/serve-tools-{os.getpid()}-{i}.json"
    json.dump(c, open(path, "w"), ensure_ascii=False)
    ref = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tests/chat_template_ref.py")] +
                         (["--generic-tools"] if generic else []) + [tmpl, bos, eos, path],
                         capture_output=True, text=True)
    os.unlink(path)
    body = {"messages": c["messages"], "max_tokens": 1, "temperature": 0}
    if c.get("tools"):
        body["tools"] = c["tools"]
    st, r = post_json("/v1/chat/completions", body)
    if ref.returncode == 3:  # the template refuses the conversation
        ok(f"conversation {i}: refused as Jinja refuses it", st == 400, f"{st} {r}")
        continue
    if not c["add_generation_prompt"]:
        continue  # the server always adds the assistant's header
    # BOS as the server adds it: unless the rendering begins with it
    st2, t = post_json("/tokenize", {"content": ref.stdout, "parse_special": True,
                                     "add_special": not (bos and ref.stdout.startswith(bos))})
    want = len(t.get("tokens", []))
    got = r.get("usage", {}).get("prompt_tokens")
    e = r.get("error", {})
    if st == 400 and e.get("code") == "context_length_exceeded":  # counted all the same
        st, got = 200, want if f"the prompt has {want} tokens" in e.get("message", "") else None
    ok(f"conversation {i}: the prompt has the tokens of the Jinja rendering ({want})",
       st == 200 and st2 == 200 and got == want, f"{st} {got} tokens, Jinja's {want}: {r}")

# ---- bad requests ----
for what, body, param, text in [
    ("tool_choice naming a function not in tools",
     {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
     "tool_choice", "'nope'"),
    ("tool_choice required without tools", {"tool_choice": "required"}, "tool_choice", "tools"),
    ("a tool without a name", {"tools": [{"type": "function", "function": {}}]},
     "tools", "tools[0].function.name"),
    ("a tool of another type", {"tools": [{"type": "retrieval"}]}, "tools", "tools[0].type"),
    ("parallel_tool_calls not a boolean", {"tools": TOOLS, "parallel_tool_calls": 1},
     "parallel_tool_calls", "boolean"),
    ("the deprecated functions", {"functions": [{"name": "f"}]}, "functions", "tools"),
]:
    st, r = post_json("/v1/chat/completions", dict({"messages": USER, "max_tokens": 2}, **body))
    e = r.get("error", {})
    ok(f"{what} -> 400 naming it", st == 400 and e.get("param") == param and
       text in e.get("message", ""), f"{st} {r}")
bad_call = [USER[0], {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c", "type": "function", "function": {"name": "now", "arguments": "{not json"}}]}]
st, r = post_json("/v1/chat/completions", {"messages": bad_call, "tools": TOOLS})
ok("a call whose arguments are not JSON -> 400 naming them", st == 400 and
   "messages[1].tool_calls[0].function.arguments" in r.get("error", {}).get("message", ""),
   f"{st} {r}")

# ---- auto: the model answers with text ----
st, r = post_json("/v1/chat/completions", {"messages": USER, "tools": TOOLS, "max_tokens": 8,
                                           "temperature": 0})
ch = (r.get("choices") or [{}])[0]
ok("tool_choice auto: text, no call", st == 200 and isinstance(ch.get("message", {}).get("content"), str)
   and "tool_calls" not in ch.get("message", {}) and ch.get("finish_reason") in ("stop", "length"),
   f"{st} {r}")

if "--no-grammar" in sys.argv:
    sys.exit(1 if failed else 0)

# ---- required and named: one valid call ----
for what, choice in [("required", "required")] + [
        (f"named {t['function']['name']}", {"type": "function", "function": {"name": t["function"]["name"]}})
        for t in TOOLS]:
    st, r = post_json("/v1/chat/completions", {"messages": USER, "tools": TOOLS, "tool_choice": choice,
                                               "max_tokens": MAX_CALL, "temperature": 0.9, "seed": 7})
    ch = (r.get("choices") or [{}])[0]
    msg = ch.get("message", {})
    calls = msg.get("tool_calls") or []
    good = (st == 200 and ch.get("finish_reason") == "tool_calls" and len(calls) == 1 and
            calls[0].get("type") == "function" and calls[0].get("id", "").startswith("call_") and
            args_ok(calls[0]) and msg.get("content") is None)
    if isinstance(choice, dict):
        good = good and calls[0]["function"]["name"] == choice["function"]["name"]
    ok(f"tool_choice {what}: one valid call in message.tool_calls", good, f"{st} {r}")

# streamed: the deltas assembled
st, text = post("/v1/chat/completions", {"messages": USER, "tools": TOOLS, "tool_choice": "required",
                                         "max_tokens": MAX_CALL, "temperature": 0.9, "seed": 8,
                                         "stream": True})
calls, finish, done, first, content = {}, None, False, True, ""
for line in text.splitlines():
    if not line.startswith("data: "):
        continue
    if line == "data: [DONE]":
        done = True
        continue
    ev = json.loads(line[6:])
    c = ev["choices"][0]
    finish = c.get("finish_reason") or finish
    content += c.get("delta", {}).get("content") or ""
    for tc in c.get("delta", {}).get("tool_calls") or []:
        k = tc["index"]
        if k not in calls:  # its first delta: id, type and name
            first = first and "id" in tc and tc.get("type") == "function" and "name" in tc["function"]
            calls[k] = {"id": tc.get("id"), "type": tc.get("type"),
                        "function": {"name": tc["function"].get("name"), "arguments": ""}}
        calls[k]["function"]["arguments"] += tc.get("function", {}).get("arguments", "")
ok("streamed required call: deltas assemble into one valid call, no content, "
   "finish_reason tool_calls",
   st == 200 and done and first and finish == "tool_calls" and len(calls) == 1 and
   args_ok(calls[0]) and content == "", f"{st} {calls} {finish} {content!r} {text[-300:]}")

# the call and its result sent back
st, r = post_json("/v1/chat/completions", {"messages": USER + [
    {"role": "assistant", "content": None, "tool_calls": [calls.get(0, {
        "id": "c", "type": "function", "function": {"name": TOOLS[0]["function"]["name"],
                                                    "arguments": "{\"c\": \"P\"}"}})]},
    {"role": "tool", "tool_call_id": calls.get(0, {}).get("id", "c"), "content": "sunny, 22 C"}],
    "tools": TOOLS, "max_tokens": 4, "temperature": 0,
    # --small: the answer's turn without the tools shown (they would not fit)
    "tool_choice": "none" if MAX_CALL < 120 else "auto"})
ok("the call and its result sent back -> 200", st == 200 and "choices" in r, f"{st} {r}")
sys.exit(1 if failed else 0)
