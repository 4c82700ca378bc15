#!/usr/bin/env bash
# bench-pull.sh: `sbx pull` from a registry on loopback, side by side with
# podman and skopeo, and what a registry reference costs `sbx run`.
#
# Run as root.  See contrib/bench/README.md.  Needs docker-registry, skopeo
# and curl besides sbx (podman when present); bash, coreutils and awk.

set -uo pipefail

SRC_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." 2>/dev/null && pwd)
SBX=${SBX:-$SRC_TOP/sbx}
N=5
N_RUN=20
CACHE_DIR=/var/tmp/sbx-bench-pull-cache
JSON=false
KEEP=false
IMAGE_ONLY=false

usage ()
{
  cat <<EOF
Usage: ${0##*/} [-n N] [-r R] [--cache-dir DIR] [--image-only] [--json]
       [--keep] [-h]

Measures, in one run, against one docker-registry on 127.0.0.1 (plain
HTTP, storage in the work directory) holding one image: a Debian bookworm
image in 5 layers, 280 MiB compressed (an sbx blueprint on debian:bookworm:
python3, git, curl, 24 MB of random bytes), made once with sbx build and
kept as an OCI archive (sbx export) in --cache-dir, copied into the registry
with skopeo.
 1. N timed rounds (after one untimed warm-up), each case in a new random
    order, each run into an empty store:
    sbx-pull        sbx pull REF                  (a fresh SBX_ROOT)
    podman-pull     podman pull REF               (a fresh --root/--runroot)
    skopeo-oci      skopeo copy docker://REF oci:DIR   (a fresh DIR; only
                    downloads)
    sbx-pull-present  sbx pull REF again, in the store sbx-pull just filled
    Targets: sbx-pull/podman-pull <= 0.8, sbx-pull/skopeo-oci <= 1.1 (the
    medians of the per-round ratios), sbx-pull-present < 50 ms.
 2. R timed pairs, in random order within each pair, in one store that
    holds the image (also tagged bench-local):
    run-ref   sbx run --runtime runc --block-network --image REF -- true
    run-tag   sbx run --runtime runc --block-network --image bench-local -- true
    Target: median(run-ref) - median(run-tag) <= 5 ms.

Options:
  -n N             timed pull rounds (default $N)
  -r R             timed run pairs (default $N_RUN)
  --cache-dir DIR  where the image archive is kept between runs (default
                   $CACHE_DIR)
  --image-only     make the cached archive if missing, then stop
  --json           JSON on stdout (the table then goes to stderr)
  --keep           keep the work directory
  -h, --help       show this help

Environment: SBX (default this checkout's), SBX_INIT (default the sbx-init
next to SBX), TMPDIR (the work directory's parent; default /var/tmp).
EOF
}

die () { printf 'bench-pull: %s\n' "$*" >&2; exit 2; }
note () { printf 'bench-pull: %s\n' "$*" >&2; }
posint () { [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "$1 wants a positive integer"; }

while (($#)); do
  case $1 in
    -n) posint -n "${2:-}"; N=$2; shift 2 ;;
    -r) posint -r "${2:-}"; N_RUN=$2; shift 2 ;;
    --cache-dir) CACHE_DIR=${2:-}; shift 2 || die "--cache-dir wants a directory" ;;
    --image-only) IMAGE_ONLY=true; shift ;;
    --json) JSON=true; shift ;;
    --keep) KEEP=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done

