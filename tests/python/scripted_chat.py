"""A local OpenAI-compatible chat-completions server that replays a scripted conversation: each request gets the
next scripted step, a message (its tool calls' arguments given as dicts are sent as JSON strings, as servers do),
an HTTP status to fail with, or a delay longer than the client waits. It records every request (body and headers)
for the test to inspect."""
import http.server
import json
import threading
import time


def tool_call(i: int, name: str, arguments) -> dict:
    return {"id": f"call_{i}", "type": "function",
            "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}}


def says(text: str = "", *calls) -> dict:
    """An assistant message: text, and tool calls given as (name, arguments) pairs."""
    message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [tool_call(i, name, args) for i, (name, args) in enumerate(calls)]
    return message


class Fail:
    def __init__(self, status: int):
        self.status = status


class Stall:
    def __init__(self, seconds: float):
        self.seconds = seconds


class ScriptedChatServer:
    def __init__(self, script: list):
        self.script, self.requests = list(script), []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                step = server.script.pop(0) if server.script else says("(the script is over)")
                if isinstance(step, Stall):
                    time.sleep(step.seconds)
                    step = says("too late")
                if isinstance(step, Fail):
                    self.send_response(step.status)
                    self.end_headers()
                    self.wfile.write(b'{"error": "scripted failure"}')
                    return
                payload = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                                      "choices": [{"index": 0, "message": step, "finish_reason": "stop"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
