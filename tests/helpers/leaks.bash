#!/bin/bash
# The leak check of the integration tests: everything of one test's root
# that survived `sbx gc`, one line each. Sourced by common.bash (for
# sbx_pids and _sbx_net_names), and run as a program by sbx_leaks: outside
# bats, whose trace of every command made the scan take seconds.
#
# Run as a program, it reads SBX_TEST_DIR, SBX_ROOT, SBX_RUN_ROOT and
# SBX_TAG, and _SBX_NET_BEFORE (the network names before the test).

if ! declare -F fail >/dev/null; then
  fail () {
    printf '%s\n' "$*" >&2
    return 1
  }
fi

# sbx_pids NAME: the pids of processes named exactly NAME, one a line. Fails
# when pgrep does, rather than answering "none".
sbx_pids () {
  local out rc
  rc=0
  out=$(pgrep -x "$1") || rc=$?
  case $rc in
    0) printf '%s\n' "$out" ;;
    1) ;;
    *) fail "pgrep -x $1 failed (status $rc)" ;;
  esac
}

# Network objects of any sbx root, by name: namespaces (ip's and sbx's),
# links, sbx's leases and its nftables chains, sets and counters.
_sbx_net_names () {
  { ip netns list 2>/dev/null | awk '{print "netns " $1}'
    ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print "link " $2}'
    ls -A /run/sbx/netns 2>/dev/null | sed 's/^/sbx netns /'
    ls -A /run/sbx/leases 2>/dev/null | sed 's/^/sbx lease /'
    nft -a list table inet sbx 2>/dev/null | awk '$1 == "chain" || $1 == "set" || $1 == "counter" { print "nft " $1 " " $2 }' \
      | grep -- '-'
    # A sandbox interface's forward jump and source check.
    nft list table inet sbx 2>/dev/null | awk '$1 == "chain" { c = $2 } /iifname "/ && (c == "forward" || c == "source") {
      match($0, /iifname "[^"]*"/); print "nft rule " c " " substr($0, RSTART + 9, RLENGTH - 10) }' | sort -u
  } | grep -i 'sbx\|sb-\|sandbox-' | sort
}

# _sbx_net_unheld: the lines of _sbx_net_names on stdin that no other
# sandbox accounts for. Network objects are host-wide, and tests run in
# parallel (make -j check), so an object is not this test's leak when its
# sandbox is alive or being torn down (its lease, /run/sbx/leases/ID, is
# flocked from before its first object is made until after its last is
# removed, by its monitor or a gc), or when it belongs to another test's
# root (/tmp/sbx-test.*/root/sandboxes/ID: a sandbox another test crashed on
# purpose, which that root's gc reaps). One of this root's sandboxes still
# alive is reported by the monitor check; any other object naming no
# sandbox is always reported.
_sbx_net_unheld () {
  local line id fd d
  local -A other=()
  while IFS= read -r line; do
    id=
    case $line in
      # The C unit tests' own namespaces, links and tables (test-egress,
      # test-netns; `make -j check` runs them beside the bats files): they
      # check their own cleanup, and sbx never names a thing so ("t" is no
      # hex digit).
      *" sbxt-"* | *" sbxtest"*) continue ;;
      # (The lease holds the id without a newline: read's status is 1.)
      "sbx lease addr-"*) { read -r id <"/run/sbx/leases/${line#sbx lease }"; } 2>/dev/null || true ;;
      *) [[ $line =~ (sb-|sbx)([0-9a-f]{12}) ]] && id=sb-${BASH_REMATCH[2]} ;;
    esac
    if [ -n "$id" ] && [ -z "${other[$id]-}" ]; then
      other[$id]=no
      if { exec {fd}<"/run/sbx/leases/$id"; } 2>/dev/null; then
        flock -n -x "$fd" || other[$id]=yes
        exec {fd}<&-
      fi
      for d in /tmp/sbx-test.*/root/sandboxes/"$id"; do
        [ -e "$d" ] && [ "$d" != "$SBX_ROOT/sandboxes/$id" ] && other[$id]=yes
      done
    fi
    [ -n "$id" ] && [ "${other[$id]}" = yes ] && continue
    printf '%s\n' "$line"
  done
}