((EUID == 0)) || die "run me as root"
command -v "$SBX" >/dev/null || die "sbx not found (set SBX=/path/to/sbx)"
SBX=$(realpath "$(command -v "$SBX")")
if [[ -z ${SBX_INIT:-} && -x ${SBX%/*}/sbx-init ]]; then
  export SBX_INIT=${SBX%/*}/sbx-init
fi
for t in docker-registry skopeo curl awk sort shuf python3; do
  command -v $t >/dev/null || die "$t is needed (contrib/setup-debian.sh installs it)"
done
HAVE_PODMAN=false
command -v podman >/dev/null && HAVE_PODMAN=true

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 2

unset SBX_ROOT SBX_RUN_ROOT SBX_CONF
WORK=
REG_PID=
CLEANED=false
exec {OUT_FD}>&1 {ERR_FD}>&2

cleanup ()
{
  $CLEANED && return
  CLEANED=true
  trap '' INT TERM HUP
  exec 1>&"$OUT_FD" 2>&"$ERR_FD"
  local root id
  if [[ -n $REG_PID ]]; then
    kill "$REG_PID" 2>/dev/null
    wait "$REG_PID" 2>/dev/null
  fi
  if [[ -n $WORK ]]; then
    for root in "$WORK"/sbx.* "$WORK/run-store"; do
      [[ -d $root ]] || continue
      for id in $(SBX_ROOT=$root "$SBX" ls -q 2>/dev/null); do
        SBX_ROOT=$root "$SBX" rm -f "$id" >/dev/null 2>&1
      done
      SBX_ROOT=$root "$SBX" gc >/dev/null 2>&1
    done
    for root in "$WORK"/podman.*; do
      [[ -d $root/root ]] || continue
      podman --root "$root/root" --runroot "$root/run" rmi -af >/dev/null 2>&1
    done
    umount_under "$WORK"
    if $KEEP; then note "kept $WORK"; else rm -rf --one-file-system "$WORK"; fi
    leak_report "" "$WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/sbx-bench-pull.XXXXXX") || die "mktemp failed"
LOG=$WORK/log
SAMPLES=$WORK/samples
mkdir -p "$SAMPLES" "$WORK/bin" "$CACHE_DIR" || die "cannot make $WORK or $CACHE_DIR"
: >"$LOG"
cp "$SBX" "$WORK/bin/sbx" || die "cannot copy $SBX"
SBX=$WORK/bin/sbx
if [[ -n ${SBX_INIT:-} ]]; then
  cp "$SBX_INIT" "$WORK/bin/sbx-init" && export SBX_INIT=$WORK/bin/sbx-init
fi
declare -A FAILED=()

# ---------------------------------------------------------------- the image
ARCHIVE=$CACHE_DIR/debian-bookworm-pull-bench.oci.tar
make_archive ()
{
  [[ -s $ARCHIVE ]] && { note "reusing $ARCHIVE"; return 0; }
  note "building the image (debian:bookworm + apt; a few minutes; log $LOG)"
  local ctx=$WORK/ctx root=$WORK/build-store rc
  mkdir -p "$ctx"
  cat >"$ctx/blueprint.json" <<'EOF'
{ "base": "debian:bookworm",
  "steps": [
    { "apt_packages": ["python3"] },
    { "apt_packages": ["git"] },
    { "apt_packages": ["curl", "ca-certificates", "xz-utils"] },
    { "run": ["head -c 24000000 /dev/urandom > /opt/random.bin"] },
    { "cmd": ["bash"] }
  ] }
EOF
  SBX_ROOT=$root SBX_RUN_ROOT=$WORK/build-run "$SBX" build --runtime runc --tag bench "$ctx" >>"$LOG" 2>&1 &&
    SBX_ROOT=$root SBX_RUN_ROOT=$WORK/build-run "$SBX" export bench "$ARCHIVE.tmp" >>"$LOG" 2>&1
  rc=$?
  SBX_ROOT=$root SBX_RUN_ROOT=$WORK/build-run "$SBX" gc >/dev/null 2>&1
  rm -rf --one-file-system "$root"
  ((rc == 0)) || { rm -f "$ARCHIVE.tmp"; tail -5 "$LOG" >&2; die "could not build the image"; }
  mv "$ARCHIVE.tmp" "$ARCHIVE"
}
make_archive
ARCHIVE_MB=$(($(stat -c %s "$ARCHIVE") >> 20))
$IMAGE_ONLY && { note "image archive: $ARCHIVE ($ARCHIVE_MB MiB)"; exit 0; }

# ---------------------------------------------------------------- the registry
PORT=$(python3 -I -S -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
REG=127.0.0.1:$PORT
mkdir -p "$WORK/registry"
cat >"$WORK/registry.yml" <<EOF
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $WORK/registry
http:
  addr: $REG
EOF
docker-registry serve "$WORK/registry.yml" >>"$LOG" 2>&1 &
REG_PID=$!
for _ in $(seq 100); do
  curl -sf -o /dev/null "http://$REG/v2/" && break
  sleep 0.1
done
curl -sf -o /dev/null "http://$REG/v2/" || die "docker-registry did not come up (log $LOG)"
REF=$REG/bench/debian:bookworm
skopeo --insecure-policy copy --dest-tls-verify=false "oci-archive:$ARCHIVE" "docker://$REF" >>"$LOG" 2>&1 ||
  die "skopeo copy into the registry failed (log $LOG)"
LAYERS=$(curl -sf -H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' \
  "http://$REG/v2/bench/debian/manifests/bookworm" | python3 -I -S -c 'import json, sys; d = json.load(sys.stdin); print(len(d["layers"]), sum(l["size"] for l in d["layers"]) >> 20)')
read -r N_LAYERS COMPRESSED_MB <<<"$LAYERS"
note "registry $REG: $REF, $N_LAYERS layers, $COMPRESSED_MB MiB compressed; archive $ARCHIVE_MB MiB"
export SBX_CONF=$WORK/sbx.conf
printf 'registry_insecure = %s\n' "$REG" >"$SBX_CONF"
export SBX_RUN_ROOT=$WORK/run

c_sbx_pull () { SBX_ROOT=$WORK/sbx.$1 "$SBX" pull -q "$REF"; }
c_sbx_pull_present () { SBX_ROOT=$WORK/sbx.$1 "$SBX" pull -q "$REF"; }
c_podman_pull () { podman --root "$WORK/podman.$1/root" --runroot "$WORK/podman.$1/run" pull -q --tls-verify=false "$REF"; }
c_skopeo_oci () { skopeo --insecure-policy copy -q --src-tls-verify=false "docker://$REF" "oci:$WORK/oci.$1:bench"; }

# Empties what a round wrote, untimed.
clear_round ()  # ROUND
{
  local r=$1
  if [[ -d $WORK/sbx.$r ]]; then
    SBX_ROOT=$WORK/sbx.$r "$SBX" gc >/dev/null 2>&1
    rm -rf --one-file-system "$WORK/sbx.$r"
  fi
  if [[ -d $WORK/podman.$r ]]; then
    podman --root "$WORK/podman.$r/root" --runroot "$WORK/podman.$r/run" rmi -af >/dev/null 2>&1
    umount_under "$WORK/podman.$r"
    rm -rf --one-file-system "$WORK/podman.$r"
  fi
  rm -rf "$WORK/oci.$r"
  sync
}

PULL_CASES=(sbx-pull skopeo-oci)
$HAVE_PODMAN && PULL_CASES+=(podman-pull) || note "podman not installed: no podman-pull"
pull_round ()  # ROUND RECORD
{
  local c order
  mapfile -t order < <(shuf -e -- "${PULL_CASES[@]}")
  for c in "${order[@]}"; do
    sync
    timed "$c" "$2" "c_${c//-/_}" "$1"
    [[ $c == sbx-pull && -z ${FAILED[sbx-pull]:-} ]] && timed sbx-pull-present "$2" c_sbx_pull_present "$1"
  done
  clear_round "$1"
}

note "pulls: 1 warm-up + $N timed rounds of ${PULL_CASES[*]} (+ sbx-pull-present)"
for ((i = 0; i <= N; i++)); do
  if ((i == 0)); then pull_round 0 false; else pull_round "$i" true; fi
done

# ---------------------------------------------------------------- run REF vs TAG
RUN_CASES=(run-ref run-tag)
export SBX_ROOT=$WORK/run-store
if [[ -z ${FAILED[sbx-pull]:-} ]] && "$SBX" pull -q "$REF" >>"$LOG" 2>&1 && "$SBX" tag "$REF" bench-local >>"$LOG" 2>&1; then
  c_run_ref () { "$SBX" run --runtime runc --block-network --image "$REF" -- true; }
  c_run_tag () { "$SBX" run --runtime runc --block-network --image bench-local -- true; }
  note "runs: 1 warm-up + $N_RUN timed pairs of ${RUN_CASES[*]}"
  for ((i = 0; i <= N_RUN; i++)); do
    mapfile -t order < <(shuf -e -- "${RUN_CASES[@]}")
    for c in "${order[@]}"; do
      if ((i == 0)); then timed "$c" false "c_${c//-/_}"; else timed "$c" true "c_${c//-/_}"; fi
    done
  done
else
  for c in "${RUN_CASES[@]}"; do FAILED[$c]="no image for the run cases (see $LOG)"; done
fi
unset SBX_ROOT

# ---------------------------------------------------------------- report
stats ()  # NAME -> "runs median_us min_us max_us"
{
  [[ -s $SAMPLES/$1 ]] || return 0
  sort -n "$SAMPLES/$1" | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%d %d %d %d\n", NR, m, v[1], v[NR] }'
}
ms () { awk -v u="$1" 'BEGIN { printf "%.1f", u / 1000 }'; }

declare -A NRUNS MED MIN MAX
ALL=(sbx-pull podman-pull skopeo-oci sbx-pull-present run-ref run-tag)
for c in "${ALL[@]}"; do
  read -r "NRUNS[$c]" "MED[$c]" "MIN[$c]" "MAX[$c]" <<<"$(stats "$c")"
done
R_PODMAN=$(paired_ratio sbx-pull podman-pull)
R_SKOPEO=$(paired_ratio sbx-pull skopeo-oci)
RUN_DIFF=
[[ -n ${MED[run-ref]:-} && -n ${MED[run-tag]:-} ]] && RUN_DIFF=$(awk -v a="${MED[run-ref]}" -v b="${MED[run-tag]}" 'BEGIN { printf "%.1f", (a - b) / 1000 }')
verdict ()  # VALUE OP LIMIT
{
  [[ -n $1 ]] || { echo "-"; return; }
  awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN { ok = (op == "<=") ? (v <= l) : (v < l); print ok ? "met" : "MISSED" }'
}

table ()
{
  printf 'bench-pull: %s (%s layers, %s MiB compressed), %s rounds; runs: %s pairs\n' "$REF" "$N_LAYERS" \
    "$COMPRESSED_MB" "$N" "$N_RUN"
  printf '(the host may be loaded: figures are indicative)\n\n'
  printf '%-18s %4s %10s %9s %9s  %s\n' case runs "median ms" "min ms" "max ms" note
  for c in "${ALL[@]}"; do
    if [[ -n ${FAILED[$c]:-} ]]; then
      printf '%-18s %s\n' "$c" "FAILED: ${FAILED[$c]}"
    elif [[ -n ${NRUNS[$c]:-} ]]; then
      printf '%-18s %4s %10s %9s %9s\n' "$c" "${NRUNS[$c]}" "$(ms "${MED[$c]}")" "$(ms "${MIN[$c]}")" "$(ms "${MAX[$c]}")"
    fi
  done
  printf '\n%-36s %8s %8s\n' target value verdict
  printf '%-36s %8s %8s\n' "sbx-pull/podman-pull <= 0.8" "${R_PODMAN:--}" "$(verdict "$R_PODMAN" '<=' 0.8)"
  printf '%-36s %8s %8s\n' "sbx-pull/skopeo-oci <= 1.1" "${R_SKOPEO:--}" "$(verdict "$R_SKOPEO" '<=' 1.1)"
  local pp=
  [[ -n ${MED[sbx-pull-present]:-} ]] && pp=$(ms "${MED[sbx-pull-present]}")
  printf '%-36s %8s %8s\n' "sbx-pull-present < 50 ms" "${pp:--}" "$(verdict "$pp" '<' 50)"
  printf '%-36s %8s %8s\n' "run-ref - run-tag <= 5 ms" "${RUN_DIFF:--}" "$(verdict "$RUN_DIFF" '<=' 5)"
}

if $JSON; then
  table >&2
  {
    printf '{"ref": "%s", "rounds": %s, "run_pairs": %s, "cases": {' "$REF" "$N" "$N_RUN"
    sep=
    for c in "${ALL[@]}"; do
      [[ -n ${NRUNS[$c]:-} ]] || continue
      printf '%s"%s": {"runs": %s, "median_ms": %s, "min_ms": %s, "max_ms": %s}' "$sep" "$c" "${NRUNS[$c]}" \
        "$(ms "${MED[$c]}")" "$(ms "${MIN[$c]}")" "$(ms "${MAX[$c]}")"
      sep=", "
    done
    printf '}, "ratios": {"sbx_pull/podman_pull": %s, "sbx_pull/skopeo_oci": %s}, "run_ref_minus_tag_ms": %s}\n' \
      "${R_PODMAN:-null}" "${R_SKOPEO:-null}" "${RUN_DIFF:-null}"
  }
else
  table
fi
((${#FAILED[@]} == 0))
