"""egang serve driven by the official `openai` Python client.

Run by tests/cli_openai.sh under the pinned client's venv
(tools/pyclient.sh), against a real `egang serve` on loopback that serves
stories260K with the chatml template, --parallel 2 and an API key. Each
check prints "PASS: name" or "FAIL: name (why)", the lines tests/run.sh
counts; an exception inside a check is that check's FAIL. Every client has
max_retries=0, so an error the server returns is seen once, as it is, and
a 60 s timeout, so a server that stops answering fails a check instead of
hanging the test; past 240 s in all the script prints where it is and
exits 1. Every stream is closed by its `with` block, also when a check
fails inside it: a stream left to the garbage collector closes its
connection from wherever the collector runs, inside httpcore's pool lock
as well, and that deadlocks.

usage: openai_client.py URL KEY MODEL_ID PROMPT WANT_FILE
  URL        the server, http://127.0.0.1:PORT
  KEY        the API key it was started with
  MODEL_ID   the id /v1/models should list
  PROMPT     a completions prompt, and WANT_FILE the text `egang generate`
             gives for it greedily (24 tokens)
"""
import faulthandler
import json
import sys
import threading
import time
import urllib.request

import openai
from openai.types import Completion
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.chat.chat_completion import ChoiceLogprobs
from openai.types.chat.chat_completion_token_logprob import (
    ChatCompletionTokenLogprob, TopLogprob)

URL, KEY, MODEL, PROMPT, WANT_FILE = sys.argv[1:6]
WANT = open(WANT_FILE, encoding="utf-8").read()
MESSAGES = [{"role": "system", "content": "You tell short stories."},
            {"role": "user", "content": "Tell me about a cat."}]
# one small tool: stories260K's 512 positions hold the tools' prompt
# (446 tokens) and a call (about 60, greedy)
TOOL = {"type": "function",
        "function": {"name": "w",
                     "parameters": {"type": "object",
                                    "properties": {"c": {"enum": ["P", "R"]}},
                                    "required": ["c"]}}}
TOOL_ASK = [{"role": "user", "content": "Weather?"}]

faulthandler.dump_traceback_later(240, exit=True)
# loopback only: no proxy from the environment (HTTP_PROXY and the like)
# between the client and the server
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def new_client(key=KEY, timeout=60):
    """An openai.OpenAI for the server: no retries, no proxy."""
    return openai.OpenAI(
        base_url=URL + "/v1", api_key=key, max_retries=0, timeout=timeout,
        http_client=openai.DefaultHttpxClient(trust_env=False))


client = new_client()
# what the checks learn and later checks compare with, kept before their
# own assertions so that one FAIL does not turn the later checks into
# KeyErrors
seen = {}


def check(name):
    """Decorator: runs the function now; PASS when it returns, FAIL with
    the assertion's or the exception's text when it raises."""
    def run(fn):
        try:
            fn()
            print("PASS: " + name, flush=True)
        except AssertionError as e:
            print("FAIL: %s (%s)" % (name, e), flush=True)
        except Exception as e:  # the client's errors are the test's result
            print("FAIL: %s (%s: %s)" % (name, type(e).__name__,
                                         str(e)[:300]), flush=True)
        return fn
    return run


def expect(cond, why):
    """Raises AssertionError(why) unless cond."""
    if not cond:
        raise AssertionError(why)


def http(method, path, body=None):
    """A plain request beside the client's (/detokenize, /metrics): the
    parsed JSON, or the text for /metrics."""
    req = urllib.request.Request(
        URL + path, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + KEY,
                 "Content-Type": "application/json"})
    with NO_PROXY.open(req, timeout=60) as r:
        text = r.read().decode()
    return text if path == "/metrics" else json.loads(text)


def cancelled_total():
    """egang_generations_cancelled_total from /metrics."""
    for line in http("GET", "/metrics").splitlines():
        if line.startswith("egang_generations_cancelled_total "):
            return int(float(line.split()[1]))
    raise AssertionError("/metrics has no egang_generations_cancelled_total")


def chat(**kw):
    """A chat completion of MESSAGES with the served model."""
    return client.chat.completions.create(model=MODEL, messages=MESSAGES,
                                          **kw)


