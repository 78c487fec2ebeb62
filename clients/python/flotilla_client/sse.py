"""A Server-Sent Events parser (https://html.spec.whatwg.org/multipage/server-sent-events.html).

Feed it lines of a ``text/event-stream`` body; it returns an event each time a blank line ends
one. Only what Flotilla's event stream uses: ``id``, ``event``, ``data`` (multi-line joined with
``\\n``), ``retry`` (milliseconds) and ``:`` comments.
"""


class SseEvent:
    """One dispatched event: ``event`` (default ``message``), ``data`` (str), ``id`` (str or
    None when the event had no id), ``retry`` (int milliseconds or None)."""

    __slots__ = ("event", "data", "id", "retry")

    def __init__(self, event, data, id_, retry):
        self.event = event
        self.data = data
        self.id = id_
        self.retry = retry


class SseParser:
    """Line-by-line SSE parser; call :meth:`feed` with each line (str, with or without its end)."""

    def __init__(self):
        self._event = ""
        self._data = []
        self._id = None
        self._retry = None

    def feed(self, line):
        """Takes one line; returns an :class:`SseEvent` when the line ends an event, else None."""
        line = line.rstrip("\r\n")
        if line == "":
            if not self._data and not self._event and self._retry is None:
                self._id = None
                return None
            ev = SseEvent(self._event or "message", "\n".join(self._data), self._id, self._retry)
            self._event, self._data, self._id, self._retry = "", [], None, None
            return ev
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry":
            if value.isdigit():
                self._retry = int(value)
        return None
