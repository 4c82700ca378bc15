"""Holds nftables table `inet sbx` with the owner flag (NFT_TABLE_F_OWNER):
while this process lives, no other process may change that table, so sbx
cannot install egress rules on this host (network.bats proves that such a
host refuses sandboxes with a network rather than running them open).
Prints "ready" once the table is held; the kernel removes it when this
process exits. Standard library only."""
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_NFTABLES = 10
NFNL_MSG_BATCH_BEGIN, NFNL_MSG_BATCH_END = 0x10, 0x11
NFT_MSG_NEWTABLE = 0
NLM_F_REQUEST, NLM_F_ACK, NLM_F_CREATE = 0x1, 0x4, 0x400
NFPROTO_INET = 1
NFTA_TABLE_NAME, NFTA_TABLE_FLAGS = 1, 2
NFT_TABLE_F_OWNER = 2


def attr(kind, data):
    n = 4 + len(data)
    return struct.pack("=HH", n, kind) + data + b"\0" * ((4 - n % 4) % 4)


def msg(kind, flags, seq, family, res_id, payload=b""):
    body = struct.pack("=BBH", family, 0, socket.htons(res_id)) + payload
    return struct.pack("=IHHII", 16 + len(body), kind, flags, seq, 0) + body


def main():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    s.bind((0, 0))
    table = attr(NFTA_TABLE_NAME, b"sbx\0") + attr(NFTA_TABLE_FLAGS, struct.pack("!I", NFT_TABLE_F_OWNER))
    batch = (msg(NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, 1, 0, NFNL_SUBSYS_NFTABLES)
             + msg((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE, 2,
                   NFPROTO_INET, 0, table)
             + msg(NFNL_MSG_BATCH_END, NLM_F_REQUEST, 3, 0, NFNL_SUBSYS_NFTABLES))
    s.send(batch)
    reply = s.recv(65536)
    kind = struct.unpack("=H", reply[4:6])[0]
    err = struct.unpack("=i", reply[16:20])[0] if kind == 2 else 0
    if err != 0:
        sys.stderr.write("could not take the table: errno %d\n" % -err)
        return 1
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        time.sleep(60)


sys.exit(main())