def usage_ok(u, limit):
    """The usage object is whole: tokens counted, the total their sum."""
    expect(u is not None, "no usage")
    expect(u.prompt_tokens > 0 and 1 <= u.completion_tokens <= limit,
           "usage %s" % u)
    expect(u.total_tokens == u.prompt_tokens + u.completion_tokens,
           "total_tokens is not the sum: %s" % u)


def streamed(stream):
    """The chunks of a stream, which it closes: (text, finish_reasons,
    usage, chunks)."""
    text, finish, usage, chunks = "", [], None, []
    with stream:
        chunks = list(stream)
    for ch in chunks:
        if ch.usage is not None:
            usage = ch.usage
        for c in ch.choices:
            if isinstance(ch, ChatCompletionChunk):
                text += c.delta.content or ""
            else:
                text += c.text
            if c.finish_reason is not None:
                finish.append(c.finish_reason)
    return text, finish, usage, chunks


def expect_refused(exc_type, status, code, param, call):
    """call() raises exc_type whose status, code and param (attributes and
    the error body) are these."""
    try:
        call()
    except exc_type as e:
        expect(e.status_code == status, "status %d" % e.status_code)
        body = e.body if isinstance(e.body, dict) else {}
        expect(e.code == code and body.get("code") == code,
               "code %r, body %r" % (e.code, e.body))
        expect(e.param == param and body.get("param") == param,
               "param %r, body %r" % (e.param, e.body))
        expect(e.type == "invalid_request_error" and e.message,
               "type %r message %r" % (e.type, e.message))
        return
    raise AssertionError("no %s raised" % exc_type.__name__)


# ---- the model list ----

@check("models.list names the served model")
def _():
    ids = [m.id for m in client.models.list()]
    expect(ids == [MODEL], "ids %r, expected [%r]" % (ids, MODEL))


@check("models.retrieve: the served model's detail with its context; an "
       "unknown id is a NotFoundError")
def _():
    m = client.models.retrieve(MODEL)
    expect(m.id == MODEL and m.object == "model" and m.owned_by == "egang",
           "model %r" % m)
    meta = (m.model_extra or {}).get("meta") or {}
    expect(meta.get("n_ctx") == 512 and meta.get("n_vocab") == 512,
           "meta %r" % meta)
    try:
        client.models.retrieve("no-such-model")
    except openai.NotFoundError as e:
        expect(e.code == "model_not_found", "code %r" % e.code)
        return
    raise AssertionError("no NotFoundError")


# ---- chat, greedy, whole and streamed ----

@check("chat.completions.create: a whole greedy reply, usage counted")
def _():
    r = chat(max_tokens=24, temperature=0)
    expect(isinstance(r, ChatCompletion) and r.object == "chat.completion",
           "object %r" % r.object)
    expect(r.model == MODEL and len(r.choices) == 1, "model %r, %d choices"
           % (r.model, len(r.choices)))
    c = r.choices[0]
    seen["greedy"], seen["usage"] = c.message.content, r.usage
    expect(c.message.role == "assistant" and c.message.content,
           "message %r" % c.message)
    usage_ok(r.usage, 24)
    # 24 tokens without the end of text: max_tokens ended it; the
    # max_tokens and stop checks below rest on this
    expect(c.finish_reason == "length" and r.usage.completion_tokens == 24,
           "finish_reason %r after %d tokens" % (c.finish_reason,
                                                 r.usage.completion_tokens))


@check("chat streamed: the deltas make the same text, one finish_reason, "
       "usage in a chunk")
def _():
    s = chat(max_tokens=24, temperature=0, stream=True,
             stream_options={"include_usage": True})
    text, finish, usage, chunks = streamed(s)
    expect(all(isinstance(c, ChatCompletionChunk) and
               c.object == "chat.completion.chunk" for c in chunks),
           "chunk types")
    expect(len({c.id for c in chunks}) == 1, "chunk ids differ")
    expect(chunks[0].choices[0].delta.role == "assistant",
           "first delta %r" % chunks[0].choices[0].delta)
    expect(text == seen["greedy"], "%r vs %r" % (text, seen["greedy"]))
    expect(finish == ["length"], "finish_reasons %r" % finish)
    usage_ok(usage, 24)
    expect(usage.completion_tokens == seen["usage"].completion_tokens and
           usage.prompt_tokens == seen["usage"].prompt_tokens,
           "usage %s vs %s" % (usage, seen["usage"]))


