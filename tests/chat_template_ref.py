#!/usr/bin/env python3
"""The reference rendering of a chat template: python3-jinja2 as Hugging
Face transformers' apply_chat_template sets it up (a sandboxed environment,
trim_blocks and lstrip_blocks, raise_exception, tojson).

    chat_template_ref.py TEMPLATE BOS EOS CONVERSATION.json

CONVERSATION.json: {"messages": [...], "add_generation_prompt": bool}.
Prints the rendered text (no newline added); exit 3 when the template
raises (a conversation it refuses)."""
import json, sys
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols

class Refused(Exception):
    pass

def raise_exception(msg):
    raise Refused(msg)

tmpl_path, bos, eos, convo_path = sys.argv[1:5]
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                    extensions=[loopcontrols])
env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
env.globals["raise_exception"] = raise_exception
t = env.from_string(open(tmpl_path, encoding="utf-8").read())
c = json.load(open(convo_path, encoding="utf-8"))
try:
    out = t.render(messages=c["messages"], add_generation_prompt=c["add_generation_prompt"],
                   bos_token=bos, eos_token=eos)
except Refused as e:
    print(e, file=sys.stderr)
    sys.exit(3)
sys.stdout.write(out)
