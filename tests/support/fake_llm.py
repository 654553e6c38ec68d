#!/usr/bin/env python3
"""A fake OpenAI-compatible chat-completions server for Engram's tests (Python 3 stdlib only).

Usage:
    python3 tests/support/fake_llm.py [--host 127.0.0.1] [--port N]

--port 0 (the default) picks a free port. Once the socket listens, the server prints exactly one
line "LISTENING <port>" on stdout (flushed) and then prints nothing more. It records nothing: no
request log, no files. SIGTERM or SIGINT stops it with exit code 0.

Endpoint: POST <any prefix>/chat/completions (e.g. /v1/chat/completions). Any other path -> 404. A
body that is not a JSON object with a "messages" array -> 400. Answers use the OpenAI shape:
    {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": <request model>,
     "choices": [{"index": 0, "message": {"role": "assistant", "content": <content>},
                  "finish_reason": "stop"}],
     "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}
Nothing depends on the clock, randomness or earlier requests: the same request always gets the
same answer.

Markers, checked first, in this order, in the content of every message of the request:
    FAKE_LLM_HTTP500    -> HTTP 500 {"error": {"message": "fake_llm: forced HTTP 500", ...}}
    FAKE_LLM_ECHO400    -> HTTP 400 whose error message quotes the whole request body, as some
                           endpoints do (the server must not store or return any of it)
    FAKE_LLM_SLOW       -> sleeps 5 s, then carries on as below (the other rules still apply)
    FAKE_LLM_MALFORMED  -> HTTP 200 whose content is not valid JSON ("this is not JSON {")
Note that a marker in a user message also ends up in the extracted facts, so a FAKE_LLM_SLOW
conversation is slow in both phases.

The request kind comes from the first line of the system message, as written by
src/extract/llm_extractor.cc:

"Task: engram.extract_facts.v2" (fact extraction). The user message is JSON
{"messages": [{"index", "role", "content", "name"?, "time"?}, ...]}. For every message with role
"user", in order, its content is split into sentences: a sentence ends at ".", "!" or "?" followed
by whitespace or the end of the text, or at a line break. Each sentence, stripped of surrounding
whitespace and kept with its final punctuation, becomes the fact "<name> said: <sentence>" ("User"
when the message has no name), citing the message's index. Empty sentences are dropped; repeated
ones are kept (the extractor removes duplicates). Assistant and system messages give no facts.
Content: {"facts": [{"text", "sources"}, ...]}.
    "I like tea. I live in Oslo!"  ->  {"facts": [{"text": "User said: I like tea.", "sources": [0]},
                                                  {"text": "User said: I live in Oslo!", "sources": [0]}]}

"Task: engram.reconcile_memories.v1" (update decision). The user message is JSON
{"memories": [{"id", "text"}, ...], "facts": [{"index", "text"}, ...]}. For every fact, in order:
if some memory's text equals the fact's text ignoring case and surrounding whitespace, the decision
is {"fact": i, "event": "NONE", "id": <first such memory's id>}; otherwise it is
{"fact": i, "event": "ADD", "id": null, "text": <fact text>}. It never answers UPDATE or DELETE.
Content: {"decisions": [...]}.

"Task: engram.extract_skills.v1" (skill extraction, src/extract/skill_llm_extractor.cc). The user
message is JSON {"messages": [{"role", "content"}, ...]}. Every user message opens a skill whose
steps are the numbered lines ("1. text" or "2) text") of the assistant messages after it, numbers
stripped; a user message followed by no such line gives no skill. The skill is
{"name": "llm-" + the first four words of the user message (lower-case letters and digits, joined
by "-"), "description": "Learned from: <user message>", "goal": <user message>,
"triggers": [<user message>], "tags": ["fake"], "steps": [...]}. Content: {"skills": [...]}.
    user "Bake sourdough bread please", assistant "1. Mix.\n2. Bake."  ->
    {"skills": [{"name": "llm-bake-sourdough-bread-please", ..., "steps": ["Mix.", "Bake."]}]}

"Task: engram.rerank_memories.v1" (search reranking, src/extract/llm_reranker.cc). The user
message is JSON {"question": q, "memories": [{"id", "text"}, ...]}. The ranking is every offered
id in reverse order (the last offered first), leaving out memories whose text contains
"FAKE_LLM_IRRELEVANT". Content: {"ranking": [...]}.
    memories with ids 0, 1, 2  ->  {"ranking": [2, 1, 0]}

Any other request (no system message, or an unknown first line) -> 400 naming the problem, so that
a change of the prompts' task lines shows up as a clear test failure.
"""

import argparse
import json
import re
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EXTRACT_TASK = "Task: engram.extract_facts.v2"
RECONCILE_TASK = "Task: engram.reconcile_memories.v1"
SKILLS_TASK = "Task: engram.extract_skills.v1"
RERANK_TASK = "Task: engram.rerank_memories.v1"
SLOW_SECONDS = 5.0
MALFORMED_CONTENT = "this is not JSON {"

# A sentence ends after . ! or ? followed by whitespace, or at a line break.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\s*[\r\n]+\s*")


class BadRequest(Exception):
    pass


def split_sentences(text):
    return [s.strip() for s in _SENTENCE_BREAK.split(text) if s.strip()]


def message_text(message):
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def parse_json_object(text, what):
    try:
        value = json.loads(text)
    except ValueError:
        raise BadRequest(f"fake_llm: the user message of a {what} request is not JSON")
    if not isinstance(value, dict):
        raise BadRequest(f"fake_llm: the user message of a {what} request is not a JSON object")
    return value


