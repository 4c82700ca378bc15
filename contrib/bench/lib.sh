# shellcheck shell=bash
# contrib/bench/lib.sh: what every bench-*.sh needs alike, sourced by each:
# timestamps, and the checks that a run left nothing behind. bash, coreutils
# and awk only.

# stamp VAR: microseconds since the epoch into VAR. $EPOCHREALTIME (bash >= 5)
# costs no fork; date +%s%N is the fallback.
if [[ -n ${EPOCHREALTIME:-} ]]; then
  stamp () { printf -v "$1" '%s' "${EPOCHREALTIME/[.,]/}"; }
else
  stamp () { local ns; ns=$(date +%s%N); printf -v "$1" '%s' "$((ns / 1000))"; }
fi

# busybox_rootfs DIR BUSYBOX: a minimal rootfs in DIR, the static BUSYBOX
# at /bin/busybox with a symlink per applet, /tmp world-writable.
busybox_rootfs ()
{
  local dir=$1 bb=$2 a
  mkdir -p "$dir"/{bin,dev,proc,sys,tmp,etc,root,run} || return 1
  cp "$bb" "$dir/bin/busybox" || return 1
  for a in $("$bb" --list); do
    [[ -e $dir/bin/$a ]] || ln -s busybox "$dir/bin/$a"
  done
  chmod 1777 "$dir/tmp"
}

umount_under ()  # DIR: every mount below it, deepest first
{
  # Lazily, so that a busy one does not stop the rest.
  local d=$1 m
  [[ -n $d && -d $d ]] || return 0
  awk -v d="$d/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null; done
}

