#!/usr/bin/env bats
# Images from registries (sbx-pull(1)): pull by tag, digest and short name,
# platform choice in an index, whiteouts, layer dedupe, resume after a killed
# pull, --pull on create and run, login and logout (basic auth, bearer
# tokens), TLS with a CA of the test's own, push, and every way a registry
# can break the protocol: a clear error code and nothing changed in the
# store. All registries are on loopback, started by this file (see
# tests/helpers/registry.bash) and shared by its tests:
#   plain   docker-registry, HTTP, holding the fixtures (busybox, multi,
#           multiarch)
#   count   a counting proxy (no auth) in front of plain: most pulls go
#           through it so a test can count requests
#   tls     docker-registry with TLS (a CA made here), holding busybox
#   auth    docker-registry with htpasswd basic auth, holding busybox
#   bearer  the token issuer in front of plain, for good credentials only
#   anon    the token issuer in front of plain, anonymous tokens
#   bad     tests/registry/bad-registry.py, one broken image per repository

load ../helpers/common
load ../helpers/registry

# One line every test's store state is compared by: the layers and images.
store_state () {
  ls -1 "$SBX_ROOT/layers/sha256" 2>/dev/null | sort
  echo --
  "$SBX_BIN" images -q 2>&1 | sort
}

# No work directory is left under ROOT/layers/tmp.
expect_no_tmp () {
  local left
  left=$(ls -A "$SBX_ROOT/layers/tmp" 2>/dev/null || true)
  [ -z "$left" ] || fail "left under $SBX_ROOT/layers/tmp: $left"
}

# expect_pull_fails CODE REF [MESSAGE]: `sbx pull REF` fails with CODE (and
# MESSAGE in its message when given) and changes nothing in the store.
expect_pull_fails () {
  local code=$1 ref=$2 msg=${3-} before after
  before=$(store_state)
  expect_error "$code" pull "$ref" || return
  if [ -n "$msg" ]; then
    expect_contains "$(jget 'd["error"]["message"]')" "$msg" || return
  fi
  after=$(store_state)
  expect_eq "$after" "$before" "the store after a failed pull of $ref" || return
  expect_no_tmp
}

# reg_conf LINE...: appends to this test's sbx.conf.
reg_conf () {
  printf '%s\n' "$@" >>"$SBX_CONF"
}

# The image id `sbx pull` printed is one `sbx images -q` lists.
expect_image_id () {
  [[ $1 =~ ^sha256:[0-9a-f]{12,64}$ ]] || fail "not an image id: '$1'" || return
  expect_contains "$("$SBX_BIN" images -q)" "$1"
}

# The tags of image ID (sbx images --json).
image_tags () {
  "$SBX_BIN" --json images | jpipe "[','.join(i['tags']) for i in d if i['id'].startswith('$1') or '$1'.startswith(i['id'])][0]"
}

# The layer digests of REPO:TAG's manifest in registry plain, one a line.
manifest_layers () {
  curl -sf --max-time 10 -H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' \
    "http://$REG_plain/v2/${1%%:*}/manifests/${1#*:}" | jpipe '"\n".join(l["digest"] for l in d["layers"])'
}

# The fixtures, built once in a root of their own: busybox (sbx export of
# the built-in), multi (a blueprint on busybox: a run step writes files, the
# next deletes a file of the base, a file of the previous layer and
# replaces a directory: whiteouts and an opaque directory) and multiarch (an
# index of linux/arm64, linux/arm/v7 and linux/amd64 images, each busybox
# plus /etc/arch naming its platform).
build_fixtures () {
  local fix out
  fix=$(mktemp -d /tmp/sbx-regfix.XXXXXX)
  (
    export SBX_TEST_DIR=$fix SBX_ROOT=$fix/root SBX_RUN_ROOT=$fix/run
    sbx_write_conf || exit 1
    "$SBX_BIN" export busybox "$BATS_FILE_TMPDIR/busybox.tar" >/dev/null || exit 1
    mkdir -p "$fix/ctx"
    cat >"$fix/ctx/blueprint.json" <<'JSON'
{
  "base": "busybox",
  "steps": [
    { "run": ["mkdir -p /opt/d/sub && echo lower > /opt/d/sub/f && echo keep > /opt/keep && echo gone > /opt/gone"] },
    { "run": ["rm /opt/gone /etc/hostname", "rm -rf /opt/d && mkdir /opt/d && echo new > /opt/d/new"] },
    { "cmd": ["cat", "/opt/keep"] }
  ]
}
JSON
    out=$("$SBX_BIN" build --runtime runc --tag multi "$fix/ctx" 2>&1) || { echo "build multi: $out" >&2; exit 1; }
    "$SBX_BIN" export multi "$BATS_FILE_TMPDIR/multi.tar" >/dev/null || exit 1
    "$SBX_BIN" gc >/dev/null 2>&1
  )
  local rc=$?
  rm -rf --one-file-system "$fix"
  [ $rc -eq 0 ] || return $rc
  reg_skopeo_push "oci-archive:$BATS_FILE_TMPDIR/busybox.tar" plain busybox:latest || return
  reg_skopeo_push "oci-archive:$BATS_FILE_TMPDIR/multi.tar" plain multi:latest || return
  py "$SBX_TESTS_DIR/registry/make-index.py" "http://$REG_plain" busybox latest multiarch latest \
    >"$BATS_FILE_TMPDIR/multiarch.digest" || return
  reg_skopeo_push "oci-archive:$BATS_FILE_TMPDIR/busybox.tar" tls busybox:latest || return
  reg_skopeo_push "oci-archive:$BATS_FILE_TMPDIR/busybox.tar" auth busybox:latest \
    --dest-creds "$REG_HTPASSWD_USER:$REG_PASSWORD" || return
}

