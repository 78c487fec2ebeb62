"""Event-stream resume and 5xx handling against a small local HTTP server that misbehaves on
purpose: the first stream drops after two events, the reconnect must carry Last-Event-ID: 2."""
import json
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from flotilla_client import Client, NetworkError, ServerError
from flotilla_client.sse import SseParser


def event(seq):
    body = {"seq": seq, "jobId": 7, "at": "2026-01-01T00:00:00.000Z", "type": "message", "data": {"role": "assistant", "text": "e%d" % seq}}
    return ("id: %d\nevent: job\ndata: %s\n\n" % (seq, json.dumps(body))).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    seen = []  # (path, Last-Event-ID header, authorization header)

    def log_message(self, *args):
        pass

    def do_GET(self):
        Handler.seen.append((self.path, self.headers.get("last-event-id"), self.headers.get("authorization")))
        if self.path == "/api/jobs/7/events":
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            if len([s for s in Handler.seen if s[0] == self.path]) == 1:
                self.wfile.write(b": hello\nretry: 10\n\n" + event(1) + event(2))  # then drops
            else:
                self.wfile.write(event(2) + event(3) + b'event: end\ndata: {"status":"succeeded"}\n\n')
            return
        if self.path == "/api/jobs/8/events":
            self.send_response(503)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error":{"code":"unavailable","message":"try later"}}')
            return
        self.send_response(500)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error":{"code":"internal","message":"it broke"}}')


class Resume(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=cls.httpd.serve_forever, daemon=True).start()
        cls.url = "http://127.0.0.1:%d" % cls.httpd.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.httpd.shutdown()
        cls.httpd.server_close()

    def test_reconnects_with_last_event_id_and_yields_each_event_once(self):
        Handler.seen.clear()
        ended = []
        got = [e["data"]["text"] for e in Client(self.url, "fla_secret", reconnect_delay=0.01).follow_events(7, on_end=ended.append)]
        self.assertEqual(got, ["e1", "e2", "e3"])
        self.assertEqual(ended, ["succeeded"])
        self.assertEqual([s[1] for s in Handler.seen], [None, "2"])
        self.assertEqual({s[2] for s in Handler.seen}, {"Bearer fla_secret"})

    def test_a_5xx_is_a_server_error_with_the_servers_code(self):
        with self.assertRaises(ServerError) as ctx:
            Client(self.url, "fla_secret").get_job(1)
        self.assertEqual((ctx.exception.status, ctx.exception.code, ctx.exception.message), (500, "internal", "it broke"))
        self.assertNotIn("fla_secret", str(ctx.exception))

    def test_a_stream_that_keeps_failing_gives_up_with_a_network_error(self):
        c = Client(self.url, "fla_secret", reconnect_delay=0.001, max_reconnects=2)
        with self.assertRaises(NetworkError) as ctx:
            list(c.follow_events(8))
        self.assertIn("kept failing (3 tries)", str(ctx.exception))
        self.assertNotIn("fla_secret", str(ctx.exception))

    def test_unreachable_server_is_a_network_error(self):
        with self.assertRaises(NetworkError) as ctx:
            Client("http://127.0.0.1:9", "fla_secret", timeout=5).list_jobs()
        self.assertEqual((ctx.exception.status, ctx.exception.code), (0, "network"))


class Parser(unittest.TestCase):
    def test_multiline_data_comments_and_ids(self):
        p = SseParser()
        out = [p.feed(line) for line in [": c", "id: 4", "event: job", "data: a", "data:b", "", "retry: 50", ""]]
        evs = [e for e in out if e]
        self.assertEqual([(e.event, e.data, e.id, e.retry) for e in evs], [("job", "a\nb", "4", None), ("message", "", None, 50)])


if __name__ == "__main__":
    unittest.main()