# Everything of this root that survived, one line each.
_sbx_leaks_scan () {
  local d=$SBX_TEST_DIR p c r
  # Mounts in this namespace, and in any process's namespace (monitors use a
  # private one).
  grep -F "$d" /proc/mounts 2>/dev/null | sed 's/^/mount: /'
  local ours
  ours=$(readlink /proc/self/ns/mnt)
  grep -lF "$d" /proc/[0-9]*/mountinfo 2>/dev/null | while read -r p; do
    p=${p#/proc/}
    p=${p%/mountinfo}
    [ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$ours" ] && continue
    echo "mount namespace of pid $p ($(cat "/proc/$p/comm" 2>/dev/null)) holds a mount under $d"
  done
  find /proc/[0-9]*/cwd /proc/[0-9]*/root -maxdepth 0 \( -lname "$d" -o -lname "$d/*" \) -printf '%p -> %l\n' \
    2>/dev/null | sed 's/^/process /'
  local monitors
  monitors=$(sbx_pids sbx-monitor 2>&1) || echo "cannot look for this root's monitors: $monitors"
  for p in $monitors; do
    if tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "SBX_ROOT=$SBX_ROOT" \
      || tr '\0' '\n' 2>/dev/null <"/proc/$p/cmdline" | grep -qF "$d"; then
      echo "sbx-monitor $p of this root is alive"
    fi
  done
  # Loop devices on a sandbox's disk image: cleared with their mount, which
  # the kernel finishes a moment after the namespace holding it is gone.
  for r in 1 2 3 4 5 6 7 8 9 10; do
    losetup -l -n -O BACK-FILE 2>/dev/null | grep -qF "$d" || break
    sleep 0.2
  done
  losetup -l -n -O NAME,BACK-FILE 2>/dev/null | grep -F "$d" | sed 's/^/loop device: /'
  # Runtime containers (only where the state root exists: listing creates it).
  for r in runc runsc; do
    [ -d "$SBX_RUN_ROOT/runtime/$r" ] || continue
    if ! command -v "$r" >/dev/null; then
      echo "cannot list $r containers: no $r on PATH"
    elif [ "$r" = runc ]; then
      runc --root "$SBX_RUN_ROOT/runtime/runc" list -q 2>/dev/null | sed 's/^/runc container: /'
    else
      runsc --root "$SBX_RUN_ROOT/runtime/runsc" list -quiet 2>/dev/null | sed 's/^/runsc container: /'
    fi
  done
  # Cgroups, in every v1 controller, the unified hierarchy, or v2's root.
  for c in /sys/fs/cgroup/sbx-"$SBX_TAG" /sys/fs/cgroup/*/sbx-"$SBX_TAG"; do
    [ -e "$c" ] && echo "cgroup: $c"
  done
  # User id range leases of runc sandboxes of this root ("ID TAG").
  grep -lsw -- "$SBX_TAG" /run/sbx/userns/* /run/sbx/userns/.[!.]* 2>/dev/null | sed 's/^/user namespace lease: /'
  # Network objects that appeared during the test and no other sandbox
  # accounts for, and still there a moment later (another root's gc may be
  # between removing a sandbox's directory and its objects).
  local net
  net=$(comm -13 <(printf '%s\n' "$_sbx_net_before") <(_sbx_net_names) | grep . | _sbx_net_unheld)
  if [ -n "$net" ]; then
    sleep 1
    comm -12 <(printf '%s\n' "$net") <(_sbx_net_names | _sbx_net_unheld) | sed 's/^/network: /'
  fi
  # Sandboxes gc should have removed, and their runtime directories.
  if [ -d "$SBX_ROOT/sandboxes" ]; then
    for c in "$SBX_ROOT"/sandboxes/* "$SBX_ROOT"/sandboxes/.[!.]*; do
      [ -e "$c" ] && echo "sandbox directory left after gc: $c"
    done
  fi
  if [ -d "$SBX_RUN_ROOT/sandboxes" ]; then
    for c in "$SBX_RUN_ROOT"/sandboxes/*; do
      [ -e "$c" ] && echo "run directory left after gc: $c"
    done
  fi
  return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  _sbx_net_before=${_SBX_NET_BEFORE-}
  _sbx_leaks_scan
fi