setup_file () {
  local t
  for t in docker-registry skopeo openssl curl script; do
    command -v "$t" >/dev/null || skip "$t is not installed (contrib/setup-debian.sh installs it)"
  done
  # A password no other text of the test holds, to look for everywhere. Not
  # exported (sbx's environment must not carry it): setup reads it back.
  REG_PASSWORD=Pw-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')-secret
  printf '%s\n' "$REG_PASSWORD" >"$BATS_FILE_TMPDIR/password"
  reg_start plain plain || return
  reg_start tls tls || return
  reg_start auth auth "$REG_PASSWORD" || return
  reg_start_proxy count plain --auth none || return
  reg_start_proxy bearer plain --user "$REG_HTPASSWD_USER:$REG_PASSWORD" || return
  reg_start_proxy anon plain --anonymous || return
  reg_start_bad bad --drip-interval 1 || return
  sbx_pick_test_nets || return
  build_fixtures || return
  mkdir -p "$BATS_FILE_TMPDIR/certs.d/$REG_tls" "$BATS_FILE_TMPDIR/no-certs.d"
  cp "$BATS_FILE_TMPDIR/ca/ca.crt" "$BATS_FILE_TMPDIR/certs.d/$REG_tls/ca.crt"
}

teardown_file () {
  reg_stop_all
}

setup () {
  REG_PASSWORD=$(cat "$BATS_FILE_TMPDIR/password")
  sbx_setup || return
  # Plain HTTP only for the loopback registries named here; certs.d empty
  # unless a test names the one with the test CA.
  reg_conf "registry_insecure = $REG_plain" "registry_insecure = $REG_count" "registry_insecure = $REG_auth" \
    "registry_insecure = $REG_bearer" "registry_insecure = $REG_anon" "registry_insecure = $REG_bad"
}

teardown () {
  sbx_teardown
}

# --- pull ---------------------------------------------------------------------------

@test "registry: pull by tag prints the id, stores the full reference, and the image runs" {
  require_runtime runc
  local ref=$REG_count/busybox:latest id
  run --separate-stderr sbx pull "$ref"
  expect_status 0
  id=$output
  expect_image_id "$id"
  # Not a terminal: no progress.
  expect_eq "$stderr" "" "stderr of a pull to a pipe"
  expect_contains "$(image_tags "$id")" "$ref"
  run sbx images
  expect_contains "$output" "$ref"
  run sbx run --runtime runc --image "$ref" -- sh -c 'echo ran; test -x /bin/busybox && echo busybox'
  expect_status 0
  expect_eq "$output" "ran
busybox"
  # --json: the image record as `sbx images --json` prints it.
  run --separate-stderr sbx pull --json "$ref"
  expect_status 0
  json_valid
  expect_eq "$(jget 'd["id"]')" "$id" "id of pull --json"
  expect_contains "$(jget '",".join(d["tags"])')" "$ref"
  [ "$(jget 'd["size"]')" -gt 0 ] || fail "size: $output"
  [ "$(jget 'len(d["layers"])')" -ge 1 ] || fail "layers: $output"
  jget 'd["created"]' >/dev/null
  expect_no_tmp
}

