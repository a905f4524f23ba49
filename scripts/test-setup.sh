#!/usr/bin/env bash
# What `npm test` needs from the machine, checked before anything runs (and by .ci/run before
# `npm ci`): Node.js 20.19+, Debian's packages (the real services, Chromium, and the interpreters
# and libraries the other languages' receiver libraries are tested with: nothing from PyPI,
# Packagist, rubygems, Maven Central or the Go proxy), and the services answering on 127.0.0.1:
# PostgreSQL 5432, Redis 6379, RabbitMQ 5672, NATS JetStream 4222.
#
# As root on Debian or Ubuntu (apt-get), it installs what is missing and starts what is stopped.
# Anywhere else (not root, or no apt-get) it changes nothing: it prints ONE list of everything
# missing with the command that gets each, and exits 1 before any test runs.
# When everything is there it takes well under 2 s (one dpkg-query, a ping per service).
#
# PAYHOOKS_TEST_SETUP=skip skips every check (a machine you set up yourself).
# PAYHOOKS_TEST_PG_URL (another PostgreSQL server) replaces the local PostgreSQL's checks.
# Needs nothing from node_modules.
# Plain bash 3.2 (macOS's) must get as far as the list: no mapfile, no `set -u` with arrays.
set -o pipefail

[ "${PAYHOOKS_TEST_SETUP:-}" = "skip" ] && exit 0

# The single list of Debian packages the test suite needs. Add a package here (not in .ci/run).
debian_packages=(
  git postgresql redis-server rabbitmq-server nats-server
  chromium
  python3 python3-flask python3-django python3-fastapi python3-uvicorn python3-psycopg python3-redis python3-pytest python3-httpx python3-build python3-mypy python3-setuptools python3-venv python3-cryptography
  php-cli php-pgsql php-redis php-mbstring php-xml composer php-symfony-http-foundation php-fpm phpunit php-psr-http-message php-psr-http-factory php-nyholm-psr7
  golang-go golang-github-lib-pq-dev gcc
  ruby ruby-webrick ruby-rack ruby-sinatra ruby-pg ruby-redis rake
  openjdk-17-jdk-headless libpostgresql-jdbc-java junit5 libtomcat10-embed-java libtomcat10-java libjackson2-databind-java libjakarta-servlet-api-java
  maven maven-debian-helper maven-repo-helper libmaven-compiler-plugin-java libmaven-jar-plugin-java libsurefire-java libmaven-resources-plugin-java libmaven-install-plugin-java
  tinyproxy
  podman runc debootstrap podman-compose
)

# PAYHOOKS_TEST_SETUP_UID stands in for `id -u` in this script's own test only.
uid="${PAYHOOKS_TEST_SETUP_UID:-$(id -u)}"
can_fix=0
if [ "$uid" = "0" ] && command -v apt-get >/dev/null 2>&1; then can_fix=1; fi
if [ "$uid" = "0" ]; then sudo=""; else sudo="sudo "; fi

say() { printf 'test set-up: %s\n' "$*" >&2; }

# --- checks (fast: no package manager call beyond one dpkg-query, one ping per service) ---

pg_url="${PAYHOOKS_TEST_PG_URL:-}"
pg_ready() {
  if [ -n "$pg_url" ]; then pg_isready -q -d "$pg_url" >/dev/null 2>&1; else pg_isready -q -h 127.0.0.1 -p 5432 >/dev/null 2>&1; fi
}
# Connections to 127.0.0.1 are accepted or refused at once: bash's /dev/tcp needs no client
# program and no deadline.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
redis_ready() {
  (
    exec 3<>/dev/tcp/127.0.0.1/6379 || exit 1
    printf 'PING\r\n' >&3
    IFS= read -r -t 2 answer <&3 && [ "${answer%$'\r'}" = "+PONG" ]
  ) 2>/dev/null
}
rabbit_ready() { port_open 5672; }
nats_ready() { port_open 4222; }

node_ok() { # `node --version` answers before Node.js starts its JavaScript: fast
  local v major minor
  v="$(node --version 2>/dev/null)" || return 1
  v="${v#v}"; major="${v%%.*}"; v="${v#*.}"; minor="${v%%.*}"
  [ "$major" -gt 20 ] 2>/dev/null || { [ "$major" = 20 ] && [ "$minor" -ge 19 ] 2>/dev/null; }
}

required_packages=()
for p in "${debian_packages[@]}"; do
  # Another PostgreSQL server (PAYHOOKS_TEST_PG_URL): only the client programs are needed here.
  if [ "$p" = postgresql ] && [ -n "$pg_url" ]; then p=postgresql-client; fi
  required_packages+=("$p")
done

missing_packages() {
  local want=() p
  for p in "${required_packages[@]}"; do
    # The client programs may come from a versioned package (postgresql-client-15).
    if [ "$p" = postgresql-client ] && command -v psql >/dev/null 2>&1 && command -v pg_isready >/dev/null 2>&1; then continue; fi
    want+=("$p")
  done
  if ! command -v dpkg-query >/dev/null 2>&1; then
    printf '%s\n' "${want[@]}"
    return
  fi
  # One dpkg-query for the whole list; a package it does not know is simply not listed.
  dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${want[@]}" 2>/dev/null |
    awk -v want="${want[*]}" '$2 == "ii" { ok[$1] = 1 } END { n = split(want, w, " "); for (i = 1; i <= n; i++) if (!(w[i] in ok)) print w[i] }'
}

