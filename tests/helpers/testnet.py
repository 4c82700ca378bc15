"""The network tests' hosts, run inside their own namespace (network.bats).

Every address given on the command line gets a TCP server on port 80 that
answers one line, "hello from ADDR", and closes; one on port 81 that says
the same and then echoes what the client sends, for as long as it sends (a
long-lived connection `sbx net` must cut); a UDP echo on
port 7 ("echo from ADDR: DATA"), and with --dns ADDR a DNS server on ADDR:53
(UDP and TCP) that knows the names given with --name NAME=ADDR[,ADDR] (an A
record for each IPv4 address, AAAA for each IPv6 one); anything else is
NXDOMAIN. It looks nothing up itself. Standard library only.

For the domain rules (domains.bats): --ttl SECONDS (default 60) is the TTL
of every record; --cname NAME=TARGET makes NAME a CNAME of TARGET (the
answer carries the chain and TARGET's records); a known name answers TXT
queries with "hello NAME"; --log FILE appends "NAME TYPE" for every query
the server gets, over UDP or TCP, before it answers.
"""
import selectors
import socket
import struct
import sys

NAMES = {}
CNAMES = {}
TTL = [60]
LOG = [None]


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def wire_name(name):
    out = b""
    for label in name.split(b"."):
        if label:
            out += bytes([len(label)]) + label
    return out + b"\0"


def rr(owner, qtype, rdata):
    return wire_name(owner) + struct.pack("!HHIH", qtype, 1, TTL[0], len(rdata)) + rdata


def dns_answer(q):
    if len(q) < 12:
        return None
    qid, flags, qd = struct.unpack("!HHH", q[:6])
    pos, labels = 12, []
    while pos < len(q) and q[pos] != 0:
        n = q[pos]
        labels.append(q[pos + 1:pos + 1 + n])
        pos += 1 + n
    pos += 1
    if pos + 4 > len(q):
        return None
    qtype, qclass = struct.unpack("!HH", q[pos:pos + 4])
    question = q[12:pos + 4]
    name = b".".join(labels).lower()
    if LOG[0]:
        with open(LOG[0], "a") as f:
            f.write("%s %d\n" % (name.decode("ascii", "replace"), qtype))
    records = []
    seen = set()
    cur = name
    while cur in CNAMES and cur not in seen:
        seen.add(cur)
        records.append(rr(cur, 5, wire_name(CNAMES[cur])))
        cur = CNAMES[cur]
    rdata = NAMES.get((cur, qtype))
    if rdata:
        records.append(rr(cur, qtype, rdata))
    elif qtype == 16 and any(k[0] == cur for k in NAMES):
        txt = b"hello " + cur
        records.append(rr(cur, 16, bytes([len(txt)]) + txt))
    known = any(k[0] == cur for k in NAMES) or name in CNAMES
    rcode = 0 if known else 3
    hdr = struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, len(records), 0, 0)
    return hdr + question + b"".join(records)


def main():
    args = sys.argv[1:]
    dns = None
    if "--dns" in args:
        i = args.index("--dns")
        dns = args[i + 1]
        del args[i:i + 2]
    while "--ttl" in args:
        i = args.index("--ttl")
        TTL[0] = int(args[i + 1])
        del args[i:i + 2]
    while "--log" in args:
        i = args.index("--log")
        LOG[0] = args[i + 1]
        del args[i:i + 2]
    while "--cname" in args:
        i = args.index("--cname")
        name, _, target = args[i + 1].partition("=")
        CNAMES[name.lower().encode()] = target.lower().encode()
        del args[i:i + 2]
    while "--name" in args:
        i = args.index("--name")
        name, _, addrs = args[i + 1].partition("=")
        for a in addrs.split(","):
            NAMES[(name.lower().encode(), 28 if ":" in a else 1)] = socket.inet_pton(family(a), a)
        del args[i:i + 2]
    sel = selectors.DefaultSelector()
    for a in args:
        for port in (80, 81):
            t = socket.socket(family(a), socket.SOCK_STREAM)
            t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            t.bind((a, port))
            t.listen(64)
            t.setblocking(False)
            sel.register(t, selectors.EVENT_READ, ("tcp-listen" if port == 80 else "hold-listen", a))
        u = socket.socket(family(a), socket.SOCK_DGRAM)
        u.bind((a, 7))
        sel.register(u, selectors.EVENT_READ, ("udp", a))
    if dns:
        d = socket.socket(family(dns), socket.SOCK_DGRAM)
        d.bind((dns, 53))
        sel.register(d, selectors.EVENT_READ, ("dns-udp", dns))
        dt = socket.socket(family(dns), socket.SOCK_STREAM)
        dt.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        dt.bind((dns, 53))
        dt.listen(16)
        sel.register(dt, selectors.EVENT_READ, ("dns-tcp-listen", dns))
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        for key, _ in sel.select():
            kind, a = key.data
            s = key.fileobj
            try:
                if kind == "tcp-listen":
                    c, _ = s.accept()
                    c.sendall(("hello from %s\n" % a).encode())
                    c.close()
                elif kind == "hold-listen":
                    c, _ = s.accept()
                    c.sendall(("hello from %s\n" % a).encode())
                    c.setblocking(False)
                    sel.register(c, selectors.EVENT_READ, ("tcp", a))
                elif kind == "tcp":
                    data = s.recv(65536)
                    if not data:
                        sel.unregister(s)
                        s.close()
                    else:
                        s.sendall(b"got " + data)
                elif kind == "udp":
                    data, peer = s.recvfrom(2048)
                    s.sendto(("echo from %s: " % a).encode() + data, peer)
                elif kind == "dns-udp":
                    q, peer = s.recvfrom(4096)
                    r = dns_answer(q)
                    if r:
                        s.sendto(r, peer)
                elif kind == "dns-tcp-listen":
                    c, _ = s.accept()
                    c.settimeout(2)
                    try:
                        n = struct.unpack("!H", c.recv(2))[0]
                        r = dns_answer(c.recv(n))
                        if r:
                            c.sendall(struct.pack("!H", len(r)) + r)
                    finally:
                        c.close()
            except OSError:
                if kind == "tcp":
                    sel.unregister(s)
                    s.close()


main()
