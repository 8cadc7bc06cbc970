"""Runs a command against a fake OpenAI-compatible chat endpoint on loopback.

    run-fake-llm.py --requests REQ.jsonl -- COMMAND...

Serves POST /v1/chat/completions on 127.0.0.1 (a free port), sets
KOPT_LLM_BASE_URL, KOPT_LLM_MODEL and KOPT_LLM_API_KEY for COMMAND, records
every request body as a JSON line in REQ.jsonl, and exits with COMMAND's
status. The fake model: its first answer is prose without JSON (the adapter
must ask again), its second a server error (the adapter must retry); after
that it reads the domains from the prompt's "Space:" line and answers, in a
code fence, schedules that vary stages and block_k of the default schedule
(with one value outside its domain, which the adapter must drop).
"""
import http.server
import json
import re
import subprocess
import sys
import threading

args = sys.argv[1:]
requests_path = args[args.index("--requests") + 1]
command = args[args.index("--") + 1:]
lock = threading.Lock()
count = [0]
offset = [0]


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:
            count[0] += 1
            n = count[0]
            with open(requests_path, "a") as f:
                f.write(json.dumps({"path": self.path,
                                    "auth": self.headers.get("Authorization"),
                                    "body": json.loads(body)}) + "\n")
        if self.path != "/v1/chat/completions":
            self.send_response(404)
            self.end_headers()
            return
        if n == 2:
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"overloaded")
            return
        req = json.loads(body)
        text = req["messages"][-1]["content"]
        if n == 1:
            content = "Let me think about the tile sizes first."
        else:
            prompt = next(m["content"] for m in req["messages"] if m["role"] == "user")
            space = json.loads(re.search(r"^Space: (.*)$", prompt, re.M).group(1))
            default = json.loads(re.search(r"^Default schedule: (.*)$", prompt, re.M).group(1))
            want = int(re.search(r"Propose (\d+) new schedules", prompt).group(1))
            d = space["domains"]
            out = [dict(default, block_k=12345)]
            with lock:
                for i in range(want):
                    j = offset[0] + i
                    out.append(dict(default, stages=d["stages"][j % len(d["stages"])],
                                    swizzle=d["swizzle"][(j // len(d["stages"])) % len(d["swizzle"])]))
                offset[0] += want
            content = "Here you are:\n```json\n" + json.dumps({"schedules": out}) + "\n```"
        reply = {"id": "fake", "object": "chat.completion",
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                              "finish_reason": "stop"}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
env = dict(__import__("os").environ,
           KOPT_LLM_BASE_URL=f"http://127.0.0.1:{server.server_address[1]}/v1",
           KOPT_LLM_MODEL="fake-model", KOPT_LLM_API_KEY="test-key")
rc = subprocess.call(command, env=env)
server.shutdown()
sys.exit(rc)
