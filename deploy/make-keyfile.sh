#!/usr/bin/env bash
# Run once by the `mongo-keyfile` service of docker-compose.yml (profile "deploy") and by its
# `test-keyfile` service (profile "test"), as root: writes the shared keyfile every mongod and
# mongos of the profile's clusters authenticate each other with (internal authentication, which
# also turns on access control), into the profile's volume (`keyfile`, `test-keyfile`).
# A random key made on first start, never a file in the repository; kept across restarts.
set -euo pipefail
key=/keyfile/key
if [ ! -s "$key" ]; then
  # 756 random bytes → 1008 base64 characters, one line (a keyfile holds 6 to 1024).
  head -c 756 /dev/urandom | base64 -w 0 > "$key.tmp"
  mv "$key.tmp" "$key"
  echo "mongo-keyfile: created $key"
fi
# mongod refuses a keyfile that its user (mongodb, uid 999 in the mongo image) cannot read or
# that others can.
chown 999:999 "$key"
chmod 400 "$key"
