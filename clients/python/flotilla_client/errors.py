"""Typed errors of the Flotilla API.

Every error reply of the server has the body ``{"error": {"code", "message", "field"?}}``
(``ApiErrorBody`` in ``/openapi.json``). :func:`error_from_reply` turns a status and body into
the subclass for that status. Messages never contain the API token.
"""
import json


class FlotillaError(Exception):
    """An error from the Flotilla API, or from reaching it.

    Attributes:
        status: the HTTP status (0 when the server could not be reached at all).
        code: the server's stable error code (``unauthorized``, ``unknown_agent``,
            ``invalid_input``, ``not_cancellable``, ...) or one of the client's own:
            ``network`` (no connection), ``bad_response`` (a reply that is not what the
            API describes), ``http_<status>`` (an error reply without an error body).
        message: the server's message (or the client's description).
        field: dotted path of the offending input when the server named one, else None.
    """

    def __init__(self, status, code, message, field=None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field

    def __str__(self):
        where = " (field %s)" % self.field if self.field else ""
        return "%s [%s, HTTP %s]%s" % (self.message, self.code, self.status, where)


class BadRequest(FlotillaError):
    """400: ``invalid_json`` or ``invalid_request`` (names the field)."""


class Unauthorized(FlotillaError):
    """401: missing or unknown API token (``unauthorized``)."""


class Forbidden(FlotillaError):
    """403: the token's role may not do this (``forbidden``: members may only read)."""


class NotFound(FlotillaError):
    """404: no such job, runner or agent (``not_found``, ``unknown_agent``)."""


class Conflict(FlotillaError):
    """409: the request conflicts with the current state (e.g. ``not_cancellable``)."""


class InvalidInput(FlotillaError):
    """422: the job input fails the agent's inputSchema (``invalid_input``)."""


class ServerError(FlotillaError):
    """5xx: the server failed."""


class NetworkError(FlotillaError):
    """The server could not be reached, or an event stream kept failing (status 0, ``network``)."""


class BadResponse(FlotillaError):
    """A reply that does not match the API (not JSON, wrong content type; ``bad_response``)."""


_BY_STATUS = {400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict, 422: InvalidInput}


def error_class(status):
    """The :class:`FlotillaError` subclass for an HTTP status (5xx → ServerError)."""
    if status >= 500:
        return ServerError
    return _BY_STATUS.get(status, FlotillaError)


def error_from_reply(status, body, what):
    """Builds the typed error of a non-2xx reply.

    Args:
        status: HTTP status.
        body: the reply body (bytes).
        what: ``"METHOD /path"`` for the message when the body is not an ApiErrorBody.
    """
    cls = error_class(status)
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    try:
        err = json.loads(text)["error"]
        if isinstance(err, dict) and isinstance(err.get("code"), str) and isinstance(err.get("message"), str):
            return cls(status, err["code"], err["message"], err.get("field"))
    except (ValueError, KeyError, TypeError):
        pass
    snippet = text.strip()[:200]
    return cls(status, "http_%d" % status, "%s: HTTP %d%s" % (what, status, ": " + snippet if snippet else ""))
