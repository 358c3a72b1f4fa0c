#!/usr/bin/python3
"""The reference rendering of a chat template: python3-jinja2 as Hugging
Face transformers' apply_chat_template sets it up (a sandboxed environment,
trim_blocks and lstrip_blocks, raise_exception, tojson).

    chat_template_ref.py TEMPLATE BOS EOS CONVERSATION.json
    chat_template_ref.py --out-dir DIR TEMPLATE BOS EOS CONVERSATION.json...

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

def render(convo_path):
    c = json.load(open(convo_path, encoding="utf-8"))
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
