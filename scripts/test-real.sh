#!/usr/bin/env bash
# npm run test:real [-- <jest arguments>] : every suite against real MongoDB, in one command.
#
# Brings up the "test" profile of docker-compose.yml (two replica sets with authentication),
# runs the README's test command with SYNC_TEST_SOURCE_URI / SYNC_TEST_DESTINATION_URI pointing
# at them, and takes the clusters down again, also when the tests fail or the run is
# interrupted. The exit code is the tests'. In band: the suites share the clusters and the sync's
# metadata database. --forceExit: in band there is no jest worker process to end, and some
# suites leave a timer or a socket open. SYNC_TEST_SHARDED_SOURCE_URI and
# SYNC_TEST_SHARDED_DESTINATION_URI, when set in the caller's environment, reach the sharded
# suites too (compose starts no sharded cluster).
#
# --dry-run (or TEST_REAL_DRY_RUN=1): prints the commands and environment, one shell line each,
# exactly as they would run, and runs nothing. Every command is printed the same way before it
# runs. test/deploy/test-real.spec.ts checks the printout against the README.
set -euo pipefail
cd "$(dirname "$0")/.."

SOURCE_URI='mongodb://sync-test:sync-test-pw@127.0.0.1:27017/?replicaSet=source&directConnection=true'
DESTINATION_URI='mongodb://sync-test:sync-test-pw@127.0.0.1:27018/?replicaSet=destination&directConnection=true'

dry_run=0
[ "${TEST_REAL_DRY_RUN:-}" = 1 ] && dry_run=1
jest_args=()
for arg in "$@"; do
  if [ "$arg" = --dry-run ]; then dry_run=1; else jest_args+=("$arg"); fi
done

# The environment of the test command: the compose clusters, and the caller's sharded clusters
# by reference (their connection strings carry passwords that this printout must not show).
env_lines=(
  "SYNC_TEST_SOURCE_URI='${SOURCE_URI}'"
  "SYNC_TEST_DESTINATION_URI='${DESTINATION_URI}'"
)
env_args=("SYNC_TEST_SOURCE_URI=${SOURCE_URI}" "SYNC_TEST_DESTINATION_URI=${DESTINATION_URI}")
for name in SYNC_TEST_SHARDED_SOURCE_URI SYNC_TEST_SHARDED_DESTINATION_URI; do
  if [ -n "${!name:-}" ]; then
    env_lines+=("${name}=\"\$${name}\"")
    env_args+=("${name}=${!name}")
  fi
done

up=(docker compose --profile test up -d --wait)
down=(docker compose --profile test down -v)
# ${a[@]+"${a[@]}"}: an empty array under set -u in bash 3 (macOS) too.
tests=(npm test -- --runInBand --forceExit ${jest_args[@]+"${jest_args[@]}"})

print_up() { echo "${up[*]}"; }
print_tests() {
  local line
  for line in "${env_lines[@]}"; do echo "${line} \\"; done
  printf '%s' "npm test -- --runInBand --forceExit"
  local arg
  for arg in ${jest_args[@]+"${jest_args[@]}"}; do printf ' %q' "$arg"; done
  printf '\n'
}
print_down() { echo "${down[*]}"; }

if [ "$dry_run" = 1 ]; then
  print_up
  print_tests
  print_down
  exit 0
fi

if ! docker compose version >/dev/null 2>&1; then
  echo "test:real: needs Docker with the compose plugin (docker compose); see the README" >&2
  exit 1
fi

take_down() {
  print_down
  "${down[@]}" || echo "test:real: '${down[*]}' failed; run it by hand" >&2
}
trap take_down EXIT
trap 'exit 130' INT TERM

print_up
"${up[@]}"
print_tests
status=0
env "${env_args[@]}" "${tests[@]}" || status=$?
exit "$status"
