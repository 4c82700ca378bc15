# Registries for the tests, on loopback only: Debian's docker-registry
# (plain HTTP, TLS with a CA made here, htpasswd basic auth), the bearer-token
# issuer tests/registry/token-proxy.py in front of one, and the protocol
# breaker tests/registry/bad-registry.py. Each listens on 127.0.0.1 on a free
# port, keeps its files under $BATS_FILE_TMPDIR/reg-NAME and its pid in
# $BATS_FILE_TMPDIR/reg-pids; reg_stop_all (teardown_file) ends them all.
#
# After `reg_start NAME ...`, REG_NAME (exported) is its HOST:PORT
# (127.0.0.1:PORT), the registry part of a reference. Servers started here
# log one line per request to $BATS_FILE_TMPDIR/reg-NAME/requests.log (the
# proxies and the bad registry: "METHOD PATH ..."; docker-registry: its
# access log): reg_count NAME PATTERN counts the lines matching an extended
# regular expression, so a test proves "no request" or "one manifest
# request" by the difference.
#
# Loaded after common.bash (needs py, fail, $PYTHON).

REG_HTPASSWD_USER=sbxtest
REG_SKOPEO=(skopeo --insecure-policy)

_reg_dir () {
  echo "$BATS_FILE_TMPDIR/reg-$1"
}

# A port nothing listens on now (the kernel's pick; the registry binds it
# right after, and reg_start retries if another took it meanwhile).
reg_free_port () {
  py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

_reg_remember () {
  echo "$1" >>"$BATS_FILE_TMPDIR/reg-pids"
}

# _reg_wait_url URL PID LOG [CURL ARGS...]: until URL answers (any HTTP
# status), 15 s at most; fails at once when PID has died.
_reg_wait_url () {
  local url=$1 pid=$2 log=$3 i code
  shift 3
  for i in $(seq 150); do
    kill -0 "$pid" 2>/dev/null || fail "server $pid for $url died: $(tail -n 20 "$log")" || return
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" "$url" 2>/dev/null) || code=000
    [ "$code" != 000 ] && return 0
    sleep 0.1
  done
  fail "server $pid did not answer $url in 15 s: $(tail -n 20 "$log")"
}

# reg_make_ca: a CA and a server certificate for 127.0.0.1 (IP SAN), under
# $BATS_FILE_TMPDIR/ca (ca.crt, server.crt, server.key), valid two days;
# ca/pub holds ca.crt alone (a --cert-dir for skopeo).
reg_make_ca () {
  local d=$BATS_FILE_TMPDIR/ca
  [ -s "$d/server.crt" ] && return 0
  mkdir -p "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/ca.key" -out "$d/ca.crt" -days 2 \
    -subj '/CN=sbx test CA' -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign' \
    >"$d/openssl.log" 2>&1 || fail "openssl (CA): $(cat "$d/openssl.log")" || return
  openssl req -newkey rsa:2048 -nodes -keyout "$d/server.key" -out "$d/server.csr" -subj '/CN=127.0.0.1' \
    >>"$d/openssl.log" 2>&1 || fail "openssl (CSR): $(cat "$d/openssl.log")" || return
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >"$d/ext.cnf"
  openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
    -extfile "$d/ext.cnf" -out "$d/server.crt" >>"$d/openssl.log" 2>&1 \
    || fail "openssl (sign): $(cat "$d/openssl.log")" || return
  mkdir -p "$d/pub" && cp "$d/ca.crt" "$d/pub/ca.crt"
}

# reg_htpasswd FILE USER PASSWORD: a bcrypt entry ($2b$, what docker-registry
# accepts), by the C library's crypt through Python's crypt module.
reg_htpasswd () {
  local h
  h=$(printf '%s' "$3" | py -W ignore::DeprecationWarning -c '
import crypt, sys
print(crypt.crypt(sys.stdin.read(), crypt.mksalt(crypt.METHOD_BLOWFISH)))') || return
  case $h in
    '$2'*) ;;
    *) fail "crypt gave no bcrypt hash ($h)" || return ;;
  esac
  printf '%s:%s\n' "$2" "$h" >"$1"
}

# reg_start NAME FLAVOUR [PASSWORD]: docker-registry with storage under
# reg-NAME/storage. FLAVOUR: plain (HTTP), tls (reg_make_ca's certificate),
# auth (HTTP with htpasswd basic auth for $REG_HTPASSWD_USER:PASSWORD).
reg_start () {
  local name=$1 flavour=$2 pass=${3-} d port pid scheme=http extra='' curl_args=()
  d=$(_reg_dir "$name")
  mkdir -p "$d/storage"
  case $flavour in
    plain) ;;
    tls)
      reg_make_ca || return
      scheme=https
      extra="  tls:
    certificate: $BATS_FILE_TMPDIR/ca/server.crt
    key: $BATS_FILE_TMPDIR/ca/server.key"
      curl_args=(--cacert "$BATS_FILE_TMPDIR/ca/ca.crt")
      ;;
    auth)
      [ -n "$pass" ] || fail "reg_start $name auth: no password" || return
      reg_htpasswd "$d/htpasswd" "$REG_HTPASSWD_USER" "$pass" || return
      ;;
    *) fail "reg_start: unknown flavour $flavour" || return ;;
  esac
  for _ in 1 2 3; do
    port=$(reg_free_port) || return
    {
      printf 'version: 0.1\nlog:\n  level: info\n  formatter: text\n  accesslog:\n    disabled: false\n'
      printf 'storage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\n' "$d/storage"
      printf '  cache:\n    blobdescriptor: inmemory\n'
      printf 'http:\n  addr: 127.0.0.1:%s\n  secret: sbx-test-%s\n' "$port" "$RANDOM"
      [ -n "$extra" ] && printf '%s\n' "$extra"
      if [ "$flavour" = auth ]; then
        printf 'auth:\n  htpasswd:\n    realm: sbx-test\n    path: %s\n' "$d/htpasswd"
      fi
    } >"$d/config.yml"
    # stdout is the access log (one line a request), stderr the rest.
    docker-registry serve "$d/config.yml" >>"$d/requests.log" 2>>"$d/registry.log" 3>&- &
    pid=$!
    _reg_remember "$pid"
    if _reg_wait_url "$scheme://127.0.0.1:$port/v2/" "$pid" "$d/registry.log" "${curl_args[@]}"; then
      printf -v "REG_$name" '127.0.0.1:%s' "$port"
      export "REG_$name"
      echo "$scheme" >"$d/scheme"
      return 0
    fi
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  fail "docker-registry $name did not start: $(tail -n 20 "$d/registry.log")"
}

