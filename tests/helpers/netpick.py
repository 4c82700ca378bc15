"""Picks the networks the tests put on links and route to (common.bash's
sbx_pick_test_nets), so that no test ever takes a route the host uses.

    netpick.py NAME=PREFIXLEN:CANDIDATE[,CANDIDATE...] ... NAME=fixed:CIDR ...

For each NAME it prints NAME=CIDR: the first network of that prefix length,
inside the candidates in order, that no route of the host's (any table, but
the default routes and the /30s sbx gives its own sandboxes on sbx* links),
no address of the host's (but those on sbx* links), no resolver in /etc/resolv.conf, no default
gateway and no network picked before it in this call covers or overlaps,
and to which `ip route get` finds the default route or nothing. A `fixed`
network (an address a test must use as it is, the metadata address say) is
checked the same way. When one cannot be had it prints why on stderr and
exits 1: the tests refuse to run rather than touch the host's routes.
Standard library only.
"""
import ipaddress
import json
import subprocess
import sys

SANDBOX_LINK_PREFIX = "sbx"  # SBX_NET_IFPREFIX: the veths of sbx's sandboxes
MAX_TRIES = 4096             # subnets looked at per candidate range
DEFAULTS = {}                # the default routes, by IP version


def ip_json(*args):
    out = subprocess.run(["ip", "-j", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out or "[]")


def host_networks():
    """(network, what) pairs the tests must stay clear of."""
    taken = []
    for fam in ("-4", "-6"):
        for r in ip_json(fam, "route", "show", "table", "all"):
            dst = r.get("dst", "")
            if dst == "default" or r.get("dev", "").startswith(SANDBOX_LINK_PREFIX):
                continue
            if r.get("type") == "multicast":
                continue
            try:
                net = ipaddress.ip_network(dst if "/" in dst else dst + ("/32" if fam == "-4" else "/128"),
                                           strict=False)
            except ValueError:
                continue
            taken.append((net, "route %s dev %s" % (dst, r.get("dev", "?"))))
            if "gateway" in r:
                taken.append((ipaddress.ip_network(r["gateway"]), "gateway of route %s" % dst))
    for link in ip_json("addr", "show"):
        if link.get("ifname", "").startswith(SANDBOX_LINK_PREFIX):
            continue
        for a in link.get("addr_info", []):
            iface = ipaddress.ip_interface("%s/%s" % (a["local"], a["prefixlen"]))
            if iface.network.prefixlen < iface.network.max_prefixlen:
                taken.append((iface.network, "network of address %s on %s" % (iface, link["ifname"])))
            taken.append((ipaddress.ip_network(iface.ip), "address %s on %s" % (iface.ip, link["ifname"])))
    for r in DEFAULTS[4] + DEFAULTS[6]:
        if "gateway" in r:
            taken.append((ipaddress.ip_network(r["gateway"]), "default gateway"))
    try:
        with open("/etc/resolv.conf") as f:
            for line in f:
                w = line.split()
                if len(w) >= 2 and w[0] == "nameserver":
                    try:
                        taken.append((ipaddress.ip_network(w[1].split("%")[0]), "resolver in /etc/resolv.conf"))
                    except ValueError:
                        pass
    except OSError:
        pass
    return taken


def route_get_is_default(addr):
    """`ip route get ADDR` leads to the default route, or nowhere."""
    r = subprocess.run(["ip", "-j", "route", "get", str(addr)], capture_output=True, text=True)
    if r.returncode != 0:
        return True, "no route"
    got = json.loads(r.stdout or "[]")
    if not got:
        return True, "no route"
    g = got[0]
    if g.get("type") in ("unreachable", "blackhole", "prohibit"):
        return True, g.get("type")
    if g.get("dev", "").startswith(SANDBOX_LINK_PREFIX):
        return True, "a sandbox of sbx's"
    for d in DEFAULTS[addr.version]:
        if d.get("dev") == g.get("dev") and d.get("gateway") == g.get("gateway"):
            return True, "default route"
    return False, "ip route get %s: dev %s via %s" % (addr, g.get("dev", "?"), g.get("gateway", "-"))


def conflict(net, taken):
    for t, what in taken:
        if t.version == net.version and t.overlaps(net):
            return what
    for addr in (net.network_address, net.broadcast_address):
        ok, why = route_get_is_default(addr)
        if not ok:
            return why
    return None


def candidates(prefix, ranges):
    for r in ranges:
        r = ipaddress.ip_network(r)
        if prefix < r.prefixlen:
            continue
        for i, n in enumerate(r.subnets(new_prefix=prefix)):
            if i >= MAX_TRIES:
                break
            yield n


def main():
    DEFAULTS[4] = ip_json("-4", "route", "show", "default")
    DEFAULTS[6] = ip_json("-6", "route", "show", "default")
    taken = host_networks()
    failed = False
    for arg in sys.argv[1:]:
        name, _, spec = arg.partition("=")
        kind, _, ranges = spec.partition(":")
        if kind == "fixed":
            net = ipaddress.ip_network(ranges)
            why = conflict(net, taken)
            if why:
                sys.stderr.write("netpick: %s %s is taken on this host (%s): refusing to run\n" % (name, net, why))
                failed = True
                continue
            pick = net
        else:
            pick, seen = None, []
            for n in candidates(int(kind), ranges.split(",")):
                why = conflict(n, taken)
                if why is None:
                    pick = n
                    break
                if len(seen) < 3:
                    seen.append("%s (%s)" % (n, why))
            if pick is None:
                sys.stderr.write("netpick: no free /%s for %s in %s: %s: refusing to run\n"
                                 % (kind, name, ranges, "; ".join(seen)))
                failed = True
                continue
        taken.append((pick, "picked for %s" % name))
        print("%s=%s" % (name, pick))
    return 1 if failed else 0


sys.exit(main())