pg_version() { ls /etc/postgresql 2>/dev/null | sort -V | tail -n1; }
pg_start_command() { echo "${sudo}pg_ctlcluster --skip-systemctl-redirect ${1:-<version>} main start"; }
redis_start_command='redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no'
rabbit_start_command() {
  if command -v service >/dev/null 2>&1; then echo "${sudo}service rabbitmq-server start"; else echo "${sudo}rabbitmq-server -detached"; fi
}
nats_start_command="setsid nohup nats-server -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log >/dev/null 2>&1 &"

stopped_services() {
  pg_ready || echo postgresql
  redis_ready || echo redis
  rabbit_ready || echo rabbitmq
  nats_ready || echo nats
}

lines() { local l; while IFS= read -r l; do [ -n "$l" ] && printf '%s\n' "$l"; done; }
missing=(); while IFS= read -r l; do missing+=("$l"); done < <(missing_packages | lines)
stopped=(); while IFS= read -r l; do stopped+=("$l"); done < <(stopped_services | lines)
node_fine=1
node_ok || node_fine=0

if [ ${#missing[@]} -eq 0 ] && [ ${#stopped[@]} -eq 0 ] && [ "$node_fine" = 1 ]; then exit 0; fi

# --- not fixable here: one list, and the command for each ---

if [ "$can_fix" = 0 ] || [ "$node_fine" = 0 ]; then
  {
    echo
    echo "npm test needs more than this machine has. Missing:"
    if [ "$node_fine" = 0 ]; then
      echo "  - Node.js 20.19 or newer (found $(node --version 2>/dev/null || echo none)): https://nodejs.org/"
    fi
    if [ ${#missing[@]} -gt 0 ]; then
      echo "  - Debian packages: ${missing[*]}"
      if command -v apt-get >/dev/null 2>&1; then
        echo "      ${sudo}apt-get update && ${sudo}apt-get install -y ${missing[*]}"
      else
        echo "      (no apt-get here: these are Debian/Ubuntu package names; the suite runs the"
        echo "      distribution's interpreters and libraries, so use a Debian or Ubuntu machine)"
      fi
    fi
    for s in "${stopped[@]}"; do
      case "$s" in
        postgresql)
          if [ -n "$pg_url" ]; then
            echo "  - PostgreSQL at PAYHOOKS_TEST_PG_URL is not answering: start that server"
          else
            echo "  - PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth) is not answering:"
            echo "      $(pg_start_command "$(pg_version)")"
          fi
          ;;
        redis)
          echo "  - Redis on 127.0.0.1:6379 is not answering:"
          echo "      $redis_start_command"
          ;;
        rabbitmq)
          echo "  - RabbitMQ on 127.0.0.1:5672 (guest/guest) is not answering:"
          echo "      $(rabbit_start_command)"
          ;;
        nats)
          echo "  - NATS with JetStream on 127.0.0.1:4222 is not answering:"
          echo "      ${sudo}${nats_start_command}"
          ;;
      esac
    done
    if [ "$node_fine" = 1 ] && [ "$uid" != "0" ] && command -v apt-get >/dev/null 2>&1; then
      echo "Or run the test set-up as root, which does all of this: sudo bash scripts/test-setup.sh"
    fi
    echo "(PAYHOOKS_TEST_SETUP=skip npm test skips this check.)"
  } >&2
  exit 1
fi

# --- root with apt-get: install and start ---

fail() { say "$*"; exit 1; }

if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  apt-get -o DPkg::Lock::Timeout=900 update -qq || fail "apt-get update failed."
  # A lock held by another apt run is waited for, not an error.
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq "${missing[@]}" >/dev/null \
    || fail "apt-get install ${missing[*]} failed."
  stopped=(); while IFS= read -r l; do stopped+=("$l"); done < <(stopped_services | lines)
fi

wait_for() { # name, check, tries, delay
  local i
  for ((i = 0; i < $3; i++)); do "$2" && return 0; sleep "$4"; done
  "$2" || fail "$1 did not start."
}

for s in "${stopped[@]}"; do
  case "$s" in
    postgresql)
      [ -n "$pg_url" ] && fail "PostgreSQL at PAYHOOKS_TEST_PG_URL is not answering: start that server."
      v="$(pg_version)"
      [ -n "$v" ] || fail "PostgreSQL is installed but has no cluster in /etc/postgresql."
      say "starting PostgreSQL $v"
      pg_ctlcluster --skip-systemctl-redirect "$v" main start || true
      wait_for "PostgreSQL on 127.0.0.1:5432" pg_ready 30 1
      ;;
    redis)
      say "starting Redis"
      eval "$redis_start_command" >/dev/null || true
      wait_for "Redis on 127.0.0.1:6379" redis_ready 20 0.5
      ;;
    rabbitmq)
      say "starting RabbitMQ"
      if command -v service >/dev/null 2>&1; then service rabbitmq-server start >/dev/null 2>&1 || rabbitmq-server -detached || true
      else rabbitmq-server -detached || true; fi
      wait_for "RabbitMQ on 127.0.0.1:5672" rabbit_ready 60 1
      ;;
    nats)
      say "starting NATS with JetStream"
      mkdir -p /var/lib/nats-server
      eval "$nats_start_command"
      wait_for "NATS on 127.0.0.1:4222" nats_ready 20 0.5
      ;;
  esac
done

if [ -z "$pg_url" ]; then
  psql -h 127.0.0.1 -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1 \
    || fail "cannot connect to PostgreSQL on 127.0.0.1:5432 as user postgres (trust auth expected)."
fi
exit 0