# _reg_start_py NAME SCRIPT ARGS...: a Python server of tests/registry/
# that writes its port to reg-NAME/port once it listens.
_reg_start_py () {
  local name=$1 script=$2 d pid i
  shift 2
  d=$(_reg_dir "$name")
  mkdir -p "$d"
  rm -f "$d/port"
  "$PYTHON" -I -S "$SBX_TESTS_DIR/registry/$script" --port-file "$d/port" --log "$d/requests.log" "$@" \
    >>"$d/server.log" 2>&1 3>&- &
  pid=$!
  _reg_remember "$pid"
  for i in $(seq 300); do
    [ -s "$d/port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "$script ($name) died: $(tail -n 20 "$d/server.log")" || return
    sleep 0.05
  done
  [ -s "$d/port" ] || fail "$script ($name) did not listen in 15 s: $(tail -n 20 "$d/server.log")" || return
  printf -v "REG_$name" '127.0.0.1:%s' "$(cat "$d/port")"
  export "REG_$name"
  echo http >"$d/scheme"
  _reg_wait_url "http://$(reg_addr "$name")/v2/" "$pid" "$d/server.log"
}

# reg_start_proxy NAME UPSTREAM_NAME [token-proxy.py ARGS...]: the token
# issuer (or, with --auth none, a counting proxy) in front of registry
# UPSTREAM_NAME (a plain one).
reg_start_proxy () {
  local name=$1 up=$2
  shift 2
  _reg_start_py "$name" token-proxy.py --upstream "http://$(reg_addr "$up")" "$@"
}

# reg_start_bad NAME [bad-registry.py ARGS...]
reg_start_bad () {
  local name=$1
  shift
  _reg_start_py "$name" bad-registry.py "$@"
}

# reg_addr NAME: HOST:PORT of a started server.
reg_addr () {
  local v=REG_$1
  [ -n "${!v-}" ] || fail "registry $1 was not started" || return
  echo "${!v}"
}

# reg_count NAME ERE: requests the server logged so far that match ERE.
reg_count () {
  local log
  log=$(_reg_dir "$1")/requests.log
  [ -f "$log" ] || { echo 0; return 0; }
  grep -cE "$2" "$log" || true
}

# reg_log NAME: the request log (for a failure's message).
reg_log () {
  cat "$(_reg_dir "$1")/requests.log" 2>/dev/null
}

# reg_skopeo_push SRC NAME REPO:TAG [skopeo copy ARGS...]: copies SRC (a
# skopeo source, oci-archive:FILE) into registry NAME.
reg_skopeo_push () {
  local src=$1 name=$2 dest=$3 out scheme
  shift 3
  scheme=$(cat "$(_reg_dir "$name")/scheme")
  local tls=(--dest-tls-verify=false)
  [ "$scheme" = https ] && tls=(--dest-cert-dir "$BATS_FILE_TMPDIR/ca/pub")
  out=$("${REG_SKOPEO[@]}" copy --retry-times 2 "${tls[@]}" "$@" "$src" "docker://$(reg_addr "$name")/$dest" 2>&1) \
    || fail "skopeo copy $src to $name/$dest: $out"
}

# reg_digest NAME REPO:TAG [CURL ARGS...]: the manifest digest the registry
# answers for the tag.
reg_digest () {
  local name=$1 repo=${2%%:*} tag=${2#*:} scheme
  shift 2
  scheme=$(cat "$(_reg_dir "$name")/scheme")
  curl -sfI --max-time 10 "$@" \
    -H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json' \
    "$scheme://$(reg_addr "$name")/v2/$repo/manifests/$tag" \
    | tr -d '\r' | awk 'tolower($1) == "docker-content-digest:" { print $2 }'
}

# reg_stop_all: ends every server reg_start* started in this file (TERM,
# then KILL after 5 s), so that no process of this file is left.
reg_stop_all () {
  local f=$BATS_FILE_TMPDIR/reg-pids p rc=0
  [ -f "$f" ] || return 0
  for p in $(cat "$f"); do
    kill "$p" 2>/dev/null
  done
  for p in $(cat "$f"); do
    for _ in $(seq 50); do
      kill -0 "$p" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$p" 2>/dev/null; then
      echo "registry server $p did not end on TERM: killed" >&2
      kill -9 "$p" 2>/dev/null
      rc=1
    fi
    wait "$p" 2>/dev/null
  done
  rm -f "$f"
  return $rc
}
