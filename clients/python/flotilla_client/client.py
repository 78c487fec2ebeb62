"""The Flotilla API client (standard library only).

Paths, bodies and replies are the ones ``/openapi.json`` describes (``clients/python/tests``
checks every path/method used here against a running server's spec). Money is returned as the
server returns it: integer micro-dollars (``costMicros``, ``budgetMicros``); ``budget_usd`` in
:meth:`Client.create_job` is dollars (the API's ``budgetUsd``).
"""
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

from .errors import BadResponse, FlotillaError, NetworkError, ServerError, error_from_reply
from .sse import SseParser

JOB_STATUSES = ("queued", "assigned", "running", "paused", "cancelling", "succeeded", "failed", "cancelled", "lost")
COST_GROUPS = ("job", "tree", "agent", "runner", "day")


def _job_id(value, field="job id"):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError("%s must be a positive integer, got %r" % (field, value))
    return str(value)


class Client:
    """Client of one Flotilla control plane.

    Args:
        url: base URL, e.g. ``http://127.0.0.1:8787`` (a trailing slash is fine).
        token: API token (``fla_...``), sent as ``Authorization: Bearer``; never in errors.
        timeout: seconds to wait for a reply (and for the next byte of an event stream).
        reconnect_delay: first delay before reconnecting a dropped event stream, seconds
            (doubles per failure up to 5 s; the server's ``retry:`` overrides it).
        max_reconnects: consecutive failed reconnects before :meth:`follow_events` gives up.

    Raises:
        ValueError: when ``url`` is not an http(s) URL.
    Every method raises a :class:`~flotilla_client.errors.FlotillaError` subclass on an error
    reply (per status: 400 BadRequest, 401 Unauthorized, 403 Forbidden, 404 NotFound,
    409 Conflict, 422 InvalidInput, 5xx ServerError), NetworkError when the server cannot be
    reached, BadResponse on a reply that is not JSON.
    """

    def __init__(self, url, token=None, timeout=30.0, reconnect_delay=0.25, max_reconnects=10):
        parsed = urllib.parse.urlparse(url or "")
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError("url %r must start with http:// or https:// and name a host" % (url,))
        self.url = url.rstrip("/")
        self._token = token
        self.timeout = timeout
        self.reconnect_delay = reconnect_delay
        self.max_reconnects = max_reconnects

    def __repr__(self):
        return "Client(%r)" % self.url  # never the token

    # --- jobs -----------------------------------------------------------------------------

    def create_job(self, agent, input=None, labels=None, budget_usd=None, priority=None):
        """``POST /api/jobs`` → the queued job (dict, ``Job`` in the spec).

        Args:
            agent: agent name. input: the agent's input object (checked against its
            inputSchema: 422 InvalidInput). labels: runner selector ``{k: v}``.
            budget_usd: the job tree's budget in dollars (> 0). priority: -100..100.
        Raises NotFound (``unknown_agent``), InvalidInput, BadRequest, Forbidden (members);
        ValueError before sending when agent is not a non-empty string or input/labels not dicts.
        """
        if not isinstance(agent, str) or not agent:
            raise ValueError("agent must be a non-empty string, got %r" % (agent,))
        for name, value in (("input", input), ("labels", labels)):
            if value is not None and not isinstance(value, dict):
                raise ValueError("%s must be a dict, got %s" % (name, type(value).__name__))
        body = {"agent": agent}
        if input is not None:
            body["input"] = input
        if labels is not None:
            body["labels"] = labels
        if budget_usd is not None:
            body["budgetUsd"] = budget_usd
        if priority is not None:
            body["priority"] = priority
        return self._request("POST", "/api/jobs", body)

    def get_job(self, job_id):
        """``GET /api/jobs/{id}`` → the job with its ``usage`` (tokens, model calls, ``costMicros``)."""
        return self._request("GET", "/api/jobs/" + _job_id(job_id))

    def list_jobs(self, status=None, agent=None, limit=None, before=None):
        """``GET /api/jobs`` → ``{"jobs": [...], "nextCursor": id|None}``, newest first.

        ``limit`` 1..200 (server default 50); ``before`` is the previous page's nextCursor.
        """
        if status is not None and status not in JOB_STATUSES:
            raise ValueError("status must be one of %s, got %r" % (", ".join(JOB_STATUSES), status))
        q = {k: v for k, v in (("status", status), ("agent", agent), ("limit", limit), ("before", before)) if v is not None}
        return self._request("GET", "/api/jobs" + ("?" + urllib.parse.urlencode(q) if q else ""))

    def job_tree(self, job_id):
        """``GET /api/jobs/{id}/tree`` → ``{rootId, jobs, total, tree}``: each node's status,
        agent, runner, tokens and ``costMicros``, and its ``children``; ``total`` sums the subtree."""
        return self._request("GET", "/api/jobs/%s/tree" % _job_id(job_id))

    def cancel_job(self, job_id):
        """``POST /api/jobs/{id}/cancel`` → the job; Conflict (``not_cancellable``) when it already ended."""
        return self._request("POST", "/api/jobs/%s/cancel" % _job_id(job_id), {})

    # --- fleet and costs ------------------------------------------------------------------

    def list_runners(self):
        """``GET /api/runners`` → the list of runners (dicts: id, name, labels, status, capacity, ...)."""
        reply = self._request("GET", "/api/runners")
        if not isinstance(reply, dict) or not isinstance(reply.get("runners"), list):
            raise BadResponse(200, "bad_response", "GET /api/runners: the reply has no runners list")
        return reply["runners"]

    def list_runner_tokens(self, all_tokens=False):
        """``GET /api/runner-tokens[?all=true]`` (admin) → the runner registration tokens, oldest
        first (dicts: id, labels, status ``live``/``used``/``expired``/``revoked``, createdAt,
        expiresAt, usedAt, revokedAt; never a token itself): only the live ones (unused, not
        revoked, not expired) unless ``all_tokens`` is true.
        """
        if not isinstance(all_tokens, bool):
            raise ValueError("all_tokens must be True or False, got %r" % (all_tokens,))
        reply = self._request("GET", "/api/runner-tokens" + ("?all=true" if all_tokens else ""))
        if not isinstance(reply, dict) or not isinstance(reply.get("tokens"), list):
            raise BadResponse(200, "bad_response", "GET /api/runner-tokens: the reply has no tokens list")
        return reply["tokens"]

    def revoke_runner_token(self, token_id):
        """``POST /api/runner-tokens/{id}/revoke`` (admin) → the token (dict as in
        :meth:`list_runner_tokens`), ``revoked``: no runner can register with it any more.
        Repeating it is fine; a token already used stays ``used`` (revoke its runner instead).
        Raises NotFound for an unknown id, ValueError for an id that is not a positive integer.
        """
        return self._request("POST", "/api/runner-tokens/%s/revoke" % _job_id(token_id, "token id"), {})

    def costs(self, by="agent", since=None, root=None):
        """``GET /api/costs`` → ``{by, since, rows, total}``: calls, tokens and ``costMicros`` per group.

        Args: by: one of job, tree, agent, runner, day. since: ``30m``/``12h``/``7d``/``2w`` or
        an ISO-8601 date (server default 30d). root: only this job tree (job id).
        """
        if by not in COST_GROUPS:
            raise ValueError("by must be one of %s, got %r" % (", ".join(COST_GROUPS), by))
        q = {"by": by}
        if since is not None:
            q["since"] = since
        if root is not None:
            q["root"] = _job_id(root, "root")
        return self._request("GET", "/api/costs?" + urllib.parse.urlencode(q))

    # --- events ---------------------------------------------------------------------------

    def follow_events(self, job_id, after=0, on_end=None):
        """Follows a job's events (``GET /api/jobs/{id}/events``, SSE); a generator of event dicts
        (``{seq, jobId, at, type, data}``) in seq order, each once.

        If the stream drops before the server's ``end`` event, reconnects with ``Last-Event-ID``
        = the last seq seen (delay doubling from ``reconnect_delay``); after ``max_reconnects``
        failures in a row raises NetworkError. Ends at the ``end`` event, calling
        ``on_end(status)`` with the job's final status. An error reply (401, 404, ...) raises at once.
        """
        path = "/api/jobs/%s/events" % _job_id(job_id)
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise ValueError("after must be an integer >= 0 (an event seq), got %r" % (after,))
        last = after
        failures = 0
        delay = self.reconnect_delay
        problem = ""
        while True:
            if failures:
                if failures > self.max_reconnects:
                    raise NetworkError(0, "network", "event stream of job %s kept failing (%d tries): %s" % (job_id, failures, problem))
                time.sleep(min(delay * 2 ** (failures - 1), 5.0))
            headers = {"accept": "text/event-stream"}
            if last > 0:
                headers["last-event-id"] = str(last)
            try:
                resp = self._open("GET", path, None, headers)
            except FlotillaError as err:
                if not isinstance(err, (NetworkError, ServerError)) and err.status != 429:
                    raise
                failures += 1
                problem = str(err)
                continue
            with resp:
                ctype = resp.headers.get("content-type", "")
                if not ctype.startswith("text/event-stream"):
                    raise BadResponse(resp.status, "bad_response", "GET %s: expected an event stream, got %s" % (path, ctype or "no content-type"))
                parser = SseParser()
                try:
                    for raw in resp:
                        ev = parser.feed(raw.decode("utf-8", "replace"))
                        if ev is None:
                            continue
                        if ev.retry is not None:
                            delay = ev.retry / 1000.0
                        if ev.event == "end":
                            if on_end is not None:
                                on_end(_json_or_none(ev.data, {}).get("status"))
                            return
                        if ev.event not in ("job", "message") or not ev.data:
                            continue
                        event = _json_or_none(ev.data, None)
                        if not isinstance(event, dict) or not isinstance(event.get("seq"), int):
                            raise BadResponse(resp.status, "bad_response", "GET %s: bad event %s" % (path, ev.id or "?"))
                        if event["seq"] <= last:
                            continue  # replayed after a reconnect
                        last = event["seq"]
                        failures = 0
                        yield event
                    problem = "the stream ended before the job did"
                except (OSError, socket.timeout, ValueError) as err:
                    problem = "the stream broke: %s" % err
            failures += 1

    # --- transport ------------------------------------------------------------------------

    def _open(self, method, path, body, headers):
        what = "%s %s" % (method, path)
        headers = dict(headers)
        headers["x-flotilla-csrf"] = "1"
        if self._token:
            headers["authorization"] = "Bearer " + self._token
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["content-type"] = "application/json"
        req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        try:
            return urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as err:
            with err:
                raise error_from_reply(err.code, err.read(), what) from None
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise NetworkError(0, "network", "cannot reach the Flotilla server at %s: %s" % (self.url, reason)) from None

    def _request(self, method, path, body=None):
        resp = self._open(method, path, body, {"accept": "application/json"})
        with resp:
            raw = resp.read()
            status = resp.status
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise BadResponse(status, "bad_response", "%s %s: the reply is not JSON" % (method, path)) from None


def _json_or_none(text, default):
    try:
        value = json.loads(text)
    except ValueError:
        return default
    return value if value is not None else default
