"""The Python client against a real Flotilla server (``flotilla up``, scripted model, hello-py agent).

Expected figures come from the agent's script (test/fixtures/agents/hello-py/script.yaml): two
model calls of 120+160 input and 30+5 output tokens on claude-sonnet-4-5 at $3 / $15 per million
tokens → 280*3 + 35*15 = 1365 micro-dollars.
"""
import json
import re
import unittest
import urllib.request

from flotilla_client import Client, Conflict, Forbidden, InvalidInput, NotFound, Unauthorized
from flotilla_client import client as client_module

from .server import Server, wait_for

SERVER = None
CALLS = []  # (method, path) of every request the client made
REAL_OPEN = client_module.Client._open


def setUpModule():
    global SERVER
    SERVER = Server()
    def recording_open(self, method, path, body, headers):
        CALLS.append((method, path))
        return REAL_OPEN(self, method, path, body, headers)

    client_module.Client._open = recording_open
    c = Client(SERVER.url, SERVER.token)
    wait_for("the local runner", lambda: any(r["status"] == "online" for r in c.list_runners()), 60)


def tearDownModule():
    client_module.Client._open = REAL_OPEN
    if SERVER:
        SERVER.stop()


class JobToTheEnd(unittest.TestCase):
    def test_start_a_job_and_follow_it_to_the_end(self):
        c = Client(SERVER.url, SERVER.token)
        job = c.create_job("hello-py", input={}, labels={}, budget_usd=1)
        self.assertEqual(job["agent"], "hello-py")
        # queued, or already assigned when a runner was free
        self.assertIn(job["status"], ("queued", "assigned"))
        self.assertEqual(job["budgetMicros"], 1_000_000)
        ended = []
        events = list(c.follow_events(job["id"], on_end=ended.append))
        self.assertEqual(ended, ["succeeded"], SERVER.output())
        self.assertEqual([e["seq"] for e in events], list(range(1, len(events) + 1)))
        self.assertTrue(all(e["jobId"] == job["id"] for e in events))
        self.assertEqual(events[-1]["type"], "job.finished")
        self.assertEqual(events[-1]["data"]["status"], "succeeded")
        calls = [e["data"]["input"] for e in events if e["type"] == "tool.call"]
        self.assertEqual(calls, [{"command": "echo hello > out.txt"}])
        self.assertIn({"role": "assistant", "text": "done"}, [e["data"] for e in events if e["type"] == "message"])

        # Resume from a seq: only the later events, once each.
        later = list(c.follow_events(job["id"], after=5))
        self.assertEqual([e["seq"] for e in later], [e["seq"] for e in events[5:]])

        got = c.get_job(job["id"])
        self.assertEqual(got["status"], "succeeded")
        self.assertEqual(got["result"]["changedFiles"], ["out.txt"])
        self.assertEqual((got["usage"]["inputTokens"], got["usage"]["outputTokens"], got["usage"]["modelCalls"]), (280, 35, 2))
        self.assertEqual(got["usage"]["costMicros"], 1365)

        tree = c.job_tree(job["id"])
        self.assertEqual((tree["rootId"], tree["jobs"], tree["tree"]["id"], tree["tree"]["children"]), (job["id"], 1, job["id"], []))
        self.assertEqual(tree["total"]["costMicros"], 1365)

        costs = c.costs(by="job", root=job["id"])
        self.assertEqual([(r["key"], r["calls"], r["costMicros"]) for r in costs["rows"]], [(str(job["id"]), 2, 1365)])

        listed = c.list_jobs(status="succeeded", agent="hello-py", limit=200)
        self.assertIn(job["id"], [j["id"] for j in listed["jobs"]])
        runners = c.list_runners()
        self.assertEqual(len(runners), 1)
        self.assertEqual(got["runnerId"], runners[0]["id"])

    def test_cancel_a_queued_job(self):
        c = Client(SERVER.url, SERVER.token)
        # No runner has this label: the job waits in the queue until cancelled.
        job = c.create_job("hello-py", labels={"toolchain": "none-such"})
        cancelled = c.cancel_job(job["id"])
        self.assertIn(cancelled["status"], ("cancelling", "cancelled"))
        ended = []
        events = list(c.follow_events(job["id"], on_end=ended.append))
        self.assertEqual(ended, ["cancelled"])
        self.assertEqual(c.get_job(job["id"])["status"], "cancelled")
        self.assertEqual(events[-1]["data"]["status"], "cancelled")
        with self.assertRaises(Conflict) as ctx:
            c.cancel_job(job["id"])
        self.assertEqual((ctx.exception.status, ctx.exception.code), (409, "not_cancellable"))


