#!/usr/bin/python3
"""The reference rendering of a chat template: python3-jinja2 as Hugging
Face transformers' apply_chat_template sets it up (a sandboxed environment,
trim_blocks and lstrip_blocks, raise_exception, tojson).

    chat_template_ref.py [--generic-tools] TEMPLATE BOS EOS CONVERSATION.json
    chat_template_ref.py [--generic-tools] --out-dir DIR TEMPLATE BOS EOS CONVERSATION.json...

--generic-tools: for a template without a tool syntax, the conversation
lowered first as egang's generic fallback writes tools, calls and results
into plain turns (lower_generic), then rendered without tools.

CONVERSATION.json: {"messages": [...], "add_generation_prompt": bool,
"tools": [...] (optional)}, the messages as an OpenAI client sends them.
Prints the rendered text (no newline added); exit 3 when the template
raises (a conversation it refuses). With --out-dir, each conversation's
rendering goes to DIR/NAME.ref (NAME: its file name), or DIR/NAME.refused
when the template raises: one python for all of a template's
conversations (its start costs more than a rendering)."""
import json, os, sys
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols

class Refused(Exception):
    pass

def raise_exception(msg):
    raise Refused(msg)

args = sys.argv[1:]
out_dir = None
generic = False
if args[:1] == ["--generic-tools"]:
    generic, args = True, args[1:]
if args[:1] == ["--out-dir"]:
    out_dir, args = args[1], args[2:]
tmpl_path, bos, eos, convos = args[0], args[1], args[2], args[3:]
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                    extensions=[loopcontrols])
env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
env.globals["raise_exception"] = raise_exception
t = env.from_string(open(tmpl_path, encoding="utf-8").read())

def as_template_sees(messages):
    """The messages as transformers' and llama.cpp's callers give them to a
    template: a call's arguments as an object (OpenAI sends a JSON string),
    an assistant's null content as ""."""
    out = []
    for m in messages:
        m = dict(m)
        if m.get("content") is None:
            m["content"] = ""
        if m.get("tool_calls"):
            m["tool_calls"] = [dict(tc, function=dict(tc["function"],
                               arguments=json.loads(tc["function"]["arguments"])))
                               for tc in m["tool_calls"]]
        out.append(m)
    return out

HERMES_HEAD = ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
               "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
HERMES_TAIL = ("\n</tools>\n\nFor each function call, return a json object with function name and "
               "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
               "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>")

def hermes_call(tc):
    f = tc["function"]
    args = json.dumps(json.loads(f["arguments"]), ensure_ascii=False)
    return '<tool_call>\n{"name": "' + f["name"] + '", "arguments": ' + args + '}\n</tool_call>'

def lower_generic(messages, tools):
    """egang's generic fallback for a template without a tool syntax
    (src/model/chat_tools.h): the Hermes syntax in plain turns. The tools
    block ends the system message (one is made without it), an assistant's
    calls follow its text, a run of tool results is one user message."""
    out, i = [], 0
    if tools:
        head = ""
        if messages and messages[0]["role"] == "system":
            head, i = messages[0]["content"] + "\n\n", 1
        block = "".join("\n" + json.dumps(t, ensure_ascii=False) for t in tools)
        out.append({"role": "system", "content": head + HERMES_HEAD + block + HERMES_TAIL})
    while i < len(messages):
        m = messages[i]
        if m["role"] == "tool":
            parts = []
            while i < len(messages) and messages[i]["role"] == "tool":
                parts.append("<tool_response>\n" + messages[i]["content"] + "\n</tool_response>")
                i += 1
            out.append({"role": "user", "content": "\n".join(parts)})
            continue
        if m.get("tool_calls"):
            text = m.get("content") or ""
            calls = "\n".join(hermes_call(tc) for tc in m["tool_calls"])
            out.append({"role": "assistant", "content": (text + "\n" if text else "") + calls})
        else:
            out.append({"role": m["role"], "content": m["content"]})
        i += 1
    return out

def render(convo_path):
    c = json.load(open(convo_path, encoding="utf-8"))
    if generic:
        return t.render(messages=lower_generic(c["messages"], c.get("tools")),
                        add_generation_prompt=c["add_generation_prompt"],
                        bos_token=bos, eos_token=eos)
    return t.render(messages=as_template_sees(c["messages"]), tools=c.get("tools"),
                    add_generation_prompt=c["add_generation_prompt"],
                    bos_token=bos, eos_token=eos)

if out_dir is None:
    try:
        out = render(convos[0])
    except Refused as e:
        print(e, file=sys.stderr)
        sys.exit(3)
    sys.stdout.write(out)
    sys.exit(0)
for convo_path in convos:
    name = os.path.join(out_dir, os.path.basename(convo_path))
    try:
        out = render(convo_path)
    except Refused as e:
        open(name + ".refused", "w", encoding="utf-8").write(str(e))
        continue
    open(name + ".ref", "w", encoding="utf-8", newline="").write(out)
