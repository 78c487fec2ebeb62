#!/usr/bin/env python3
# Test helper (not shipped behaviour): a `command` harness agent for the runner's tests.
# Reads the job input JSON from stdin and plays input.scenario. Standard library only.
import json, os, random, socket, subprocess, sys, time

def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

job = json.load(sys.stdin)
inp = job["input"]
sc = inp.get("scenario", "basic")

if sc == "basic":
    with open("invocation.json", "w") as f:
        json.dump({"job": job, "cwd": os.getcwd(), "env": dict(os.environ), "stdin_rest": sys.stdin.read()}, f)
    emit({"type": "message", "data": {"role": "assistant", "text": "working"}})
    print("a plain line")
    print("warning on stderr", file=sys.stderr)
    emit({"type": "tool.call", "data": {"id": "t1", "name": "Bash", "input": {"command": "ls"}}})
    emit({"type": "tool.result", "data": {"id": "t1", "name": "Bash", "output": "x" * 70000, "isError": False}})
    emit({"type": "usage", "data": {"inputTokens": 5, "outputTokens": 7, "cacheReadTokens": 0, "cacheWriteTokens": 0, "model": "m"}})
    emit({"type": "session", "data": {"id": "sess-py-1"}})
    emit({"type": "result", "data": {"summary": "all done"}})
    sys.exit(0)

if sc == "chunks":
    # A 200 KB event line, a malformed line and a result line with a multi-byte character,
    # written in random chunk sizes; one cut falls inside the 4-byte character.
    rnd = random.Random(int(inp.get("seed", 1)))
    big = {"type": "message", "data": {"role": "assistant", "text": "é" * 100 + "b" * 200_000}}
    lines = [json.dumps(big, ensure_ascii=False), '{"type": "message", "data": {"role": "assistant"', '{"type":"tool.call","data":{"id":1}}',
             json.dumps({"type": "message", "data": {"role": "assistant", "text": "fin 🚀 ok"}}, ensure_ascii=False)]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    rocket = data.index("🚀".encode("utf-8"))
    cuts = sorted(set([rocket + 2] + [rnd.randrange(1, len(data)) for _ in range(40)]))
    prev = 0
    for c in cuts + [len(data)]:
        sys.stdout.buffer.write(data[prev:c])
        sys.stdout.buffer.flush()
        prev = c
        time.sleep(0.002)
    sys.exit(0)

if sc == "fail":
    print("something broke", file=sys.stderr)
    sys.exit(3)

if sc == "prompt":
    # An interactive question nobody will answer (stdin is at EOF): it waits forever.
    sys.stdout.write("Overwrite existing files? [y/N] ")
    sys.stdout.flush()
    time.sleep(3600)

if sc == "turns":
    for i in range(int(inp.get("turns", 5))):
        emit({"type": "usage", "data": {"inputTokens": 1, "outputTokens": 1, "cacheReadTokens": 0, "cacheWriteTokens": 0}})
        time.sleep(0.05)
    time.sleep(3600)

if sc == "sleep":
    time.sleep(float(inp.get("seconds", 3600)))
    sys.exit(0)

if sc == "write":
    # Read-only mode: try to write to the workspace and report what happened as a tool call.
    emit({"type": "tool.call", "data": {"id": "w1", "name": "Write", "input": {"file_path": "out.txt"}}})
    try:
        with open("out.txt", "w") as f:
            f.write("hello\n")
        emit({"type": "tool.result", "data": {"id": "w1", "name": "Write", "output": "wrote out.txt", "isError": False}})
    except OSError as e:
        emit({"type": "tool.result", "data": {"id": "w1", "name": "Write", "output": str(e), "isError": True}})
    with open(os.path.join(os.environ["HOME"], "home-write.txt"), "w") as f:
        f.write("home is writable\n")
    sys.exit(0)

if sc == "grandchild":
    # A grandchild in its own session (setsid) listening on a port, then wait.
    port = int(inp["port"])
    code = ("import socket,time,os\n"
            "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', %d)); s.listen()\n"
            "open('listening','w').write(str(os.getpid()))\n"
            "time.sleep(3600)\n") % port
    subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    emit({"type": "message", "data": {"role": "assistant", "text": "serving"}})
    time.sleep(3600)

if sc == "resume":
    # First job: leave an uncommitted file and a session. Resumed job: read it back.
    if job["resumeSessionId"] is None:
        with open("notes.txt", "w") as f:
            f.write("remember me\n")
        emit({"type": "session", "data": {"id": "sess-resume-1"}})
    else:
        with open("notes.txt") as f:
            emit({"type": "message", "data": {"role": "assistant", "text": "found: " + f.read().strip()}})
        emit({"type": "session", "data": {"id": inp.get("answerSession", job["resumeSessionId"])}})
    sys.exit(0)

print("unknown scenario " + sc, file=sys.stderr)
sys.exit(2)
