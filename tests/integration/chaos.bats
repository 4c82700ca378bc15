#!/usr/bin/env bats
# Chaos: kill -9 of the CLI, the sandbox's monitor or the runtime at a
# random point of create, exec, fs write, commit, snapshot, restore,
# terminate, build and import, on a seeded schedule. After each round every
# sandbox and image of the root still reads back, and once everything is
# removed `sbx gc` leaves nothing of the root: no mount, netns, veth, nft
# chain, cgroup, lease, runtime state or process (sbx_leaks).
#
# SBX_CHAOS_ROUNDS rounds (20 by default, what `make check` runs; CI and the
# README's Proof run 200), SBX_CHAOS_SEED replays a schedule: the seed is printed first
# and with every failure. The last line says how many faults landed (a kill
# whose target had already ended is not counted; such a round's operation
# must have succeeded). SBX_CHAOS_VERBOSE=1 prints every round.

load ../helpers/common

CHAOS_OPS=(create exec fswrite commit snapshot restore terminate build import)
CHAOS_VICTIMS=(cli monitor runtime)

# chaos_say TEXT: a line on the TAP stream (bats shows fd 3).
chaos_say () {
  printf '# %s\n' "$*" >&3
}

# The pids, one a line, of this root's processes of kind $1: its monitors
# (by SBX_ROOT in their environment) or its runtime's processes (runc and
# runsc run with --root under this test's run root).
chaos_pids () {
  local p
  case $1 in
    monitor)
      for p in $(sbx_pids sbx-monitor); do
        tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "SBX_ROOT=$SBX_ROOT" && echo "$p"
      done
      ;;
    runtime)
      for p in $(sbx_pids runc) $(sbx_pids runsc) $(sbx_pids runsc-sandbox) $(sbx_pids runsc-gofer) $(sbx_pids exe); do
        tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -qF "$SBX_RUN_ROOT/runtime/" && echo "$p"
      done
      ;;
  esac
  return 0
}

# A two-step blueprint on busybox, its run step long enough to be hit.
chaos_context () {
  CHAOS_CTX=$BATS_TEST_TMPDIR/ctx
  mkdir -p "$CHAOS_CTX"
  printf 'chaos\n' >"$CHAOS_CTX/f.txt"
  cat >"$CHAOS_CTX/blueprint.json" <<'JSON'
{
  "base": "busybox",
  "steps": [
    { "run": ["sleep 0.2; echo built > /built"] },
    { "files": [ { "src": "f.txt", "dest": "/etc/chaos.txt" } ] }
  ]
}
JSON
}

# chaos_op OP RT TARGET: the operation under fault, run in the background
# by the caller; TARGET is the round's sandbox or snapshot.
chaos_op () {
  local op=$1 rt=$2 target=$3
  # exec: the caller's $! is the CLI itself, the process a kill must hit.
  case $op in
    create) exec "$SBX_BIN" create --runtime "$rt" ;;
    exec) exec "$SBX_BIN" exec "$target" -- sh -c 'echo start; sleep 0.3; echo end' ;;
    fswrite) exec "$SBX_BIN" fs "$target" write /tmp/chaos.bin <"$BATS_FILE_TMPDIR/payload.tar" ;;
    commit) exec "$SBX_BIN" commit --tag chaos-commit "$target" ;;
    snapshot) exec "$SBX_BIN" snapshot "$target" ;;
    restore) exec "$SBX_BIN" restore "$target" ;;
    terminate) exec "$SBX_BIN" terminate "$target" ;;
    build) exec "$SBX_BIN" build --runtime "$rt" --tag chaos-build "$CHAOS_CTX" ;;
    import) exec "$SBX_BIN" import --tag chaos-import "$BATS_FILE_TMPDIR/payload.tar" ;;
  esac
}

# chaos_prepare OP RT: what the operation works on, made without a fault.
chaos_prepare () {
  local op=$1 rt=$2 id
  case $op in
    create | build | import) echo - ;;
    snapshot) "$SBX_BIN" create --runtime runsc --block-network ;;
    restore)
      id=$("$SBX_BIN" create --runtime runsc --block-network) || return
      "$SBX_BIN" snapshot "$id"
      ;;
    *) "$SBX_BIN" create --runtime "$rt" ;;
  esac
}

