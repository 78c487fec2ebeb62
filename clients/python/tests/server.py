"""Starts a real Flotilla server for the tests: ``flotilla up --port 0`` (any free port) with a
temp data dir, the test agents and a local runner, on the offline scripted model.

The repository root is ``$FLOTILLA_ROOT`` or three folders up from this file; ``bin/flotilla.js``
needs ``dist/`` (``npx tsc -p tsconfig.build.json``).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.environ.get("FLOTILLA_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


class Server:
    """A running ``flotilla up``: ``url``, ``token`` (admin), ``output()``; ``stop()`` ends it."""

    def __init__(self, timeout=60.0):
        self.data = tempfile.mkdtemp(prefix="flotilla-py-client-")
        # Only the flags below count: no FLOTILLA_* setting or DATABASE_URL from the caller's shell.
        env = {k: v for k, v in os.environ.items() if not k.startswith("FLOTILLA_") and k != "DATABASE_URL"}
        env.update(ANTHROPIC_API_KEY="", FLOTILLA_HEARTBEAT_INTERVAL_MS="1000")
        args = ["node", os.path.join(ROOT, "bin", "flotilla.js"), "up", "--port", "0", "--data", os.path.join(self.data, "data"),
                "--agents", os.path.join(ROOT, "test", "fixtures", "agents")]
        self._proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._lines = []
        self._url_seen = threading.Event()
        self.url = None
        threading.Thread(target=self._read, daemon=True).start()
        if not self._url_seen.wait(timeout) or not self.url:
            self.stop()
            raise RuntimeError("flotilla up did not start within %ss:\n%s" % (timeout, self.output()))
        with open(os.path.join(self.data, "data", "admin-token")) as f:
            self.token = f.read().strip()

    def _read(self):
        for raw in self._proc.stdout:
            line = raw.decode("utf-8", "replace")
            self._lines.append(line)
            m = re.search(r"server on (http://\S+)", line)
            if m and not self.url:
                self.url = m.group(1)
                self._url_seen.set()
        self._url_seen.set()

    def output(self):
        """Everything the server printed so far."""
        return "".join(self._lines)

    def stop(self):
        """Stops the server (SIGTERM, then SIGKILL after 10 s) and removes its data dir."""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
        shutil.rmtree(self.data, ignore_errors=True)


def wait_for(what, fn, timeout=60.0, every=0.2):
    """Calls ``fn`` until it returns a truthy value (returned), or raises after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            v = fn()
            if v:
                return v
        except Exception as err:  # noqa: BLE001 - kept for the timeout message
            last = err
        time.sleep(every)
    raise AssertionError("timed out after %ss waiting for %s%s" % (timeout, what, ": %s" % last if last else ""))


if __name__ == "__main__":
    s = Server()
    print(s.url, file=sys.stderr)
    s.stop()
