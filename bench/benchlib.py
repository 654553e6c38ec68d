"""Shared helpers for the Engram benchmark tools (Python 3 standard library only).

- EngramServer: start `engram serve` on a temporary data directory and port 0, wait for its
  "listening on HOST:PORT" line, stop it with SIGTERM.
- Client: a small keep-alive HTTP/JSON client (one connection per thread).
- percentile(): nearest-rank percentiles used by every tool.
"""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA_DIR = os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "data"))

_LISTEN_RE = re.compile(r"listening on (?:https?://)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9._-]+):(\d+)")


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def write_json(path, obj):
    """A benchmark's --json-out file."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1)
    log(f"wrote {path}")


def percentile(values, p):
    """Nearest-rank percentile (p in 0..100) of a list of numbers; None when empty."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def _f(v, d=2):
    """A figure for a report table: '–' when missing, floats with d decimals."""
    return "–" if v is None else (f"{v:.{d}f}" if isinstance(v, float) else str(v))


def metrics_text(client):
    """The server's /metrics text (Prometheus format), or None when it cannot be read."""
    try:
        status, text, _ = client.request("GET", "/metrics")
    except OSError:
        return None
    return text if status == 200 and isinstance(text, str) else None


def metric_sum(text, name):
    """The sum of metric `name`'s samples over all its label sets in a /metrics text (a gauge
    without labels: its value); None when the text has no sample of it."""
    vals = re.findall(rf"^{re.escape(name)}(?:{{[^}}]*}})?\s+([\d.eE+-]+)", text or "", re.M)
    return sum(float(v) for v in vals) if vals else None


def cpu_name():
    """The CPU's model name (/proc/cpuinfo), named beside every figure."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def rss_kib(pid):
    """VmRSS of a process in KiB (None when unknown)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class EngramServer:
    """Runs `engram serve --listen 127.0.0.1:0 --data-dir <tmp> [--api-key K] [extra...]`."""

    def __init__(self, binary, api_key=None, extra_args=(), keep_data=False, start_timeout=120.0,
                 data_dir=None):
        self.binary = os.path.abspath(binary)
        self.reuse_dir = data_dir   # restart on an existing data dir (cold-start measurements)
        self.api_key = api_key
        self.extra_args = list(extra_args)
        self.keep_data = keep_data
        self.start_timeout = start_timeout
        self.proc = None
        self.data_dir = None
        self.log_path = None
        self.url = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        if not os.access(self.binary, os.X_OK):
            raise SystemExit(f"engram binary not found or not executable: {self.binary}")
        if self.reuse_dir:
            self.data_dir = self.reuse_dir
        else:
            self.data_dir = tempfile.mkdtemp(prefix="engram-bench-")
        self.log_path = os.path.join(self.data_dir, "server.log")
        store = self.store_dir
        os.makedirs(store, exist_ok=True)
        cmd = [self.binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", store]
        if self.api_key:
            cmd += ["--api-key", self.api_key]
        cmd += self.extra_args
        log("starting:", " ".join(cmd))
        logf = open(self.log_path, "ab")
        self._log_start = logf.tell()
        self.proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=REPO_ROOT)
        logf.close()
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_start)
                text = f.read().decode("utf-8", "replace")
            m = _LISTEN_RE.search(text)
            if m:
                host, port = m.group(1), m.group(2)
                if host in ("0.0.0.0", "::", "[::]"):
                    host = "127.0.0.1"
                self.url = f"http://{host}:{port}"
                log(f"server pid {self.proc.pid} ready at {self.url}")
                return
            if self.proc.poll() is not None:
                raise SystemExit(f"engram exited with code {self.proc.returncode} before listening; "
                                 f"log:\n{text[-4000:]}")
            time.sleep(0.05)
        self.stop()
        raise SystemExit(f"engram did not print 'listening on' within {self.start_timeout:.0f}s")

    @property
    def store_dir(self):
        return os.path.join(self.data_dir, "data")

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def log_tail(self, n=4000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")[-n:]
        except (OSError, TypeError):
            return ""

    def stop(self, remove=True):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                log("server did not exit 20 s after SIGTERM; sending SIGKILL")
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.returncode not in (0, -signal.SIGTERM, None):
            log(f"note: server exit code {self.proc.returncode}")
        if not remove:
            pass
        elif self.data_dir and not self.keep_data:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        elif self.data_dir:
            log(f"kept server data dir {self.data_dir}")
        self.proc = None


class HttpError(Exception):
    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status
        self.body = body


class Client:
    """JSON-over-HTTP client with one keep-alive connection per thread."""

    def __init__(self, url, api_key=None, timeout=120.0):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", ""):
            raise SystemExit(f"only http:// URLs are supported: {url}")
        self.host = u.hostname or "127.0.0.1"
        self.port = u.port or 80
        self.base = u.path.rstrip("/")
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self._local = threading.local()

    def _conn(self):
        c = getattr(self._local, "conn", None)
        if c is None:
            c = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            c.connect()
            # headers and body go out in one send() already; NODELAY keeps Nagle out regardless
            c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._local.conn = c
        return c

    def _drop(self):
        c = getattr(self._local, "conn", None)
        if c is not None:
            c.close()
        self._local.conn = None

    def request(self, method, path, body=None, retries=2):
        """Returns (status, parsed JSON or text, seconds). Reconnects on a dropped connection."""
        data = None if body is None else (body if isinstance(body, (bytes, bytearray))
                                           else json.dumps(body).encode("utf-8"))
        last = None
        for attempt in range(retries + 1):
            conn = self._conn()
            try:
                t0 = time.perf_counter()
                conn.request(method, self.base + path, body=data, headers=self.headers)
                resp = conn.getresponse()
                raw = resp.read()
                dt = time.perf_counter() - t0
                if resp.getheader("Connection", "").lower() == "close":
                    self._drop()
                text = raw.decode("utf-8", "replace")
                try:
                    parsed = json.loads(text) if text else None
                except ValueError:
                    parsed = text
                return resp.status, parsed, dt
            except (http.client.HTTPException, ConnectionError, OSError) as e:
                last = e
                self._drop()
                time.sleep(0.05 * (attempt + 1))
        raise last

    def post_json(self, path, body):
        status, parsed, dt = self.request("POST", path, body)
        if status != 200:
            raise HttpError(status, json.dumps(parsed) if not isinstance(parsed, str) else parsed)
        return parsed, dt


def dir_bytes(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def require_loopback(url):
    host = urllib.parse.urlsplit(url).hostname or ""
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"refusing to load-test {host}: only 127.0.0.1 / localhost targets are allowed")