def user_payload(messages):
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "user":
            return message_text(m)
    raise BadRequest("fake_llm: no user message")


def extract_facts(messages):
    payload = parse_json_object(user_payload(messages), "fact extraction")
    conversation = payload.get("messages")
    if not isinstance(conversation, list):
        raise BadRequest('fake_llm: no "messages" array in the extraction request')
    facts = []
    for m in conversation:
        if isinstance(m, dict) and m.get("role") == "user":
            subject = m.get("name") or "User"
            facts.extend({"text": f"{subject} said: {s}", "sources": [m.get("index")]}
                         for s in split_sentences(message_text(m)))
    return {"facts": facts}


def reconcile(messages):
    payload = parse_json_object(user_payload(messages), "reconcile")
    memories = payload.get("memories")
    facts = payload.get("facts")
    if not isinstance(memories, list) or not isinstance(facts, list):
        raise BadRequest('fake_llm: reconcile request needs "memories" and "facts" arrays')
    decisions = []
    for position, fact in enumerate(facts):
        if not isinstance(fact, dict):
            raise BadRequest("fake_llm: a fact is not an object")
        index = fact.get("index", position)
        text = str(fact.get("text", ""))
        key = text.strip().casefold()
        match = next(
            (m for m in memories
             if isinstance(m, dict) and str(m.get("text", "")).strip().casefold() == key),
            None)
        if match is not None:
            decisions.append({"fact": index, "event": "NONE", "id": match.get("id")})
        else:
            decisions.append({"fact": index, "event": "ADD", "id": None, "text": text})
    return {"decisions": decisions}


_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.+?)\s*$")


def extract_skills(messages):
    payload = parse_json_object(user_payload(messages), "skill extraction")
    conversation = payload.get("messages")
    if not isinstance(conversation, list):
        raise BadRequest('fake_llm: no "messages" array in the skill extraction request')
    skills = []
    current = None
    for m in conversation:
        if not isinstance(m, dict):
            continue
        text = message_text(m)
        if m.get("role") == "user":
            words = re.findall(r"[a-z0-9]+", text.lower())[:4]
            current = {"name": "llm-" + "-".join(words), "description": "Learned from: " + text,
                       "goal": text, "triggers": [text], "tags": ["fake"], "steps": []}
            skills.append(current)
        elif m.get("role") == "assistant" and current is not None:
            for line in text.splitlines():
                match = _NUMBERED.match(line)
                if match:
                    current["steps"].append(match.group(1))
    return {"skills": [s for s in skills if s["steps"]]}


def rerank(messages):
    payload = parse_json_object(user_payload(messages), "rerank")
    memories = payload.get("memories")
    if not isinstance(payload.get("question"), str) or not isinstance(memories, list):
        raise BadRequest('fake_llm: rerank request needs a "question" string and a "memories" array')
    ids = [m.get("id") for m in memories
           if isinstance(m, dict) and "FAKE_LLM_IRRELEVANT" not in str(m.get("text", ""))]
    return {"ranking": list(reversed(ids))}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as libcurl expects from a real API
    server_version = "fake_llm"
    sys_version = ""

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass  # records nothing

    def send_json(self, status, body):
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. timed out on FAKE_LLM_SLOW)

    def send_error_json(self, status, message):
        self.send_json(status, {"error": {"message": message, "type": "fake_llm_error"}})

    def do_GET(self):
        self.send_error_json(404, "fake_llm: only POST .../chat/completions exists")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if not self.path.split("?", 1)[0].endswith("/chat/completions"):
            self.send_error_json(404, "fake_llm: only POST .../chat/completions exists")
            return
        try:
            request = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            self.send_error_json(400, "fake_llm: the body is not JSON")
            return
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
            self.send_error_json(400, 'fake_llm: the body needs a "messages" array')
            return
        messages = request["messages"]
        everything = "\n".join(message_text(m) for m in messages)

        if "FAKE_LLM_HTTP500" in everything:
            self.send_error_json(500, "fake_llm: forced HTTP 500")
            return
        if "FAKE_LLM_ECHO400" in everything:
            self.send_error_json(400, "fake_llm: cannot process " + raw.decode("utf-8", "replace"))
            return
        if "FAKE_LLM_SLOW" in everything:
            time.sleep(SLOW_SECONDS)
        if "FAKE_LLM_MALFORMED" in everything:
            self.send_completion(request, MALFORMED_CONTENT)
            return

        system = next((message_text(m) for m in messages
                       if isinstance(m, dict) and m.get("role") == "system"), None)
        task = system.split("\n", 1)[0].strip() if system is not None else None
        try:
            if task == EXTRACT_TASK:
                answer = extract_facts(messages)
            elif task == RECONCILE_TASK:
                answer = reconcile(messages)
            elif task == SKILLS_TASK:
                answer = extract_skills(messages)
            elif task == RERANK_TASK:
                answer = rerank(messages)
            elif task is None:
                raise BadRequest("fake_llm: no system message, cannot tell the request kind")
            else:
                raise BadRequest("fake_llm: unknown task line in the system message")
        except BadRequest as e:
            self.send_error_json(400, str(e))
            return
        self.send_completion(request, json.dumps(answer, ensure_ascii=False))

    def send_completion(self, request, content):
        self.send_json(200, {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model", ""),
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        })


def main():
    parser = argparse.ArgumentParser(description="Fake OpenAI chat-completions server (tests).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args()

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True  # a sleeping FAKE_LLM_SLOW handler must not block exit

    def stop(signum, frame):
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"LISTENING {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
