#!/usr/bin/env bash
# The fresh-machine trial: does the README's first command still work on a
# machine that has nothing but a minimal Debian?  As root, on a Debian host:
#
#   contrib/check-fresh-install.sh [--cache-dir DIR] [--work-dir DIR] [--ref REF]
#                                  [--root-on-disk]
#
# 1. Makes a fresh root with `debootstrap --variant=minbase SUITE` (SUITE is the
#    host's, from /etc/os-release; the mirror is the host's own, read from its
#    apt sources; nothing here names a mirror).  Only the mirror's .deb files
#    are cached between runs, under --cache-dir (default
#    /var/cache/sbx-fresh-install): debootstrap's --cache-dir, and the root's
#    /var/cache/apt/archives bound to it.  The root itself is new every run:
#    a tmpfs (8 GiB at most) that vanishes with the trial's mount namespace,
#    or with --root-on-disk a directory under --work-dir (default
#    /var/tmp/sbx-fresh-install), removed at exit.
# 2. Enters it as its own root: unshare(1) with its own mount, pid, uts, ipc and
#    network namespaces, pivot_root, a fresh /proc and /sys, the host's cgroups
#    and /dev bound in, tmpfs on /run, /tmp and /dev/shm.  Its network is a
#    veth pair to the host, masqueraded, and an nftables table of its own lets
#    it reach only the mirror's addresses (resolved here, given to the root in
#    /etc/hosts) on ports 80 and 443: no DNS, nothing else.
# 3. Copies a clean `git archive REF` (default HEAD) in, runs the README's
#    first command verbatim (the first ```sh block of README.md, read from
#    REF), then a smoke test: `sbx run` under runsc and under runc, `import sbx`
#    in python3 (a runc sandbox from Python), `man sbx`
#    renders, and bash completion loads for sbx in a fresh `bash -i`.
#
# Each phase is printed with its time; the commands' output goes to a log
# (--cache-dir/last-run.log) whose end is printed on failure.  At exit, even
# on failure, everything goes: mounts (they live in the trial's own mount
# namespace), the veth, the nftables table, the root; only the cache stays.
# A trial left over by a crashed run is cleaned up first.  Takes 3.5 minutes
# on a quiet 2-core machine, 18 when others load it (most of it dpkg and the
# build); exits 0 only if every step passed.
# .ci/run runs it after the test suite.
set -euo pipefail

CACHE=/var/cache/sbx-fresh-install
WORK=/var/tmp/sbx-fresh-install
REF=HEAD
ROOT_ON_DISK=
HOST_IF=freshtrial0 # the host's end of the veth
NS_IF=freshtrial1   # the trial's end
NFT_TABLE=fresh_install_trial
SELF=$(realpath "$0")
SRC=$(cd "$(dirname "$SELF")/.." && pwd)

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$SELF"
}

die() {
  printf 'check-fresh-install: %s\n' "$*" >&2
  exit 1
}

# --- phases and their times -------------------------------------------------
# A phase's commands write to the log (fd 8); the phase's name and time go to
# the terminal (fd 3) and to the summary (fd 7).

