"""One JSON request to `kforge serve` (or the pool in front of several): the service's API speaks JSON both ways and
takes a bearer token where it asks for one (beyond loopback, `--tokens`)."""
import json
import urllib.error
import urllib.request


def http_json(method: str, url: str, body=None, timeout: float = 60, token: str = "", raw: bytes | None = None):
    """(HTTP status, the reply's JSON); an error status is answered, not raised (the service explains it in JSON).
    `raw`: the body's bytes as they are, in place of `body` (a test of malformed requests)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    # A JSON body says so: cpp-httplib caps bodies of the default form-urlencoded type at 8 KiB (a 413).
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")