# ---- completions ----

@check("completions.create: greedy text equals egang generate")
def _():
    r = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=24,
                                  temperature=0)
    seen["cmpl_finish"] = r.choices[0].finish_reason
    expect(isinstance(r, Completion) and r.object == "text_completion",
           "object %r" % r.object)
    expect(r.choices[0].text == WANT, "%r vs %r" % (r.choices[0].text, WANT))
    usage_ok(r.usage, 24)


@check("completions streamed: the chunks make the same text")
def _():
    s = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=24,
                                  temperature=0, stream=True)
    text, finish, usage, _ = streamed(s)
    expect(text == WANT, "%r vs %r" % (text, WANT))
    expect(finish == [seen["cmpl_finish"]], "finish_reasons %r" % finish)
    usage_ok(usage, 24)


# ---- sampling fields ----

@check("seed: the same seed at temperature 1 gives the same text, "
       "another seed another")
def _():
    a = chat(max_tokens=24, temperature=1, seed=1234).choices[0].message
    b = chat(max_tokens=24, temperature=1, seed=1234).choices[0].message
    c = chat(max_tokens=24, temperature=1, seed=1235).choices[0].message
    expect(a.content and a.content == b.content,
           "%r vs %r" % (a.content, b.content))
    expect(c.content != a.content, "seed 1235 gave seed 1234's text")


@check("n=2: two choices, choice i the request alone with seed+i, the "
       "prompt counted once; streamed, deltas tagged with their index")
def _():
    r = chat(max_tokens=12, temperature=1, seed=77, n=2)
    expect(sorted(c.index for c in r.choices) == [0, 1],
           "indices %r" % [c.index for c in r.choices])
    texts = [c.message.content for c in sorted(r.choices, key=lambda c: c.index)]
    alone = [chat(max_tokens=12, temperature=1, seed=77 + i) for i in (0, 1)]
    expect(texts == [a.choices[0].message.content for a in alone],
           "%r vs %r" % (texts, [a.choices[0].message.content for a in alone]))
    expect(r.usage.prompt_tokens == alone[0].usage.prompt_tokens and
           r.usage.completion_tokens == sum(a.usage.completion_tokens
                                            for a in alone),
           "usage %s" % r.usage)
    with chat(max_tokens=12, temperature=1, seed=77, n=2, stream=True) as st:
        by = {}
        for ch in st:
            for c in ch.choices:
                by[c.index] = by.get(c.index, "") + (c.delta.content or "")
    expect([by.get(0), by.get(1)] == texts, "streamed %r vs %r" % (by, texts))
    k = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=24,
                                  temperature=0, n=2)
    expect([c.text for c in k.choices] == [WANT, WANT],
           "completions n=2 greedy %r" % [c.text for c in k.choices])


@check("max_tokens and max_completion_tokens honoured (finish_reason "
       "length)")
def _():
    for kw in ({"max_tokens": 5}, {"max_completion_tokens": 5}):
        r = chat(temperature=0, **kw)
        c = r.choices[0]
        expect(c.finish_reason == "length" and
               r.usage.completion_tokens == 5,
               "%s: finish_reason %r, %d tokens" % (
                   kw, c.finish_reason, r.usage.completion_tokens))
        expect(seen["greedy"].startswith(c.message.content),
               "%s: %r is not the start of %r" % (kw, c.message.content,
                                                   seen["greedy"]))
    r = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=5,
                                  temperature=0)
    expect(r.choices[0].finish_reason == "length" and
           r.usage.completion_tokens == 5 and WANT.startswith(
               r.choices[0].text), "completions: %r" % r.choices[0])