def _create_runner_token(token, labels):
    """POST /api/runner-tokens (not a client method): a live registration token's id."""
    req = urllib.request.Request(SERVER.url + "/api/runner-tokens", json.dumps({"labels": labels}).encode(),
                                 {"authorization": "Bearer " + token, "content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(req) as r:
        return json.load(r)["id"]


class RunnerTokens(unittest.TestCase):
    def test_list_and_revoke_runner_registration_tokens(self):
        c = Client(SERVER.url, SERVER.token)
        a = _create_runner_token(SERVER.token, {"pool": "py-a"})
        b = _create_runner_token(SERVER.token, {"pool": "py-b"})
        live = {t["id"]: t for t in c.list_runner_tokens()}
        self.assertEqual((live[a]["status"], live[a]["labels"], live[a]["revokedAt"], live[a]["usedAt"]), ("live", {"pool": "py-a"}, None, None))
        self.assertEqual(live[b]["status"], "live")
        self.assertTrue(all("token" not in t for t in live.values()))

        revoked = c.revoke_runner_token(a)
        self.assertEqual((revoked["id"], revoked["status"]), (a, "revoked"))
        self.assertIsInstance(revoked["revokedAt"], str)
        self.assertEqual(c.revoke_runner_token(a)["revokedAt"], revoked["revokedAt"])  # again: unchanged
        self.assertNotIn(a, [t["id"] for t in c.list_runner_tokens()])
        self.assertIn(b, [t["id"] for t in c.list_runner_tokens()])
        every = {t["id"]: t["status"] for t in c.list_runner_tokens(all_tokens=True)}
        self.assertEqual((every[a], every[b]), ("revoked", "live"))

        with self.assertRaises(NotFound) as ctx:
            c.revoke_runner_token(2_000_000_000)
        self.assertEqual((ctx.exception.status, ctx.exception.code), (404, "not_found"))
        for bad in (0, -1, "7", 1.5, True):
            with self.assertRaises(ValueError):
                c.revoke_runner_token(bad)
        with self.assertRaises(ValueError):
            c.list_runner_tokens(all_tokens="yes")
        req = urllib.request.Request(SERVER.url + "/api/tokens", json.dumps({"name": "py-member", "role": "member"}).encode(),
                                     {"authorization": "Bearer " + SERVER.token, "content-type": "application/json"}, method="POST")
        with urllib.request.urlopen(req) as r:
            member = Client(SERVER.url, json.load(r)["token"])
        with self.assertRaises(Forbidden):
            member.list_runner_tokens()
        with self.assertRaises(Forbidden):
            member.revoke_runner_token(b)


class TypedErrors(unittest.TestCase):
    def test_each_status_has_its_error(self):
        c = Client(SERVER.url, SERVER.token)
        with self.assertRaises(Unauthorized) as ctx:
            Client(SERVER.url, "fla_wrong_secret_123").list_jobs()
        self.assertEqual((ctx.exception.status, ctx.exception.code), (401, "unauthorized"))
        self.assertNotIn("fla_wrong_secret_123", str(ctx.exception))

        with self.assertRaises(NotFound) as ctx:
            c.create_job("no-such-agent")
        self.assertEqual((ctx.exception.status, ctx.exception.code), (404, "unknown_agent"))
        with self.assertRaises(NotFound) as ctx:
            c.get_job(987654)
        self.assertEqual(ctx.exception.status, 404)

        with self.assertRaises(InvalidInput) as ctx:
            c.create_job("hello-py", input={"repo": 5})
        self.assertEqual((ctx.exception.status, ctx.exception.code, ctx.exception.field), (422, "invalid_input", "input.repo"))

        req = urllib.request.Request(SERVER.url + "/api/tokens", json.dumps({"name": "reader", "role": "member"}).encode(),
                                     {"authorization": "Bearer " + SERVER.token, "content-type": "application/json"}, method="POST")
        with urllib.request.urlopen(req) as r:
            member = json.load(r)["token"]
        with self.assertRaises(Forbidden) as ctx:
            Client(SERVER.url, member).create_job("hello-py")
        self.assertEqual((ctx.exception.status, ctx.exception.code), (403, "forbidden"))
        self.assertIsInstance(Client(SERVER.url, member).list_jobs()["jobs"], list)

    def test_bad_arguments_are_refused_before_sending(self):
        c = Client(SERVER.url, SERVER.token)
        for bad in (0, -1, "7", 1.5, True):
            with self.assertRaises(ValueError):
                c.get_job(bad)
        with self.assertRaises(ValueError):
            c.costs(by="week")
        with self.assertRaises(ValueError):
            c.create_job("")
        with self.assertRaises(ValueError):
            c.create_job("hello-py", input=["not", "a", "dict"])
        with self.assertRaises(ValueError):
            next(c.follow_events(1, after=-1))
        with self.assertRaises(ValueError):
            Client("ftp://x")


class MatchesTheSpec(unittest.TestCase):
    def test_every_path_and_method_the_client_uses_is_in_openapi_json(self):
        c = Client(SERVER.url, SERVER.token)
        job = c.create_job("hello-py", labels={"toolchain": "none-such"}, priority=1)
        c.get_job(job["id"])
        c.list_jobs(status="queued", agent="hello-py", limit=5, before=job["id"] + 1)
        c.job_tree(job["id"])
        c.costs(by="agent", since="7d", root=job["id"])
        c.list_runners()
        c.list_runner_tokens()
        c.list_runner_tokens(all_tokens=True)
        c.revoke_runner_token(_create_runner_token(SERVER.token, {}))
        c.cancel_job(job["id"])
        list(c.follow_events(job["id"], after=1))
        with urllib.request.urlopen(SERVER.url + "/openapi.json") as r:
            spec = json.load(r)
        used = set(CALLS)
        self.assertGreaterEqual({m for m, _ in used}, {"GET", "POST"})
        for method, path in sorted(used):
            url_path, _, query = path.partition("?")
            op = self._operation(spec, method, url_path)
            self.assertIsNotNone(op, "%s %s is not in /openapi.json" % (method, url_path))
            names = {p["name"] for p in op.get("parameters", []) if p.get("in") == "query"}
            for pair in filter(None, query.split("&")):
                self.assertIn(pair.split("=")[0], names, "%s %s: query parameter not in the spec" % (method, url_path))
        # The create body's fields are the spec's CreateJobRequest properties.
        props = spec["components"]["schemas"]["CreateJobRequest"]["properties"]
        self.assertLessEqual({"agent", "input", "labels", "budgetUsd", "priority"}, set(props))

    @staticmethod
    def _operation(spec, method, url_path):
        for template, ops in spec["paths"].items():
            pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
            if re.match(pattern, url_path) and method.lower() in ops:
                return ops[method.lower()]
        return None


if __name__ == "__main__":
    unittest.main()
