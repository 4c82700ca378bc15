#!/usr/bin/env bats
# Exposed ports under load of the HTTP kind (sbx-net(1), EXPOSED PORTS), on
# runc and runsc, from loopback only: every request of a kept-alive or
# pipelined connection is checked and stripped of the host token before
# the sandbox sees a byte of it; idle connections that never send a head
# cannot lock others out, and are cut at the head deadline.
#
# The sandbox's server is busybox nc running a shell script per
# connection: it appends every byte it receives to /tmp/rx.log (every line,
# its CR kept, and a mark where each connection begins) and answers each
# request head `ok`, keeping the connection, as keep-alive servers do.

load ../helpers/common

setup () {
  sbx_setup
  sbx_import_payload
}

# keepalive_server ID: the logging keep-alive server on the sandbox's 8080.
keepalive_server () {
  # Line by line rather than through tee(1), whose reading of a socket
  # ends the connection early under runsc; lines keep their CR.
  cat >"$SBX_TEST_DIR/srv.sh" <<'EOF'
#!/bin/sh
cr=$(printf '\r')
head=0
echo "== connection" >>/tmp/rx.log
while IFS= read -r line; do
  printf '%s\n' "$line" >>/tmp/rx.log
  case $line in
    *" HTTP/1."?"$cr") head=1 ;;
    "$cr")
      if [ $head = 1 ]; then
        printf 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nok\n'
        head=0
      fi
      ;;
  esac
done
printf '%s' "$line" >>/tmp/rx.log
EOF
  sbx cp "$SBX_TEST_DIR/srv.sh" "$1:/srv.sh"
  sbx exec "$1" -- chmod 755 /srv.sh
  sbx exec -d "$1" -- nc -ll -p 8080 -e /srv.sh >/dev/null
  sleep 0.5
}

# clients URL TOKEN: a keep-alive client (http.client, as requests.Session
# or a browser reuses connections), a pipelining one, and a keep-alive one
# whose second request has no token. Prints what each got.
clients () {
  py - "$1" "$2" <<'EOF'
import http.client, socket, sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
auth = "Bearer " + sys.argv[2]
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
got = []
for method, path, body in (("GET", "/ka1", None), ("GET", "/ka2", None), ("POST", "/ka3", b"abc")):
    c.request(method, path, body=body, headers={"Authorization": auth})
    r = c.getresponse()
    got.append("%d %s" % (r.status, r.read().decode().strip()))
print("keepalive:", " ".join(got))
c.close()

def raw(data, shut=True):
    s = socket.create_connection((u.hostname, u.port), timeout=10)
    s.sendall(data)
    if shut:
        s.shutdown(socket.SHUT_WR)
    out = b""
    while True:
        x = s.recv(65536)
        if not x:
            break
        out += x
    s.close()
    return out

a = auth.encode()
out = raw(b"GET /p1 HTTP/1.1\r\nHost: x\r\nAuthorization: " + a + b"\r\n\r\n"
          b"GET /p2 HTTP/1.1\r\nHost: x\r\nauthorization: bearer " + sys.argv[2].encode() + b"\r\n\r\n"
          b"POST /p3 HTTP/1.1\r\nAuthorization: " + a + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
          b"3\r\nxyz\r\n0\r\n\r\n")
print("pipelined:", out.count(b"HTTP/1.1 200 OK"), "answers")

s = socket.create_connection((u.hostname, u.port), timeout=10)
s.sendall(b"GET /u1 HTTP/1.1\r\nHost: x\r\nAuthorization: " + a + b"\r\n\r\n")
first = s.recv(65536)
s.sendall(b"GET /u2 HTTP/1.1\r\nHost: x\r\n\r\n")
s.settimeout(5)
rest = b""
try:
    while True:
        x = s.recv(65536)
        if not x:
            break
        rest += x
except socket.timeout:
    rest += b"(no end)"
print("later:", first.split(b"\r\n")[0].decode(), "then", rest.split(b"\r\n")[0].decode())
EOF
}

every_request_checked () {
  local rt=$1 id url token log
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload)
  keepalive_server "$id"
  url=$(sbx --json expose "$id" 8080 | jpipe 'd["url"]')
  token=$(cat "$SBX_ROOT/token")
  run clients "$url" "$token"
  expect_status 0
  sleep 0.5
  log=$(sbx exec "$id" -- cat /tmp/rx.log)
  # The token never reached the sandbox, nor any Authorization header.
  expect_not_contains "$log" "$token"
  grep -qi authorization <<<"$log" && fail "an Authorization header reached the sandbox"
  # The server got every request that passed, on three connections...
  expect_eq "$(grep -o '== connection' <<<"$log" | wc -l)" 3 "connections the server saw"
  local r
  for r in "GET /ka1 " "GET /ka2 " "POST /ka3 " "GET /p1 " "GET /p2 " "POST /p3 " "GET /u1 "; do
    expect_contains "$log" "$r"
  done
  expect_contains "$log" "xyz"
  # ...and none that did not.
  expect_not_contains "$log" "/u2"
  expect_eq "${lines[0]}" "keepalive: 200 ok 200 ok 200 ok" "a keep-alive client's three requests"
  expect_eq "${lines[1]}" "pipelined: 3 answers" "three pipelined requests"
  expect_eq "${lines[2]}" "later: HTTP/1.1 200 OK then HTTP/1.1 401 Unauthorized" "a later request without the token"
  return 0
}

@test "expose: keep-alive and pipelined requests are each checked, the token never reaches the sandbox (runc)" {
  every_request_checked runc
}

@test "expose: keep-alive and pipelined requests are each checked, the token never reaches the sandbox (runsc)" {
  every_request_checked runsc
}