@test "registry: pull by digest gives the image pulled by tag" {
  local digest id
  digest=$(reg_digest plain busybox:latest)
  [[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || fail "registry digest: '$digest'"
  run --separate-stderr sbx pull "$REG_count/busybox@$digest"
  expect_status 0
  id=$output
  expect_image_id "$id"
  run --separate-stderr sbx pull -q "$REG_count/busybox:latest"
  expect_status 0
  expect_eq "$output" "$id" "id by tag vs by digest"
  # A digest the registry does not have.
  expect_pull_fails NOT_FOUND "$REG_count/busybox@sha256:$(printf 0%.0s $(seq 64))"
}

@test "registry: a short name resolves through unqualified_registry" {
  reg_conf "unqualified_registry = $REG_count"
  local before id
  before=$(reg_count count '^GET /v2/multi/manifests/latest')
  run --separate-stderr sbx pull multi
  expect_status 0
  id=$output
  expect_image_id "$id"
  expect_eq "$(reg_count count '^GET /v2/multi/manifests/latest')" $((before + 1)) "manifest GETs of multi:latest"
  expect_contains "$(image_tags "$id")" "$REG_count/multi:latest"
  run sbx images
  expect_contains "$output" "$REG_count/multi:latest"
}

@test "registry: an index gives the host's platform; --platform picks another; none matching lists them" {
  require_runtime runc
  [ "$(uname -m)" = x86_64 ] || skip "the index fixture's host entry is linux/amd64"
  local ref=$REG_count/multiarch:latest
  run --separate-stderr sbx pull "$ref"
  expect_status 0
  run sbx run --runtime runc --image "$ref" -- cat /etc/arch
  expect_status 0
  expect_eq "$output" "linux/amd64" "the platform pulled by default"
  # The same reference for another platform (the test runs its amd64 busybox:
  # the image only says arm64).
  run --separate-stderr sbx pull --platform linux/arm64 -q "$ref"
  expect_status 0
  run sbx run --runtime runc --image "$output" -- cat /etc/arch
  expect_status 0
  expect_eq "$output" "linux/arm64" "--platform linux/arm64"
  run --separate-stderr sbx pull --platform linux/arm/v7 -q "$ref"
  expect_status 0
  run sbx run --runtime runc --image "$output" -- cat /etc/arch
  expect_status 0
  expect_eq "$output" "linux/arm/v7" "--platform linux/arm/v7"
  # No entry for it: an error that lists what there is.
  local before
  before=$(store_state)
  run --separate-stderr sbx --json pull --platform linux/s390x "$ref"
  expect_status 125
  local msg
  msg=$(jget 'd["error"]["message"]')
  expect_contains "$msg" "linux/s390x"
  expect_contains "$msg" "linux/arm64"
  expect_contains "$msg" "linux/arm/v7"
  expect_contains "$msg" "linux/amd64"
  expect_eq "$(store_state)" "$before" "the store after no platform matched"
  # A platform that is not OS/ARCH[/VARIANT].
  expect_error INVALID_ARGUMENT pull --platform 'linux' "$ref"
}

@test "registry: a multi-layer image with whiteouts shows the files of its top layer" {
  require_runtime runc
  run --separate-stderr sbx pull "$REG_count/multi:latest"
  expect_status 0
  run sbx run --runtime runc --image "$REG_count/multi:latest" -- sh -c \
    'cat /opt/keep; ls /opt/d; cat /opt/d/new; for f in /opt/gone /etc/hostname /opt/d/sub; do test -e $f && echo "$f is there"; done; echo end'
  expect_status 0
  expect_eq "$output" "keep
new
new
end" "files a sandbox of multi sees"
  # And the image's command came with it.
  run sbx run --runtime runc --image "$REG_count/multi:latest"
  expect_status 0
  expect_eq "$output" "keep" "the image's cmd"
}

@test "registry: layers in the store are not downloaded again" {
  local bb_layers own before_bb bb_total l n
  bb_layers=$(manifest_layers busybox:latest)
  [ -n "$bb_layers" ] || fail "no layers for busybox"
  run --separate-stderr sbx pull "$REG_count/busybox:latest"
  expect_status 0
  # (The request log is the file's: other tests pulled multi before.)
  own=$(comm -13 <(printf '%s\n' "$bb_layers" | sort) <(manifest_layers multi:latest | sort))
  [ "$(printf '%s\n' "$own" | grep -c .)" -ge 1 ] || fail "multi has no layer of its own"
  local -A was
  for l in $bb_layers $own; do
    was[$l]=$(reg_count count "^GET /v2/multi/blobs/$l")
  done
  before_bb=$(reg_count count '^GET /v2/multi/blobs/')
  run --separate-stderr sbx pull "$REG_count/multi:latest"
  expect_status 0
  # multi = busybox's layers + its own: only its own (and its config) came.
  for l in $bb_layers; do
    expect_eq "$(reg_count count "^GET /v2/multi/blobs/$l")" "${was[$l]}" "GETs of busybox's layer $l through multi" || return
  done
  for l in $own; do
    expect_eq "$(reg_count count "^GET /v2/multi/blobs/$l")" "$((was[$l] + 1))" "GETs of multi's layer $l" || return
  done
  n=$(reg_count count '^GET /v2/multi/blobs/')
  expect_eq "$((n - before_bb))" "$(($(printf '%s\n' "$own" | grep -c .) + 1))" "blob GETs of multi (own layers + config)"
  # A pull of what is present: one manifest request, no blob.
  bb_total=$(reg_count count '/blobs/')
  l=$(reg_count count '^(GET|HEAD) /v2/multi/manifests/')
  run --separate-stderr sbx pull "$REG_count/multi:latest"
  expect_status 0
  expect_eq "$(reg_count count '/blobs/')" "$bb_total" "blob requests of a pull of a present image"
  expect_eq "$(reg_count count '^(GET|HEAD) /v2/multi/manifests/')" "$((l + 1))" "manifest requests of a pull of a present image"
}

# Waits (10 s at most) until no process of this test's root is left: one
# with SBX_ROOT in its environment, or its cwd or root under the test dir.
wait_root_quiet () {
  local i p busy
  for i in $(seq 100); do
    busy=
    for p in $(pgrep '^sbx'); do
      if tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "SBX_ROOT=$SBX_ROOT"; then
        busy="$busy $p"
      fi
    done
    busy="$busy$(find /proc/[0-9]*/cwd /proc/[0-9]*/root -maxdepth 0 \( -lname "$SBX_TEST_DIR" -o -lname "$SBX_TEST_DIR/*" \) \
      -printf ' %p' 2>/dev/null)"
    [ -z "$busy" ] && return 0
    sleep 0.1
  done
  fail "processes of the interrupted pull are still there after 10 s:$busy"
}

# resume_case SIGNAL REPO: a pull whose top layer comes slowly is ended by
# SIGNAL once the two other layers are in the store; the next pull fetches
# only the slow one.
resume_case () {
  local sig=$1 repo=$2 ref=$REG_bad/$2:latest pid i n rc
  # The pull itself is the job (not a subshell running the sbx function),
  # with SIGINT at its default as under a terminal (bash starts background
  # jobs with it ignored).
  "$PYTHON" -I -S -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$SBX_BIN" pull "$ref" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
  pid=$!
  for i in $(seq 200); do
    n=$(find "$SBX_ROOT/layers/sha256" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    [ "$n" -ge 2 ] && [ "$(reg_count bad "^GET /v2/$repo/blobs/")" -ge 4 ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  [ "$n" -ge 2 ] || fail "the two fast layers did not land in 20 s ($n): $(cat "$BATS_TEST_TMPDIR/err")" || return
  kill -0 "$pid" 2>/dev/null || fail "the pull ended before it was interrupted: $(cat "$BATS_TEST_TMPDIR/err")" || return
  kill -"$sig" "$pid"
  rc=0
  wait "$pid" || rc=$?
  case $sig in
    INT) expect_eq "$rc" 130 "exit status of a pull stopped by SIGINT" || return
      [ -s "$BATS_TEST_TMPDIR/err" ] || fail "no message from the pull stopped by SIGINT" || return
      expect_eq "$(cat "$BATS_TEST_TMPDIR/out")" "" "stdout of a stopped pull" || return
      expect_no_tmp || return ;;
    TERM) expect_eq "$rc" 143 "exit status of a pull stopped by SIGTERM" || return
      expect_no_tmp || return ;;
    KILL) expect_eq "$rc" 137 "exit status of kill -9" || return ;;
  esac
  # Nothing of it runs on (the extraction child included).
  wait_root_quiet || return
  [ -z "$("$SBX_BIN" images -q)" ] || fail "an image was stored by an interrupted pull" || return
  local fast slow before_fast before_slow
  fast=$(reg_count bad "^GET /v2/$repo/blobs/sha256:[0-9a-f]+ fast")
  before_slow=$(reg_count bad "^GET /v2/$repo/blobs/.* slow")
  run --separate-stderr sbx pull "$ref"
  expect_status 0 || return
  expect_image_id "$output" || return
  expect_eq "$(reg_count bad "^GET /v2/$repo/blobs/sha256:[0-9a-f]+ fast")" "$fast" "GETs of the complete layers after the interruption" || return
  [ "$(reg_count bad "^GET /v2/$repo/blobs/.* slow")" -gt "$before_slow" ] || fail "the slow layer was not fetched again" || return
  if [ "$sig" = KILL ]; then
    # A process killed outright cannot clean up: its work directory stays,
    # unlocked, and `sbx gc` removes such a directory once it is a minute
    # old (younger ones may be a concurrent import's, between its mkdir and
    # flock). Aged here rather than waited for.
    local d
    for d in "$SBX_ROOT"/layers/tmp/*; do
      [ -e "$d" ] && touch -d '2 minutes ago' "$d"
    done
    "$SBX_BIN" gc >/dev/null || fail "sbx gc failed" || return
  fi
  expect_no_tmp
}

@test "registry: a pull killed with SIGKILL resumes from the layers that were complete" {
  resume_case KILL slow1
}

@test "registry: SIGINT stops a pull with 130, keeps finished layers, and the next pull resumes" {
  resume_case INT slow2
}

@test "registry: a progress line per layer on a terminal, none with --quiet" {
  local ref=$REG_count/multi:latest short
  short=$(manifest_layers multi:latest | tail -n 1 | cut -c8-15)
  run script -qec "$SBX_BIN pull $ref" /dev/null
  expect_status 0
  expect_contains "$output" "$short"
  # Redrawn in place: a carriage return or a cursor movement.
  case $output in
    *$'\r'[!$'\n']* | *$'\e['*) ;;
    *) fail "no line redrawn in the progress: $output" ;;
  esac
  sbx rmi "$ref" >/dev/null
  run script -qec "$SBX_BIN pull --quiet $ref" /dev/null
  expect_status 0
  expect_not_contains "$output" "$short"
}

# --- --pull on create and run -------------------------------------------------------

@test "registry: --pull never, missing and always on create and run" {
  require_runtime runc
  local ref=$REG_count/busybox:latest n id
  expect_error INVALID_ARGUMENT create --pull sometimes --image "$ref"
  # never, image absent: NOT_FOUND, no request.
  n=$(reg_count count .)
  expect_error NOT_FOUND create --pull never --image "$ref"
  expect_error NOT_FOUND run --runtime runc --pull never --image "$ref" -- true
  expect_eq "$(reg_count count .)" "$n" "requests of --pull never"
  expect_eq "$("$SBX_BIN" images -q)" "" "images after --pull never"
  # missing (the default), absent: pulled, and the sandbox runs.
  run sbx run --runtime runc --image "$ref" -- echo pulled-and-ran
  expect_status 0
  expect_eq "$(last_line)" pulled-and-ran
  [ "$(reg_count count .)" -gt "$n" ] || fail "run --image REF (absent) made no request"
  # missing, present: no request at all.
  n=$(reg_count count .)
  run sbx create --runtime runc --image "$ref"
  expect_status 0
  id=$output
  sbx rm -f "$id" >/dev/null
  run sbx run --runtime runc --pull missing --image "$ref" -- true
  expect_status 0
  run sbx run --runtime runc --pull never --image "$ref" -- true
  expect_status 0
  expect_eq "$(reg_count count .)" "$n" "requests of create/run with the image present (missing, never)"
  # always, present: the manifest is asked for, no blob.
  local blobs
  blobs=$(reg_count count '/blobs/')
  run sbx run --runtime runc --pull always --image "$ref" -- true
  expect_status 0
  [ "$(reg_count count '^(GET|HEAD) /v2/busybox/manifests/')" -gt 0 ] || fail "--pull always asked for no manifest"
  [ "$(reg_count count .)" -gt "$n" ] || fail "--pull always made no request"
  expect_eq "$(reg_count count '/blobs/')" "$blobs" "blob requests of --pull always with the image present"
}

@test "registry: a blueprint's base may be a registry reference" {
  require_runtime runc
  mkdir -p "$BATS_TEST_TMPDIR/ctx"
  printf '{"base": "%s", "steps": [{"run": ["echo built > /built"]}]}\n' "$REG_count/multi:latest" \
    >"$BATS_TEST_TMPDIR/ctx/blueprint.json"
  run --separate-stderr sbx build --runtime runc --tag frombase "$BATS_TEST_TMPDIR/ctx"
  expect_status 0
  run sbx run --runtime runc --image frombase -- cat /built /opt/keep
  expect_status 0
  expect_eq "$output" "built
keep"
}

# --- auth -------------------------------------------------------------------------

# Every process named sbx* and its argv, sampled while the test runs, into
# FILE; stop with `kill $SAMPLER`.
start_sampler () {
  (
    # (A process may end between pgrep and the read: not an error here.)
    set +e
    while :; do
      for p in $(pgrep '^sbx'); do
        tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null && echo
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null
      done
      sleep 0.02
    done
  ) >"$1" 2>/dev/null 3>&- &
  SAMPLER=$!
}

# The password, and the base64 forms auth.json and an Authorization header
# use, appear nowhere under the test's directory but ROOT/auth.json, nor in
# TEXT (outputs).
expect_no_credential () {
  local b64 hits pat
  b64=$(printf '%s:%s' "$REG_HTPASSWD_USER" "$REG_PASSWORD" | base64 -w0)
  for pat in "$REG_PASSWORD" "$b64" "${b64%%=*}"; do
    hits=$({ grep -rlF -- "$pat" "$SBX_TEST_DIR" 2>/dev/null || true; } | { grep -vxF -e "$SBX_ROOT/auth.json" -e "$SBX_TEST_DIR/sbx.conf" || true; })
    [ -z "$hits" ] || fail "the credential is written in: $hits" || return
    expect_not_contains "$1" "$pat" || return
  done
}

@test "registry: login, pull and logout against basic auth; a bad password writes nothing" {
  local ref=$REG_auth/busybox:latest all= sample=$BATS_TEST_TMPDIR/argv
  start_sampler "$sample"
  expect_pull_fails PERMISSION_DENIED "$ref"
  all+=$output$stderr
  # A wrong password: refused, nothing stored.
  run --separate-stderr "$SBX_BIN" --json login -u "$REG_HTPASSWD_USER" --password-stdin "$REG_auth" <<<"wrong-$REG_PASSWORD"
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" PERMISSION_DENIED
  all+=$output$stderr
  [ ! -e "$SBX_ROOT/auth.json" ] || fail "auth.json written by a failed login: $(cat "$SBX_ROOT/auth.json")"
  # --username is required.
  run --separate-stderr "$SBX_BIN" --json login --password-stdin "$REG_auth" <<<"$REG_PASSWORD"
  expect_status 125
  all+=$output$stderr
  [ ! -e "$SBX_ROOT/auth.json" ] || fail "auth.json written by a login without --username"
  # The right one.
  run --separate-stderr "$SBX_BIN" login -u "$REG_HTPASSWD_USER" --password-stdin "$REG_auth" <<<"$REG_PASSWORD"
  expect_status 0
  expect_contains "$output" "Login Succeeded"
  all+=$output$stderr
  expect_eq "$(stat -c %a "$SBX_ROOT/auth.json")" 600 "mode of auth.json"
  grep -qF "\"$REG_auth\"" "$SBX_ROOT/auth.json" || fail "auth.json names no $REG_auth: $(cat "$SBX_ROOT/auth.json")"
  run --separate-stderr sbx --json pull "$ref"
  expect_status 0
  all+=$output$stderr
  run --separate-stderr sbx run --runtime runc --image "$ref" -- true
  all+=$output$stderr
  # logout: the entry is gone, and so is the access.
  run --separate-stderr sbx logout "$REG_auth"
  expect_status 0
  all+=$output$stderr
  if [ -e "$SBX_ROOT/auth.json" ]; then
    ! grep -qF "\"$REG_auth\"" "$SBX_ROOT/auth.json" || fail "logout left $REG_auth in auth.json"
  fi
  sbx rmi --force "$ref" >/dev/null
  expect_pull_fails PERMISSION_DENIED "$ref"
  all+=$output$stderr
  kill "$SAMPLER" || fail "the argv sampler had stopped"
  wait "$SAMPLER" 2>/dev/null || true
  [ -s "$sample" ] || fail "the argv sampler saw no sbx process"
  expect_no_credential "$all$(cat "$sample")"
  # Nor in what the registry was sent as a URL (the request log has paths).
  expect_not_contains "$(reg_log auth)" "$REG_PASSWORD"
}

@test "registry: bearer tokens with credentials (login) and anonymous" {
  local ref=$REG_bearer/busybox:latest all= t
  # Anonymous tokens: no login needed.
  run --separate-stderr sbx pull "$REG_anon/busybox:latest"
  expect_status 0
  expect_image_id "$output"
  [ "$(reg_count anon '^GET /token')" -ge 1 ] || fail "no token asked for: $(reg_log anon)"
  [ "$(reg_count anon '^GET /v2/busybox/manifests/.* bearer$')" -ge 1 ] || fail "no manifest GET with a token: $(reg_log anon)"
  # A token issuer that wants credentials: refused without them.
  expect_pull_fails PERMISSION_DENIED "$ref"
  all+=$output$stderr
  run --separate-stderr "$SBX_BIN" --json login -u "$REG_HTPASSWD_USER" --password-stdin "$REG_bearer" <<<nope
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" PERMISSION_DENIED
  [ ! -e "$SBX_ROOT/auth.json" ] || fail "auth.json written by a failed login"
  run --separate-stderr "$SBX_BIN" login --username "$REG_HTPASSWD_USER" --password-stdin "$REG_bearer" < <(printf '%s' "$REG_PASSWORD")
  expect_status 0
  expect_contains "$output" "Login Succeeded"
  all+=$output$stderr
  t=$(reg_count bearer '^GET /token basic$')
  run --separate-stderr sbx pull "$ref"
  expect_status 0
  all+=$output$stderr
  [ "$(reg_count bearer '^GET /token basic$')" -gt "$t" ] || fail "the pull asked for no token with the credentials: $(reg_log bearer)"
  [ "$(reg_count bearer '^GET /v2/busybox/blobs/.* bearer$')" -ge 1 ] || fail "no blob GET with a token"
  run --separate-stderr sbx logout --all
  expect_status 0
  expect_no_credential "$all"
}

@test "registry: credentials from REGISTRY_AUTH_FILE are read, never written" {
  local f=$BATS_TEST_TMPDIR/auth-ro.json sum
  printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$REG_auth" \
    "$(printf '%s:%s' "$REG_HTPASSWD_USER" "$REG_PASSWORD" | base64 -w0)" >"$f"
  sum=$(sha256sum <"$f")
  REGISTRY_AUTH_FILE=$f run --separate-stderr "$SBX_BIN" pull "$REG_auth/busybox:latest"
  expect_status 0
  expect_image_id "$output"
  expect_eq "$(sha256sum <"$f")" "$sum" "REGISTRY_AUTH_FILE after a pull"
  [ ! -e "$SBX_ROOT/auth.json" ] || fail "a pull wrote ROOT/auth.json"
  expect_no_credential "$output$stderr"
  # One that is not such JSON is an error naming it, not "no credentials".
  printf '{"auths": [' >"$f"
  REGISTRY_AUTH_FILE=$f expect_pull_fails INVALID_ARGUMENT "$REG_auth/busybox:latest" "$f"
}

# --- TLS ----------------------------------------------------------------------------

@test "registry: TLS verified with the test CA from registry_certs_dir, refused without it" {
  local ref=$REG_tls/busybox:latest
  reg_conf "registry_certs_dir = $BATS_FILE_TMPDIR/no-certs.d"
  expect_pull_fails PERMISSION_DENIED "$ref"
  sed -i '/^registry_certs_dir/d' "$SBX_CONF"
  reg_conf "registry_certs_dir = $BATS_FILE_TMPDIR/certs.d"
  run --separate-stderr sbx pull "$ref"
  expect_status 0
  expect_image_id "$output"
  expect_contains "$(image_tags "$output")" "$ref"
}

@test "registry: registry_insecure allows an unverified certificate for that registry only" {
  reg_conf "registry_certs_dir = $BATS_FILE_TMPDIR/no-certs.d" "registry_insecure = $REG_tls"
  run --separate-stderr sbx pull "$REG_tls/busybox:latest"
  expect_status 0
  expect_image_id "$output"
}

# --- push ---------------------------------------------------------------------------

@test "registry: an image sbx pushed comes back whole through sbx pull" {
  require_runtime runc
  local dest=$REG_plain/pushed/multi:v1 digest
  sbx import --tag multi-local "$BATS_FILE_TMPDIR/multi.tar" >/dev/null
  run --separate-stderr sbx push multi-local "$dest"
  expect_status 0
  digest=$output
  [[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || fail "push printed '$digest'"
  expect_eq "$(reg_digest plain pushed/multi:v1)" "$digest" "the registry's digest of the pushed tag"
  # Pulled back into another store, it is the same files.
  SBX_ROOT=$SBX_TEST_DIR/root2 run --separate-stderr "$SBX_BIN" pull "$dest"
  expect_status 0
  SBX_ROOT=$SBX_TEST_DIR/root2 run "$SBX_BIN" run --runtime runc --image "$dest" -- cat /opt/keep /opt/d/new
  expect_status 0
  expect_eq "$output" "keep
new"
  SBX_ROOT=$SBX_TEST_DIR/root2 "$SBX_BIN" gc >/dev/null
  # (podman pulling and running what sbx pushed: push.bats.)
}

# --- bad registries -----------------------------------------------------------------

@test "registry: the bad registry's control image pulls" {
  run --separate-stderr sbx pull "$REG_bad/good:latest"
  expect_status 0
  expect_image_id "$output"
}

@test "registry: a tag or repository that is not there is NOT_FOUND" {
  expect_pull_fails NOT_FOUND "$REG_count/busybox:no-such-tag"
  expect_pull_fails NOT_FOUND "$REG_count/no/such/repo:latest"
  expect_pull_fails NOT_FOUND "$REG_bad/good:other"
}

@test "registry: a bad reference is INVALID_ARGUMENT and sends nothing" {
  local n
  n=$(reg_count count .)
  expect_pull_fails INVALID_ARGUMENT "$REG_count/UPPER/case:latest"
  expect_pull_fails INVALID_ARGUMENT "$REG_count/busybox:bad tag"
  expect_pull_fails INVALID_ARGUMENT "$REG_count/busybox@sha256:1234"
  expect_eq "$(reg_count count .)" "$n" "requests for bad references"
}

@test "registry: a registry nothing answers on is INTERNAL" {
  local port
  port=$(reg_free_port)
  reg_conf "registry_insecure = 127.0.0.1:$port"
  expect_pull_fails INTERNAL "127.0.0.1:$port/busybox:latest"
}

@test "registry: a blob whose bytes do not match its digest is refused" {
  expect_pull_fails INVALID_ARGUMENT "$REG_bad/wrongdigest:latest"
}

@test "registry: a truncated blob is refused" {
  expect_pull_fails INVALID_ARGUMENT "$REG_bad/truncated:latest"
}

@test "registry: a manifest over 4 MiB is RESOURCE_EXHAUSTED" {
  expect_pull_fails RESOURCE_EXHAUSTED "$REG_bad/bigmanifest:latest"
}

@test "registry: an index of 10,000 entries is RESOURCE_EXHAUSTED" {
  expect_pull_fails RESOURCE_EXHAUSTED "$REG_bad/bigindex:latest"
  expect_eq "$(reg_count bad '^GET /v2/bigindex/blobs/')" 0 "blob requests for the big index"
}

@test "registry: more layers than SBX_PULL_LAYERS_MAX (128) is RESOURCE_EXHAUSTED before any download" {
  expect_pull_fails RESOURCE_EXHAUSTED "$REG_bad/manylayers:latest"
  expect_eq "$(reg_count bad '^GET /v2/manylayers/blobs/')" 0 "blob requests for 129 layers"
}

@test "registry: a decompression bomb stops at image_size_max" {
  reg_conf "image_size_max = 8Mi"
  expect_pull_fails RESOURCE_EXHAUSTED "$REG_bad/bomb:latest"
}

@test "registry: a redirect loop is refused" {
  expect_pull_fails INVALID_ARGUMENT "$REG_bad/redirect:latest"
}

@test "registry: a registry that drips one byte a second is TIMEOUT after registry_stall_timeout" {
  reg_conf "registry_stall_timeout = 2"
  local t0=$SECONDS
  expect_pull_fails TIMEOUT "$REG_bad/drip:latest"
  [ $((SECONDS - t0)) -le 20 ] || fail "the stalled pull took $((SECONDS - t0)) s"
}

@test "registry: a 401 with no usable realm is refused" {
  expect_pull_fails INVALID_ARGUMENT "$REG_bad/norealm:latest"
}

@test "registry: a schema 1 manifest is refused by name" {
  run --separate-stderr sbx --json pull "$REG_bad/schema1:latest"
  expect_status 125
  expect_eq "$(jget 'd["error"]["code"]')" INVALID_ARGUMENT
  local msg
  msg=$(jget 'd["error"]["message"]')
  case $msg in
    *"schema 1"* | *"schema1"* | *"manifest.v1+prettyjws"*) ;;
    *) fail "the message does not name schema 1: $msg" ;;
  esac
  expect_eq "$(store_state)" "$(printf -- '--\n')" "the store after schema 1"
  expect_no_tmp
}

@test "registry: a foreign media type (a Helm chart) is refused by name" {
  expect_pull_fails INVALID_ARGUMENT "$REG_bad/foreign:latest" "application/vnd.cncf.helm"
  expect_eq "$(reg_count bad '^GET /v2/foreign/blobs/')" 0 "blob requests for a Helm chart"
}