def stop_of(text):
    """A 3-character stop string from the second half of text and where
    text first holds it (> 0), so the cut leaves some text."""
    for k in range(len(text) // 2, len(text) - 2):
        s = text[k:k + 3]
        if text.find(s) > 0:
            return s, text.find(s)
    raise AssertionError("no stop string in %r" % text)


@check("stop strings cut the text before the first match (finish_reason "
       "stop), whole and streamed")
def _():
    s, at = stop_of(seen["greedy"])
    want = seen["greedy"][:at]
    c = chat(max_tokens=24, temperature=0, stop=["#%~", s]).choices[0]
    expect(c.message.content == want and c.finish_reason == "stop",
           "stop %r: %r %r, expected %r" % (s, c.message.content,
                                           c.finish_reason, want))
    text, finish, _, _ = streamed(chat(max_tokens=24, temperature=0,
                                       stop=s, stream=True))
    expect(text == want and finish == ["stop"],
           "streamed stop %r: %r %r" % (s, text, finish))


@check("chat logprobs/top_logprobs parse as the client's models; greedy's "
       "token on top")
def _():
    r = chat(max_tokens=12, temperature=0, logprobs=True, top_logprobs=3)
    c = r.choices[0]
    content = c.logprobs.content if c.logprobs else None
    seen["logprobs"] = [(e.token, e.logprob, [(t.token, t.logprob)
                                              for t in e.top_logprobs or []])
                        for e in content or []]
    expect(isinstance(c.logprobs, ChoiceLogprobs) and content,
           "logprobs %r" % c.logprobs)
    expect(len(content) == r.usage.completion_tokens == 12,
           "%d entries, %d tokens" % (len(content),
                                      r.usage.completion_tokens))
    for i, e in enumerate(content):
        expect(isinstance(e, ChatCompletionTokenLogprob), "entry %d" % i)
        top = e.top_logprobs
        expect(len(top) == 3 and all(isinstance(t, TopLogprob)
                                     for t in top), "entry %d top %r"
               % (i, top))
        lps = [t.logprob for t in top]
        expect(lps == sorted(lps, reverse=True) and lps[0] <= 0,
               "entry %d: top not sorted %r" % (i, lps))
        expect(e.token == top[0].token and e.logprob == top[0].logprob,
               "entry %d: greedy's %r is not the top %r" % (i, e.token,
                                                            top[0]))
        expect(e.bytes == list(e.token.encode()),
               "entry %d: bytes %r for %r" % (i, e.bytes, e.token))
    text = "".join(e.token for e in content)
    expect(text == c.message.content and seen["greedy"].startswith(text),
           "tokens %r, content %r" % (text, c.message.content))


@check("chat logprobs streamed: the same tokens and values")
def _():
    got = []
    _, _, _, chunks = streamed(chat(max_tokens=12, temperature=0,
                                    logprobs=True, top_logprobs=3,
                                    stream=True))
    for ch in chunks:
        for c in ch.choices:
            if c.logprobs is not None and c.logprobs.content:
                got += [(e.token, e.logprob, [(t.token, t.logprob)
                                              for t in e.top_logprobs or []])
                        for e in c.logprobs.content]
    expect(got and got == seen["logprobs"],
           "%r vs %r" % (got[:2], seen["logprobs"][:2]))


@check("completions logprobs: tokens, token_logprobs, top_logprobs, "
       "text_offset")
def _():
    r = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=8,
                                  temperature=0, logprobs=2)
    c = r.choices[0]
    lp = c.logprobs
    n = r.usage.completion_tokens
    expect(len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs)
           == len(lp.text_offset) == n, "lengths for %d tokens" % n)
    expect("".join(lp.tokens) == c.text, "%r vs %r" % (lp.tokens, c.text))
    off = 0
    for i, t in enumerate(lp.tokens):
        expect(lp.text_offset[i] == off, "text_offset %r" % lp.text_offset)
        off += len(t.encode())
        top = lp.top_logprobs[i]
        expect(1 <= len(top) <= 2 and max(top.values()) ==
               lp.token_logprobs[i], "token %d: %r %r" % (
                   i, t, top))