# Stages 1 and 2 start in the middle of a phase: it comes in their environment.
PHASE=${PHASE-} PHASE_T0=${PHASE_T0-}
phase() {
  [ -z "$PHASE" ] || phase_end
  PHASE=$1 PHASE_T0=$EPOCHREALTIME
  printf '==> %s\n' "$PHASE" >&3
  printf '\n==> %s\n' "$PHASE" >&8
  exec >&8 2>&8
}
phase_secs() { awk -v a="$PHASE_T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
phase_end() {
  local s
  s=$(phase_secs)
  exec >&3 2>&4
  printf '    %s s\n' "$s"
  printf '%8s s  %s\n' "$s" "$PHASE" >&7
  PHASE=
}
phase_failed() {
  local s
  s=$(phase_secs)
  exec >&3 2>&4
  printf '%8s s  %s  FAILED\n' "$s" "$PHASE" >&7
  printf 'check-fresh-install: FAILED in phase "%s" after %s s\n' "$PHASE" "$s"
  PHASE=
}

# --- the host's side ----------------------------------------------------------

# Everything a trial leaves on the host, whether this run's or a crashed one's.
host_cleanup() {
  local m
  # The trial's mounts live in its own mount namespace and go with it; this is
  # for any that got onto the host's (none should).
  if [ -d "$WORK" ]; then
    awk -v w="$WORK" '$5 == w || index($5, w "/") == 1 { print $5 }' /proc/self/mountinfo \
      | sort -r | while read -r m; do umount -l "$m" || true; done
  fi
  ip link del "$HOST_IF" 2>/dev/null || true
  nft delete table inet "$NFT_TABLE" 2>/dev/null || true
  if [ -s "$CACHE/forwarding.restore" ]; then
    local dev val
    read -r dev val <"$CACHE/forwarding.restore"
    [ ! -e "/proc/sys/net/ipv4/conf/$dev/forwarding" ] \
      || echo "$val" >"/proc/sys/net/ipv4/conf/$dev/forwarding"
    rm -f "$CACHE/forwarding.restore"
  fi
  rm -rf --one-file-system "$WORK"
}

TRIAL_PID=
on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  [ -z "$PHASE" ] || phase_failed
  if [ "$rc" -ne 0 ] && [ -n "${LOG:-}" ] && [ -s "$LOG" ]; then
    printf -- '---- the end of %s\n' "$LOG"
    tail -n 60 "$LOG"
    printf -- '----\n'
  fi
  if [ -n "$TRIAL_PID" ] && kill -0 "$TRIAL_PID" 2>/dev/null; then
    # unshare --kill-child: its child, the trial's pid 1, dies with it, and
    # with that pid 1 every process and mount of the trial.
    kill -KILL "$TRIAL_PID" 2>/dev/null || true
    wait "$TRIAL_PID" 2>/dev/null || true
  fi
  local t0=$EPOCHREALTIME
  host_cleanup
  printf '==> cleanup\n    %s s\n' "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')"
  if [ -n "${SUMMARY:-}" ]; then
    printf 'Phases:\n'
    cat "$SUMMARY"
    awk -v a="$T_START" -v b="$EPOCHREALTIME" 'BEGIN { printf "%8.1f s  in all\n", b - a }'
    rm -f "$SUMMARY"
  fi
  if [ "$rc" -eq 0 ]; then
    echo "check-fresh-install: passed"
  else
    echo "check-fresh-install: failed (exit status $rc; log: ${LOG:-none})"
  fi
  exit "$rc"
}

# The enabled "deb" sources of the host, one "URI SUITE" a line, from the
# deb822 files and the one-line lists alike.
host_sources() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -e "$f" ] || continue
    awk '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no")
          for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++) print uris[i], suites[j]
        types = ""; enabled = ""; nu = 0; ns = 0
      }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      /^[A-Za-z-]+:/ {
        key = tolower($1); sub(/:$/, "", key); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
        if (key == "types") types = val
        else if (key == "enabled") enabled = val
        else if (key == "uris") nu = split(val, uris, /[ \t]+/)
        else if (key == "suites") ns = split(val, suites, /[ \t]+/)
      }
      END { flush() }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -e "$f" ] || continue
    awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ } print $i, $(i + 1) }' "$f"
  done
}

url_host() { local h=${1#*://}; h=${h%%/*}; h=${h##*@}; printf '%s\n' "${h%:*}"; }

# The proxy apt uses for URL $1 on this host, if any: apt's own setting first,
# then the environment.
host_proxy() {
  local scheme=${1%%://*} host p='' PROXY=''
  host=$(url_host "$1")
  eval "$(apt-config shell PROXY "Acquire::$scheme::Proxy::$host")"
  [ -n "$PROXY" ] || eval "$(apt-config shell PROXY "Acquire::$scheme::Proxy")"
  if [ -z "$PROXY" ]; then
    case $scheme in
    http) p=${http_proxy:-${HTTP_PROXY:-}} ;;
    https) p=${https_proxy:-${HTTPS_PROXY:-}} ;;
    esac
    PROXY=$p
  fi
  case $PROXY in DIRECT | direct | false) PROXY= ;; esac
  printf '%s\n' "$PROXY"
}

ip2int() { local IFS=.; set -- $1; echo $(( ($1 << 24) | ($2 << 16) | ($3 << 8) | $4 )); }
int2ip() { echo "$(( $1 >> 24 & 255 )).$(( $1 >> 16 & 255 )).$(( $1 >> 8 & 255 )).$(( $1 & 255 ))"; }