# chaos_kill VICTIM CLIPID: kills one process of VICTIM's kind now; says
# whether there was one.
chaos_kill () {
  local victim=$1 cli=$2 pids n
  if [ "$victim" = cli ]; then
    kill -9 "$cli" 2>/dev/null
    return
  fi
  pids=($(chaos_pids "$victim"))
  n=${#pids[@]}
  [ "$n" -gt 0 ] || return 1
  kill -9 "${pids[RANDOM % n]}" 2>/dev/null
}

# chaos_check_readback ALL: every sandbox's status and log, every snapshot
# and the images a round made, or with ALL=1 every image, read back (an
# image exported whole: its OCI archive lists as a tar).
chaos_check_readback () {
  local all=$1 out id img
  out=$("$SBX_BIN" --json ls) || fail "ls: $out" || return
  json_valid "$out" || return
  for id in $(jget '" ".join(s["id"] for s in d)' "$out"); do
    out=$("$SBX_BIN" --json status "$id") || fail "status $id: $out" || return
    json_valid "$out" || return
    "$SBX_BIN" logs "$id" >/dev/null || fail "logs $id" || return
  done
  out=$("$SBX_BIN" --json snapshots) || fail "snapshots: $out" || return
  json_valid "$out" || return
  out=$("$SBX_BIN" --json images) || fail "images: $out" || return
  for img in $(jget '" ".join(i["id"] for i in d if '"$all"' or any(t.startswith("chaos-") for t in i.get("tags", [])))' "$out"); do
    rm -f "$BATS_TEST_TMPDIR/export.tar"
    "$SBX_BIN" export "$img" "$BATS_TEST_TMPDIR/export.tar" || fail "export $img" || return
    tar -tf "$BATS_TEST_TMPDIR/export.tar" >/dev/null 2>&1 || fail "export of $img is not a whole tar" || return
  done
}

# chaos_clear: ends and removes every sandbox, snapshot and chaos image,
# then gc; nothing of the root may be left.
chaos_clear () {
  local id out leaks
  for id in $("$SBX_BIN" ls -q); do
    "$SBX_BIN" terminate "$id" >/dev/null 2>&1 || true
  done
  for id in $("$SBX_BIN" snapshots -q); do
    "$SBX_BIN" rmsnap "$id" >/dev/null || fail "rmsnap $id" || return
  done
  out=$("$SBX_BIN" gc 2>&1) || fail "gc: $out" || return
  for id in chaos-commit chaos-build chaos-import; do
    "$SBX_BIN" rmi "$id" >/dev/null 2>&1 || true
  done
  out=$("$SBX_BIN" gc 2>&1) || fail "gc: $out" || return
  leaks=$(sbx_leaks)
  [ -z "$leaks" ] || fail "LEAK after gc: $leaks" || return
}

@test "chaos: kill -9 of CLI, monitor or runtime at random points; gc leaves nothing, all reads back" {
  require_runtime runc
  require_runtime runsc
  local rounds=${SBX_CHAOS_ROUNDS:-20} seed=${SBX_CHAOS_SEED:-$((($(date +%s%N) / 1000) % 1000000))}
  local round op victim rt target delay pid rc hit landed=0 i t0 tr
  chaos_say "chaos: seed $seed, $rounds rounds (SBX_CHAOS_SEED=$seed replays)"
  chaos_context
  sbx_import_payload
  RANDOM=$seed
  t0=$SECONDS
  for round in $(seq "$rounds"); do
    op=${CHAOS_OPS[RANDOM % ${#CHAOS_OPS[@]}]}
    victim=${CHAOS_VICTIMS[RANDOM % ${#CHAOS_VICTIMS[@]}]}
    rt=runc
    [ $((RANDOM % 4)) -eq 0 ] && rt=runsc
    delay=$((RANDOM % 800))
    tr=$SECONDS
    target=$(chaos_prepare "$op" "$rt") || fail "seed $seed round $round: preparing $op failed: $target" || return
    chaos_op "$op" "$rt" "$target" >"$BATS_TEST_TMPDIR/op.out" 2>&1 &
    pid=$!
    sleep "$(printf '0.%03d' "$delay")"
    hit=0
    chaos_kill "$victim" "$pid" && hit=1 && landed=$((landed + 1))
    # The operation ends by itself (done, failed, or killed), never hangs.
    rc=0
    for i in $(seq 600); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -9 "$pid"
      fail "seed $seed round $round: $op [$rt] still running 60 s after $victim was killed at ${delay} ms"
      return
    fi
    wait "$pid" || rc=$?
    # Without a fault the operation succeeds.
    [ "$hit" = 1 ] || [ "$rc" = 0 ] \
      || fail "seed $seed round $round: $op [$rt] failed (exit $rc) with no $victim to kill: $(cat "$BATS_TEST_TMPDIR/op.out")" \
      || return
    chaos_check_readback "$((round % 10 == 0 || round == rounds))" || fail "seed $seed round $round: $op [$rt], $victim killed at ${delay} ms: read back" || return
    chaos_clear || fail "seed $seed round $round: $op [$rt], $victim killed at ${delay} ms" || return
    [ -z "${SBX_CHAOS_VERBOSE-}" ] \
      || chaos_say "round $round: $op [$rt], kill $victim at ${delay} ms: exit $rc, $((SECONDS - tr)) s"
  done
  chaos_say "chaos: seed $seed, $rounds rounds, $landed faults injected, 0 leaks, $((SECONDS - t0)) s"
}