# The proxy runs in the monitor, on the host: the runtime does not matter.
@test "expose: 300 idle connections do not lock out a request with the token; the head deadline cuts them" {
  require_runtime runc
  local id url token
  sbx_write_conf "expose_head_timeout = 1"
  id=$(sbx create --runtime runc --image payload)
  keepalive_server "$id"
  url=$(sbx --json expose "$id" 8080 | jpipe 'd["url"]')
  token=$(cat "$SBX_ROOT/token")
  run py - "$url" "$token" <<'EOF'
import socket, sys, time, urllib.parse, urllib.request
u = urllib.parse.urlsplit(sys.argv[1])
idle = [socket.create_connection((u.hostname, u.port), timeout=10) for _ in range(300)]
time.sleep(0.3)
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]})
with urllib.request.urlopen(req, timeout=5) as r:
    print("with the token:", r.status, r.read().decode().strip())
# The deadline (1 s): an idle connection is closed, one that began a head
# gets 408.
s = socket.create_connection((u.hostname, u.port), timeout=10)
h = socket.create_connection((u.hostname, u.port), timeout=10)
h.sendall(b"GET / HTTP/1.1\r\n")
t0 = time.monotonic()
print("idle:", repr(s.recv(100)), "begun:", h.recv(100).split(b"\r\n")[0].decode())
took = time.monotonic() - t0
print("cut after", "about 1 s" if 0.5 <= took <= 3 else "%.2f s" % took)
for c in idle:
    c.close()
EOF
  expect_status 0
  expect_eq "${lines[0]}" "with the token: 200 ok"
  expect_eq "${lines[1]}" "idle: b'' begun: HTTP/1.1 408 Request Timeout"
  expect_eq "${lines[2]}" "cut after about 1 s"
}

# unexpose_cycle RUNTIME: sbx unexpose closes the port at once: a kept-alive
# connection through it is closed, a new one refused; urls and status stop
# listing it; exposing it again gives a URL that answers. Its errors.
unexpose_cycle () {
  local rt=$1 id url token again
  require_runtime "$rt"
  id=$(sbx create --runtime "$rt" --image payload)
  keepalive_server "$id"
  # Nothing exposed yet (no proxy at all): NOT_FOUND.
  expect_error NOT_FOUND unexpose "$id" 8080
  url=$(sbx --json expose "$id" 8080 | jpipe 'd["url"]')
  sbx expose "$id" 8081 >/dev/null
  token=$(cat "$SBX_ROOT/token")
  run py - "$url" "$token" "$SBX_BIN" "$id" <<'EOF'
import http.client, socket, subprocess, sys, time, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
c.request("GET", "/before", headers={"Authorization": "Bearer " + sys.argv[2]})
r = c.getresponse()
print("before:", r.status, r.read().decode().strip())
out = subprocess.run([sys.argv[3], "unexpose", sys.argv[4], "8080"], capture_output=True, text=True)
print("unexpose:", out.returncode, out.stdout.strip())
t0 = time.monotonic()
c.sock.settimeout(5)
try:
    got = c.sock.recv(100)
except ConnectionResetError:
    got = b""
except socket.timeout:
    got = b"(still open)"
print("open connection:", repr(got), "at once" if time.monotonic() - t0 < 2 else "late")
try:
    socket.create_connection((u.hostname, u.port), timeout=5).close()
    print("new connection: accepted")
except ConnectionRefusedError:
    print("new connection: refused")
EOF
  expect_status 0
  expect_eq "${lines[0]}" "before: 200 ok"
  expect_eq "${lines[1]}" "unexpose: 0 $id port 8080 unexposed"
  expect_eq "${lines[2]}" "open connection: b'' at once"
  expect_eq "${lines[3]}" "new connection: refused"
  # urls and status list 8081 only.
  run sbx urls "$id"
  expect_status 0
  expect_not_contains "$output" "$url"
  expect_eq "$(cut -f1 <<<"$output")" 8081 "the ports sbx urls lists"
  expect_eq "$(sbx --json status "$id" | jpipe '" ".join(x.split()[0] for x in d["network"]["urls"])')" 8081 \
    "the ports sbx status lists"
  # The errors: again, a port never exposed, a port out of range.
  expect_error NOT_FOUND unexpose "$id" 8080
  expect_error NOT_FOUND unexpose "$id" 9999
  expect_error INVALID_ARGUMENT unexpose "$id" 0
  # Exposed again: a URL that answers.
  again=$(sbx --json expose "$id" 8080 | jpipe 'd["url"]')
  run py - "$again" "$token" <<'EOF'
import sys, urllib.request
req = urllib.request.Request(sys.argv[1] + "again", headers={"Authorization": "Bearer " + sys.argv[2]})
with urllib.request.urlopen(req, timeout=10) as r:
    print(r.status, r.read().decode().strip())
EOF
  expect_status 0
  expect_eq "$output" "200 ok" "exposed again"
  expect_eq "$(sbx urls "$id" | cut -f1 | sort | tr '\n' ' ')" "8080 8081 " "listed again"
  run sbx --json unexpose "$id" 8081
  expect_status 0
  expect_eq "$(jpipe 'd["id"] + " " + str(d["port"])' <<<"$output")" "$id 8081"
  sbx terminate "$id" >/dev/null
  expect_error SANDBOX_NOT_RUNNING unexpose "$id" 8080
}

@test "unexpose: the URL refuses at once, open connections close, urls and status stop listing it (runc)" {
  unexpose_cycle runc
}

@test "unexpose: the URL refuses at once, open connections close, urls and status stop listing it (runsc)" {
  unexpose_cycle runsc
}