# Is NET/30 ($1, an integer) free: no address of the host in it, no route of
# the host in it or covering it but the default route?
subnet_free() {
  local net=$1 cidr a p n m
  cidr=$(int2ip "$net")/30
  while read -r a; do
    p=${a#*/} a=${a%/*}
    n=$(ip2int "$a")
    [ $(( n & ~3 & 0xffffffff )) -ne "$net" ] || return 1
    m=$(( p == 0 ? 0 : (0xffffffff << (32 - p)) & 0xffffffff ))
    [ $(( n & m )) -ne $(( net & m )) ] || return 1
  done < <(ip -4 -o addr show | awk '{ print $4 }')
  [ -z "$(ip -4 route show table all match "$cidr" | grep -v '^default ' || true)" ] || return 1
  [ -z "$(ip -4 route show table all root "$cidr" || true)" ] || return 1
}

pick_subnet() {
  local net
  for _ in $(seq 1 64); do
    # 10.240.0.0/12, off sbx's own default pool (10.200.0.0/16).
    net=$(( (10 << 24) | (240 << 16) | ((SRANDOM & 0xfffff) << 2 & 0xfffff) ))
    if subnet_free "$net"; then
      echo "$net"
      return 0
    fi
  done
  die "found no /30 in 10.240.0.0/12 that no address or route of this host covers"
}

setup_network() {
  local net uplink cur addrs a
  net=$(pick_subnet)
  HOST_ADDR=$(int2ip $((net + 1)))
  NS_ADDR=$(int2ip $((net + 2)))
  echo "veth: $HOST_IF $HOST_ADDR/30 (host) <-> $NS_IF $NS_ADDR/30 (trial)" >&3
  echo "veth: $HOST_IF $HOST_ADDR/30 (host) <-> $NS_IF $NS_ADDR/30 (trial)"
  ip link add "$HOST_IF" type veth peer name "$NS_IF"
  ip addr add "$HOST_ADDR/30" dev "$HOST_IF"
  ip link set "$HOST_IF" up
  # IPv4 forwarding is decided by the interface a packet comes in on: the veth
  # (ours, it goes at exit), and the uplink for the replies (put back at exit).
  echo 1 >"/proc/sys/net/ipv4/conf/$HOST_IF/forwarding"
  for a in $ALLOWED; do
    uplink=$(ip -4 route get "$a" | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
    [ -n "$uplink" ] || die "no route to $a"
    cur=$(cat "/proc/sys/net/ipv4/conf/$uplink/forwarding")
    if [ "$cur" != 1 ]; then
      [ -s "$CACHE/forwarding.restore" ] || echo "$uplink $cur" >"$CACHE/forwarding.restore"
      echo 1 >"/proc/sys/net/ipv4/conf/$uplink/forwarding"
      echo "forwarding on $uplink: $cur -> 1 (put back at exit)"
    fi
  done
  addrs=$(printf '%s, ' $ALLOWED)
  addrs=${addrs%, }
  nft -f - <<-EOF
	table inet $NFT_TABLE {
	  chain forward {
	    type filter hook forward priority filter - 10; policy accept;
	    iifname "$HOST_IF" ip saddr $NS_ADDR ip daddr { $addrs } tcp dport { $PORTS } accept
	    iifname "$HOST_IF" counter drop
	    oifname "$HOST_IF" ct state established,related accept
	    oifname "$HOST_IF" counter drop
	  }
	  chain input {
	    type filter hook input priority filter - 10; policy accept;
	    iifname "$HOST_IF" ct state established,related accept
	    iifname "$HOST_IF" counter drop
	  }
	  chain prerouting {
	    type nat hook prerouting priority dstnat; policy accept;
	  }
	  chain postrouting {
	    type nat hook postrouting priority srcnat; policy accept;
	    ip saddr $NS_ADDR oifname != "$HOST_IF" masquerade
	  }
	}
	EOF
}

# The mirror and suite, the addresses the trial may reach, the proxy.
discover_mirror() {
  local codename h a p
  codename=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || die "no VERSION_CODENAME in /etc/os-release"
  SUITE=$codename
  MIRROR=$(host_sources | awk -v s="$SUITE" '$2 == s { print $1; exit }')
  [ -n "$MIRROR" ] || die "no enabled deb source for $SUITE in the host's apt sources"
  case $MIRROR in http://* | https://*) ;; *) die "the host's mirror $MIRROR is not http(s)" ;; esac
  PROXY=$(host_proxy "$MIRROR")
  if [ -n "$PROXY" ]; then
    h=$(url_host "$PROXY")
    p=${PROXY#*://}; p=${p%%/*}; p=${p##*@}
    case $p in *:*) p=${p##*:} ;; *) p=80 ;; esac
    PORTS=$p
  else
    h=$(url_host "$MIRROR")
    PORTS="80, 443"
  fi
  ALLOWED=
  for _ in 1 2 3; do # this host's resolver may fail now and then
    ALLOWED=$(getent ahostsv4 "$h" | awk '{ print $1 }' | sort -u | paste -sd ' ') && break
  done
  [ -n "$ALLOWED" ] || die "$h does not resolve to an IPv4 address on this host (getent ahostsv4 $h)"
  for a in $ALLOWED; do
    case $a in 127.*) die "$h is $a, on this host's loopback: the trial's network namespace cannot reach it" ;; esac
  done
  HOSTS_LINES=$(for a in $ALLOWED; do printf '%s %s\n' "$a" "$h"; done)
  echo "suite $SUITE, mirror $MIRROR${PROXY:+, through the proxy $PROXY}; the trial may reach $h ($ALLOWED) on port(s) $PORTS" >&3
  echo "suite $SUITE, mirror $MIRROR${PROXY:+, through the proxy $PROXY}; the trial may reach $h ($ALLOWED) on port(s) $PORTS"
}

host_main() {
  while [ $# -gt 0 ]; do
    case $1 in
    --cache-dir) CACHE=$(realpath -m "${2:?--cache-dir needs a directory}"); shift 2 ;;
    --work-dir) WORK=$(realpath -m "${2:?--work-dir needs a directory}"); shift 2 ;;
    --ref) REF=${2:?--ref needs a git revision}; shift 2 ;;
    --root-on-disk) ROOT_ON_DISK=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument \`$1' (see --help)" ;;
    esac
  done
  [ "$(id -u)" = 0 ] || die "must run as root"
  PHASE=''
  local t
  for t in debootstrap unshare setpriv nft ip git getent flock apt-config tar awk; do
    command -v "$t" >/dev/null || die "needs $t"
  done
  git -C "$SRC" rev-parse --verify -q "$REF^{commit}" >/dev/null || die "$REF is not a commit of $SRC"
  mkdir -p "$CACHE/debootstrap" "$CACHE/apt-archives/partial"

  exec 3>&1 4>&2
  exec 9>"$CACHE/lock"
  if ! flock -n 9; then
    echo "check-fresh-install: waiting for another trial (lock $CACHE/lock)"
    flock -w 1800 9 || die "another trial still holds $CACHE/lock"
  fi
  LOG=$CACHE/last-run.log
  T_START=$EPOCHREALTIME
  exec 8>"$LOG"
  SUMMARY=$(mktemp /tmp/sbx-fresh-install.XXXXXX)
  exec 7>"$SUMMARY"
  trap on_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  phase "prepare: clean up after earlier runs, git archive $REF, the README's command"
  host_cleanup
  mkdir -p "$WORK"
  git -C "$SRC" archive --format=tar "$REF" >"$WORK/src.tar"
  git -C "$SRC" show "$REF:README.md" \
    | awk '/^```sh[ \t]*$/ { f = 1; next } f && /^```/ { exit } f' >"$WORK/readme-command"
  [ -s "$WORK/readme-command" ] || die "README.md at $REF has no \`\`\`sh block"
  printf 'README command: %s\n' "$(cat "$WORK/readme-command")" >&3
  if [ "$REF" = HEAD ] && [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no)" ]; then
    echo "note: the work tree has changes; the trial tests HEAD ($(git -C "$SRC" rev-parse --short HEAD))" >&3
  fi

  phase "network: veth, NAT, a filter that lets only the mirror through"
  discover_mirror
  setup_network

  phase "namespaces"
  mkfifo "$WORK/ready" "$WORK/go"
  exec 5<>"$WORK/ready" 6<>"$WORK/go" # neither side blocks on open
  export CACHE WORK SUITE MIRROR PROXY HOSTS_LINES NS_IF NS_ADDR HOST_ADDR ROOT_ON_DISK
  exec >&3 2>&4
  # setpriv: if this script dies, unshare gets SIGKILL; --kill-child: then so
  # does the trial's pid 1, and with it the whole trial.  The phase goes on in
  # there.
  PHASE=$PHASE PHASE_T0=$PHASE_T0 setpriv --pdeathsig KILL \
    unshare --mount --propagation private --pid --uts --ipc --net --fork --kill-child \
    "$BASH" "$SELF" --stage1 &
  TRIAL_PID=$!
  PHASE=
  until read -t 2 -r _ <&5; do
    kill -0 "$TRIAL_PID" 2>/dev/null || break
  done
  # Now unshare is in the trial's network namespace.
  ip link set "$NS_IF" netns "$TRIAL_PID" && echo go >&6
  local rc=0
  wait "$TRIAL_PID" || rc=$?
  TRIAL_PID=
  [ "$rc" -eq 0 ] || exit "$rc"
}

# --- inside the trial's namespaces, still with the host's file system -------

stage1() {
  exec 3>&1 4>&2
  trap '[ -z "$PHASE" ] || phase_failed' EXIT
  exec 5>&- 6>&-
  echo ready >"$WORK/ready"
  read -r _ <"$WORK/go"
  local root=$WORK/root

  exec >&8 2>&8
  hostname sbx-fresh
  ip link set lo up
  ip addr add "$NS_ADDR/30" dev "$NS_IF"
  ip link set "$NS_IF" up
  ip route add default via "$HOST_ADDR"
  # The mirror by name without a resolver: for debootstrap here, and in the
  # root.  These mounts are the trial's own (a private mount namespace).
  printf '127.0.0.1 localhost\n127.0.1.1 sbx-fresh\n::1 localhost ip6-localhost ip6-loopback\n%s\n' \
    "$HOSTS_LINES" >"$WORK/hosts"
  echo sbx-fresh >"$WORK/hostname"
  mount --bind "$WORK/hosts" /etc/hosts
  mount --bind "$WORK/hostname" /etc/hostname
  [ -z "$PROXY" ] || export http_proxy=$PROXY https_proxy=$PROXY
  # The mirror through the filter, with wget's own words if it fails
  # (debootstrap only says that it did).
  wget -nv --tries=3 --timeout=20 -O /dev/null "$MIRROR/dists/$SUITE/InRelease"

  phase "debootstrap --variant=minbase $SUITE"
  mkdir "$root"
  # tmpfs: no fsync to wait for, nothing to delete; it goes with the
  # namespace.  On disk: a mount point of its own for pivot_root.
  if [ -n "$ROOT_ON_DISK" ]; then
    mount --bind "$root" "$root"
  else
    mount -t tmpfs -o mode=755,size=8g sbx-fresh-root "$root"
  fi
  debootstrap --variant=minbase --cache-dir="$CACHE/debootstrap" "$SUITE" "$root" "$MIRROR" </dev/null
  unset http_proxy https_proxy
  du -sh "$root" "$CACHE/debootstrap"

  phase "root: source, mounts, pivot_root"
  mkdir "$root/root/sbx"
  tar -x -C "$root/root/sbx" -f "$WORK/src.tar"
  cp "$WORK/hosts" "$root/etc/hosts"
  [ -z "$PROXY" ] || printf 'Acquire::%s::Proxy "%s";\n' http "$PROXY" https "$PROXY" >"$root/etc/apt/apt.conf.d/01proxy"
  mount --bind "$CACHE/apt-archives" "$root/var/cache/apt/archives"
  mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
  mount -t sysfs -o nosuid,nodev,noexec sysfs "$root/sys"
  mount --rbind /sys/fs/cgroup "$root/sys/fs/cgroup"
  mount --rbind /dev "$root/dev"
  mount -t tmpfs -o nosuid,nodev,mode=1777 shm "$root/dev/shm"
  mount -t tmpfs -o nosuid,nodev,mode=755 run "$root/run"
  mkdir -m 1777 "$root/run/lock"
  mount -t tmpfs -o nosuid,nodev,mode=1777 tmp "$root/tmp"
  mkdir -m 700 "$root/tmp/trial"
  cp "$SELF" "$root/tmp/trial/check-fresh-install.sh"
  cp "$WORK/readme-command" "$root/tmp/trial/readme-command"
  findmnt -R "$root" || true
  cd "$root"
  pivot_root . .
  umount -l .
  cd /
  trap - EXIT
  # The phase goes on in stage 2, in the new root.
  export PHASE PHASE_T0
  exec /usr/bin/env -i PHASE="$PHASE" PHASE_T0="$PHASE_T0" HOST_ADDR="$HOST_ADDR" \
    HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash /tmp/trial/check-fresh-install.sh --stage2 3>&3 4>&4
}

# --- inside the new root, as its pid 1 ------------------------------------------

# The time of each step of the README's command, from its trace: "++ TIME
# CMD" (eval's are one "+" deeper than the eval; "+++" for nested commands).
steps() {
  awk -v end="$EPOCHREALTIME" '
    /^\+\+ [0-9]+\.[0-9]+ / {
      if (name != "") printf "      %7.1f s  %s\n", $2 - t, name
      t = $2; name = $0; sub(/^\+\+ [^ ]+ /, "", name)
    }
    END { if (name != "") printf "      %7.1f s  %s\n", end - t, name }' /tmp/trial/trace
}

# Runs command $@ in the new root's bash, with what it prints on fd 1 kept in
# /tmp/trial/out as well as logged.
out() { "$@" | tee /tmp/trial/out; }

stage2() {
  # fds 3 and 4 (the terminal), 7 (the summary) and 8 (the log) come from
  # stage 1.
  trap '[ -z "$PHASE" ] || phase_failed' EXIT
  local cmd id ids tag rc a h

  phase "the README's first command (a fresh root: apt, build, make install, sbx run)"
  cmd=$(cat /tmp/trial/readme-command)
  cd /root/sbx
  # Verbatim, traced: the trace (not the command's output) gives each step's
  # start.
  out bash -c 'PS4="+ \$EPOCHREALTIME "; exec 5>/tmp/trial/trace; BASH_XTRACEFD=5; set -x; eval "$1"' \
    sh "$cmd" </dev/null
  steps >&3
  grep -qx 'hello from a sandbox' /tmp/trial/out \
    || { echo "the README command did not print \"hello from a sandbox\""; false; }
  cd /

  phase "smoke: sbx run --runtime runsc -- echo ok"
  out sbx run --runtime runsc -- echo ok </dev/null
  [ "$(cat /tmp/trial/out)" = ok ]

  phase "smoke: sbx run --runtime runc -- echo ok"
  out sbx run --runtime runc -- echo ok </dev/null
  [ "$(cat /tmp/trial/out)" = ok ]

  phase "smoke: the Python package (python3 -c 'import sbx', a runc sandbox)"
  out python3 -c 'import sbx
with sbx.Sandbox.create("busybox", runtime="runc") as sb:
    print(sb.run("echo ok").stdout, end="")' </dev/null
  [ "$(cat /tmp/trial/out)" = ok ]

  phase "smoke: man sbx"
  MANWIDTH=200 man -P cat sbx >/tmp/trial/out
  head -n 12 /tmp/trial/out
  grep -q '^NAME' /tmp/trial/out
  grep -q 'run untrusted code in local sandboxes' /tmp/trial/out

  phase "smoke: bash completion for sbx in a fresh bash -i"
  # What TAB does: bash-completion's loader finds the completion for sbx,
  # then the completion function completes "sbx ru".
  out bash -i -c '
    . /usr/share/bash-completion/bash_completion || exit 1
    _completion_loader sbx
    spec=$(complete -p sbx) || exit 1
    echo "$spec"
    fn=${spec#*-F }; fn=${fn%% *}
    COMP_WORDS=(sbx ru); COMP_CWORD=1; COMP_LINE="sbx ru"; COMP_POINT=6
    "$fn" sbx ru sbx
    printf "%s\n" "${COMPREPLY[@]}"' </dev/null
  grep -q '^complete -F ' /tmp/trial/out
  grep -qx run /tmp/trial/out
  grep -qx run-code /tmp/trial/out

  phase "smoke: the trial's network reaches the mirror only"
  # The host's end of the veth is the one address besides the mirror's that
  # the trial may send to in a test (nothing goes to other hosts' addresses);
  # the filter drops what the trial sends it: a connection times out (without
  # the filter it would be refused, or made).
  rc=0
  timeout 3 bash -c "exec 5<>/dev/tcp/$HOST_ADDR/22" || rc=$?
  echo "connect to the host's end $HOST_ADDR:22: exit status $rc (124: timed out)"
  [ "$rc" -eq 124 ]
  read -r a h _ < <(grep -v -E '^(127\.|::1)' /etc/hosts)
  echo "the mirror: $h at $a"
  timeout 10 bash -c "exec 5<>/dev/tcp/$h/80"

  phase "smoke: sbx rm the trial's sandboxes, nothing left in the host's cgroups"
  ids=$(sbx ls -q)
  echo "sandboxes: $ids"
  [ -z "$ids" ] || sbx rm -f $ids
  [ -z "$(sbx ls -q)" ]
  tag=$(printf '%s' "$(realpath -m /var/lib/sbx)" | sha256sum | cut -c1-8)
  for id in $ids; do
    if find /sys/fs/cgroup/ -maxdepth 4 -path "*sbx-$tag*" -name "*$id*" | grep .; then
      echo "cgroup of $id left behind"
      false
    fi
  done
  phase_end
}

case ${1-} in
--stage1) stage1 ;;
--stage2) stage2 ;;
*) host_main "$@" ;;
esac