@check("logit_bias 100 forces the token at temperature 1")
def _():
    piece = http("POST", "/detokenize", {"tokens": [428]})["content"]
    expect(piece, "token 428 detokenizes to nothing")
    r = chat(max_tokens=8, temperature=1, seed=5, logit_bias={"428": 100},
             logprobs=True)
    c = r.choices[0]
    expect(c.message.content == piece * 8, "%r, expected 8 x %r"
           % (c.message.content, piece))
    expect([e.token for e in c.logprobs.content] == [piece] * 8,
           "tokens %r" % [e.token for e in c.logprobs.content])


# ---- errors as the client's exceptions ----

@check("a tool_choice naming a function not in tools raises "
       "BadRequestError (param tool_choice)")
def _():
    expect_refused(openai.BadRequestError, 400, None, "tool_choice",
                   lambda: chat(max_tokens=4, tools=[TOOL], tool_choice={
                       "type": "function", "function": {"name": "nope"}}))


# ---- tools ----

def tool_call_ok(call):
    """A call of TOOL as the client parses it: id, type, name, and
    arguments that json.loads reads as TOOL's schema wants."""
    expect(call.type == "function" and call.id.startswith("call_"),
           "call %r" % call)
    expect(call.function.name == "w", "name %r" % call.function.name)
    args = json.loads(call.function.arguments)
    expect(args in ({"c": "P"}, {"c": "R"}), "arguments %r" % args)


@check("tools with a named tool_choice: message.tool_calls[0] has the "
       "function's name and JSON arguments, finish_reason tool_calls")
def _():
    r = client.chat.completions.create(
        model=MODEL, messages=TOOL_ASK, tools=[TOOL], max_tokens=64,
        temperature=0, tool_choice={"type": "function",
                                    "function": {"name": "w"}})
    c = r.choices[0]
    seen["tool_message"] = c.message
    expect(c.finish_reason == "tool_calls", "finish_reason %r: %r"
           % (c.finish_reason, c.message))
    expect(c.message.content is None and len(c.message.tool_calls) == 1,
           "message %r" % c.message)
    tool_call_ok(c.message.tool_calls[0])


@check("tools streamed (tool_choice required): the tool_calls deltas "
       "assemble into the same call, no content")
def _():
    s = client.chat.completions.create(
        model=MODEL, messages=TOOL_ASK, tools=[TOOL], max_tokens=64,
        temperature=0, tool_choice="required", stream=True)
    with s:
        chunks = list(s)
    calls, finish, content = {}, [], ""
    for ch in chunks:
        for c in ch.choices:
            if c.finish_reason:
                finish.append(c.finish_reason)
            content += c.delta.content or ""
            for tc in c.delta.tool_calls or []:
                if tc.index not in calls:  # the first: id, type, name
                    expect(tc.id and tc.type == "function" and
                           tc.function.name, "first delta %r" % tc)
                    calls[tc.index] = [tc.id, tc.function.name, ""]
                calls[tc.index][2] += tc.function.arguments or ""
    expect(finish == ["tool_calls"], "finish_reasons %r" % finish)
    expect(content == "", "content deltas %r beside the call" % content)
    expect(list(calls) == [0], "calls %r" % calls)
    want = seen["tool_message"].tool_calls[0].function
    expect(calls[0][1:] == [want.name, want.arguments],
           "streamed %r, whole %r" % (calls[0], want))
    expect(json.loads(calls[0][2]) in ({"c": "P"}, {"c": "R"}),
           "arguments %r" % calls[0][2])


@check("the call and its result sent back (the client's assistant message, "
       "a role tool message): a text answer")
def _():
    m = seen["tool_message"]
    r = client.chat.completions.create(
        model=MODEL, tools=[TOOL], tool_choice="none", max_tokens=8,
        temperature=0, messages=TOOL_ASK + [m, {
            "role": "tool", "tool_call_id": m.tool_calls[0].id,
            "content": "sunny"}])
    c = r.choices[0]
    expect(isinstance(c.message.content, str) and not c.message.tool_calls and
           c.finish_reason in ("stop", "length"), "choice %r" % c)


@check("response_format json_schema: the content is JSON valid under the "
       "schema (required keys, types, maxLength)")
