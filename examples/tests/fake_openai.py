"""A stand-in OpenAI-compatible chat completions server for the `agent_http` example's
CI check: it streams (SSE) a `multiply` tool call in argument pieces, then, once the
conversation holds the tool's answer, the reply text in pieces.

    python3 examples/tests/fake_openai.py   # prints the port it listens on
"""

import json
from http.server import BaseHTTPRequestHandler, HTTPServer


class Completions(BaseHTTPRequestHandler):
    calls = 0

    def do_POST(self):
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Completions.calls += 1
        reply = f"chatcmpl-{Completions.calls}"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()

        def send(delta, finish=None):
            event = {"id": reply, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()

        if not any(m["role"] == "tool" for m in body["messages"]):
            head = {"index": 0, "id": "call-1", "type": "function", "function": {"name": "multiply", "arguments": ""}}
            send({"role": "assistant", "tool_calls": [head]})
            for piece in ['{"a": 2340', ', "b": 0.175}']:
                send({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        else:
            for piece in ["17.5% ", "of 2340 ", "is ", "409.5."]:
                send({"content": piece})
        send({}, "stop")
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Completions)
print(server.server_address[1], flush=True)
server.serve_forever()