ours ()  # PID: is it this script or one of its descendants?
{
  local p=$1 stat
  while ((p > 1)); do
    ((p == $$)) && return 0
    read -r stat <"/proc/$p/stat" 2>/dev/null || return 1
    stat=${stat##*) }
    read -r _ p _ <<<"$stat"
  done
  return 1
}

# The live processes, outside this script's own tree, among those whose
# /proc/PID/FILE (FILE: the rest of the arguments, globs of /proc paths)
# contains STRING; zombies do not count.
strangers_naming ()  # STRING FILE...
{
  local s=$1 f p
  shift
  # shellcheck disable=SC2013  # /proc paths: no spaces
  for f in $(grep -lsF -e "$s" "$@"); do
    p=${f#/proc/}; p=${p%%/*}
    read -r f <"/proc/$p/stat" 2>/dev/null || continue
    f=${f##*) }
    [[ ${f:0:1} == Z ]] && continue
    ours "$p" || printf '%s\n' "$p"
  done
}

others_using ()  # STRING: does a live process outside this script name it?
{
  [[ -n $(strangers_naming "$1" /proc/[0-9]*/cmdline) ]]
}

# leaked_pids DIR...: the processes outside this script whose command line or
# environment (sbx monitors carry SBX_ROOT) names a path under a DIR, checked
# twice, a second apart, so that one on its way out (podman's cleanup, a
# zombie waiting for its reaper) does not count. One line, sorted.
leaked_pids ()
{
  local d try pids=() files=(/proc/[0-9]*/cmdline /proc/[0-9]*/environ) p
  for try in 1 2; do
    pids=()
    for d in "$@"; do
      [[ -n $d ]] && mapfile -t -O "${#pids[@]}" pids < <(strangers_naming "$d/" "${files[@]}")
    done
    ((${#pids[@]})) || return 0
    files=()
    for p in "${pids[@]}"; do files+=("/proc/$p/cmdline" "/proc/$p/environ"); done
    [[ $try == 1 ]] && sleep 1
  done
  printf '%s\n' "${pids[@]}" | sort -un | tr '\n' ' '
}

leaked_mounts ()  # DIR...: how many mounts are left below them
{
  local d n=0
  for d in "$@"; do
    [[ -n $d ]] && n=$((n + $(awk -v d="$d/" 'index($5, d) == 1 { n++ } END { print n + 0 }' /proc/self/mountinfo)))
  done
  printf '%s\n' "$n"
}

leaked_cgroups ()  # TAG: the first few cgroups named TAG-*, on one line
{
  find /sys/fs/cgroup -maxdepth 3 -type d -name "$1-*" 2>/dev/null | head -5 | tr '\n' ' '
}

# leak_report TAG DIR...: says (note) what a run left behind: processes
# naming a DIR, cgroups named TAG-* (none looked for with an empty TAG),
# mounts below a DIR.
leak_report ()
{
  local tag=$1 pids cgs n
  shift
  pids=$(leaked_pids "$@")
  [[ -n $pids ]] && note "LEAK: processes still using the work dirs: $pids"
  if [[ -n $tag ]]; then
    cgs=$(leaked_cgroups "$tag")
    [[ -n $cgs ]] && note "LEAK: cgroups left: $cgs"
  fi
  n=$(leaked_mounts "$@")
  ((n == 0)) || note "LEAK: $n mounts left under the work dirs"
  return 0
}

# The median of the per-round ratios A/B, from $SAMPLES/A and $SAMPLES/B
# (one sample per line, line k from round k): each round's runs are
# neighbours in time, so drift across the run (a disk that slows as it
# fills, a host that is busier for a while) cancels out, as a ratio of
# medians taken over different rounds does not. Empty unless both have
# the same number of samples.
paired_ratio ()  # A B
{
  [[ -s $SAMPLES/$1 && -s $SAMPLES/$2 ]] || return 0
  (($(wc -l <"$SAMPLES/$1") == $(wc -l <"$SAMPLES/$2"))) || return 0
  paste "$SAMPLES/$1" "$SAMPLES/$2" | awk '$1 > 0 && $2 > 0 { print $1 / $2 }' | sort -g | awk '{ v[NR] = $1 } END {
    if (NR) printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Sandbox ID's config.json (from $SBX_ROOT; errors to $LOG) copied into
# DIR, pointed at ROOTFS (its root and its /tmp mount) and at the cgroup
# /CGROUP; SED_ARGS change more.  Fails unless it then names ROOTFS and
# nothing in sbx's store.
copy_sbx_bundle ()  # ID DIR ROOTFS CGROUP [SED_ARGS...]
{
  local cfg=$2/config.json
  mkdir -p "$2"
  cp "$SBX_ROOT/sandboxes/$1/bundle/config.json" "$cfg" 2>>"$LOG" || return 1
  sed -i -e "s|\"path\": \".*/rootfs\"|\"path\": \"$3\"|" \
         -e "s|\"source\": \".*/rootfs/tmp\"|\"source\": \"$3/tmp\"|" \
         -e "s|\"cgroupsPath\": \".*\"|\"cgroupsPath\": \"/$4\"|" "${@:5}" "$cfg" &&
    grep -qF "\"$3\"" "$cfg" && ! grep -qF "$SBX_ROOT/" "$cfg"
}

# Which runsc global flags sbx uses: read from the command line of the
# runsc its monitor runs in the foreground (`runsc ... run` for a created
# sandbox, `runsc ... restore` for a restored one; it lasts as long as the
# sandbox), less --root.  Prints them, NUL-separated. Needs SBX_RUN_ROOT.
sbx_runsc_flags ()  # VERB SANDBOX_ID
{
  local f p a flags skip seen_root
  # shellcheck disable=SC2013  # /proc paths: no spaces
  for f in $(grep -lsF -e "$SBX_RUN_ROOT/runtime/" /proc/[0-9]*/cmdline); do
    mapfile -d '' -t a <"$f" 2>/dev/null || continue
    ((${#a[@]} > 2)) || continue
    [[ ${a[0]##*/} == runsc && " ${a[*]} " == *" $1 "* && " ${a[*]} " == *" $2 "* ]] || continue
    flags=() skip=false seen_root=false
    for p in "${a[@]:1}"; do
      $skip && { skip=false; continue; }
      case $p in
        --root) skip=true; seen_root=true ;;
        --root=*) seen_root=true ;;
        "$1") break ;;
        *) flags+=("$p") ;;
      esac
    done
    $seen_root || continue
    printf '%s\0' "${flags[@]}"
    return 0
  done
  return 1
}

# timed NAME RECORD CMD...: runs CMD (stdin /dev/null, output to $LOG) unless
# NAME failed before; on success, when RECORD is true, appends its time to
# $SAMPLES/NAME; on failure marks NAME in the caller's FAILED map (declare
# -A FAILED) and says so through the caller's note.
timed ()  # NAME RECORD CMD...
{
  local name=$1 record=$2 t0 t1 rc
  shift 2
  [[ -n ${FAILED[$name]:-} ]] && return 1
  printf '== %s: %s\n' "$name" "$*" >>"$LOG"
  stamp t0
  "$@" </dev/null >>"$LOG" 2>&1
  rc=$?
  stamp t1
  if ((rc != 0)); then
    FAILED[$name]="exit status $rc"
    note "$name failed (exit status $rc): $*"
    tail -4 "$LOG" | sed 's/^/    /' >&2
    return 1
  fi
  $record && printf '%s\n' "$((t1 - t0))" >>"$SAMPLES/$name"
  return 0
}