def _():
    schema = {"type": "object",
              "properties": {"name": {"type": "string", "maxLength": 12},
                             "age": {"type": "integer"}},
              "required": ["name", "age"], "additionalProperties": False}
    r = chat(max_tokens=300, temperature=0, response_format={
        "type": "json_schema",
        "json_schema": {"name": "person", "schema": schema, "strict": True}})
    text = r.choices[0].message.content
    expect(r.choices[0].finish_reason == "stop", "finish_reason %s: %r" % (
        r.choices[0].finish_reason, text))
    doc = json.loads(text)
    expect(sorted(doc) == ["age", "name"], "keys %r" % sorted(doc))
    expect(isinstance(doc["name"], str) and len(doc["name"]) <= 12 and
           isinstance(doc["age"], int) and not isinstance(doc["age"], bool),
           "values %r" % doc)


@check("response_format with an unsupported schema keyword raises "
       "BadRequestError naming the schema path")
def _():
    try:
        chat(max_tokens=4, response_format={
            "type": "json_schema", "json_schema": {"name": "n", "schema": {
                "type": "object",
                "properties": {"n": {"type": "integer", "minimum": 0}}}}})
    except openai.BadRequestError as e:
        expect(e.status_code == 400 and e.param == "response_format",
               "status %d param %r" % (e.status_code, e.param))
        expect("#/properties/n/minimum" in str(e), str(e)[:200])
    else:
        expect(False, "no exception")


@check("extra_body grammar constrains a completion; an unknown field raises "
       "BadRequestError naming it")
def _():
    r = client.completions.create(
        model=MODEL, prompt=PROMPT, max_tokens=8, temperature=0,
        extra_body={"grammar": 'root ::= "a" [0-9] [0-9] [0-9]'})
    t = r.choices[0].text
    expect(len(t) == 4 and t[0] == "a" and t[1:].isdigit(), repr(t))
    expect_refused(openai.BadRequestError, 400, "unsupported_parameter",
                   "frobnicate", lambda: chat(
                       max_tokens=4, extra_body={"frobnicate": 1}))


@check("an unknown model raises NotFoundError (param model)")
def _():
    expect_refused(openai.NotFoundError, 404, "model_not_found", "model",
                   lambda: client.chat.completions.create(
                       model="gpt-4o", messages=MESSAGES, max_tokens=4))


@check("a wrong API key raises AuthenticationError")
def _():
    bad = new_client(key=KEY + "x")
    for call in (lambda: bad.models.list(),
                 lambda: bad.chat.completions.create(
                     model=MODEL, messages=MESSAGES, max_tokens=4)):
        try:
            call()
        except openai.AuthenticationError as e:
            expect(e.status_code == 401, "status %d" % e.status_code)
            continue
        raise AssertionError("no AuthenticationError")


# ---- clients that leave early ----

@check("streams closed after their first chunk (more than --parallel) are "
       "cancelled; the server still answers")
def _():
    c0 = cancelled_total()
    for i in range(4):
        # ~480 tokens, the end of text banned: far longer than the
        # client takes to read one chunk and close
        with client.completions.create(model=MODEL, prompt=PROMPT,
                                       max_tokens=480, temperature=1,
                                       seed=i, logit_bias={"2": -100},
                                       stream=True) as s:
            for ch in s:
                if ch.choices and ch.choices[0].text:
                    break
    c1 = c0
    for _ in range(100):
        c1 = cancelled_total()
        if c1 > c0:
            break
        time.sleep(0.1)
    expect(c1 > c0, "egang_generations_cancelled_total stayed %d" % c0)
    r = chat(max_tokens=24, temperature=0)
    expect(r.choices[0].message.content == seen["greedy"],
           "after the closes: %r" % r.choices[0].message.content)


@check("a client timeout (APITimeoutError) leaves the server answering, "
       "two requests at once")
def _():
    quick = new_client(timeout=0.01)
    try:
        quick.completions.create(model=MODEL, prompt=PROMPT, max_tokens=480,
                                 temperature=1, seed=9,
                                 logit_bias={"2": -100})
        raise AssertionError("480 tokens came back within 10 ms")
    except openai.APITimeoutError:
        pass
    out = [None, None]

    def one(i):
        out[i] = chat(max_tokens=24, temperature=0).choices[0].message.content
    ts = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    expect(out == [seen["greedy"]] * 2, "replies %r" % out)
