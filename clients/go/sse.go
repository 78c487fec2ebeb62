package flotilla

import (
	"strconv"
	"strings"
)

// sseEvent is one dispatched Server-Sent Event: Event defaults to "message"; Retry is in
// milliseconds, -1 when the event set none.
type sseEvent struct {
	Event string
	Data  string
	ID    string
	Retry int
}

// sseParser is a line-by-line parser of a text/event-stream body
// (https://html.spec.whatwg.org/multipage/server-sent-events.html): id, event, data
// (multi-line joined with "\n"), retry and ":" comments.
type sseParser struct {
	event string
	data  []string
	id    string
	retry int
}

func newSseParser() *sseParser { return &sseParser{retry: -1} }

// feed takes one line (with or without its end) and returns an event when a blank line ends one.
func (p *sseParser) feed(line string) (sseEvent, bool) {
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		if len(p.data) == 0 && p.event == "" && p.retry < 0 {
			p.id = ""
			return sseEvent{}, false
		}
		ev := sseEvent{Event: p.event, Data: strings.Join(p.data, "\n"), ID: p.id, Retry: p.retry}
		if ev.Event == "" {
			ev.Event = "message"
		}
		p.event, p.data, p.id, p.retry = "", nil, "", -1
		return ev, true
	}
	if strings.HasPrefix(line, ":") {
		return sseEvent{}, false
	}
	name, value, _ := strings.Cut(line, ":")
	value = strings.TrimPrefix(value, " ")
	switch name {
	case "event":
		p.event = value
	case "data":
		p.data = append(p.data, value)
	case "id":
		if !strings.ContainsRune(value, 0) {
			p.id = value
		}
	case "retry":
		if n, err := strconv.Atoi(value); err == nil && n >= 0 {
			p.retry = n
		}
	}
	return sseEvent{}, false
}
