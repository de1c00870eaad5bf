// mongosh script run once by the `test-init` service of docker-compose.yml (profile "test"):
//
//   mongosh --nodb --quiet /deploy/init-test-replica-sets.js
//
// Initiates the two single-member replica sets the test suites run against (`npm run
// test:real`), each member advertised as 127.0.0.1:<port> — the address the published port gives
// the host, and the server's own address inside its container — and creates on each the user the
// test connection strings carry (SYNC_TEST_MONGO_USER / SYNC_TEST_MONGO_PASSWORD, role root).
//
// No user exists yet and this container is not on the servers' localhost, so it authenticates as
// the servers' internal user (__system, password = the shared keyfile, mounted read-only).
// Idempotent: run again, it changes nothing but the user's password and roles. Exits non-zero,
// with one line saying why, when any step fails.
// Shell API calls (connect, runCommand, sleep) stay out of callbacks given to Array methods:
// mongosh cannot wait for them there.
/* global connect, sleep, print, quit */

const REPLICA_SETS = [
  { replSet: 'source', host: 'source:27017', member: '127.0.0.1:27017' },
  { replSet: 'destination', host: 'destination:27018', member: '127.0.0.1:27018' },
];
const KEYFILE = '/keyfile/key';
const ATTEMPTS = 60; // × 2 s: how long a server may take to answer or elect itself primary
const RETRY_MS = 2000;

/** A failure no retry can mend: main() prints it as one line and exits 1. */
class InitError extends Error {}

function fail(message) {
  throw new InitError(message);
}

function requiredEnv(name) {
  const value = process.env[name];
  if (value === undefined || value === '') fail(`${name} is empty (set in docker-compose.yml)`);
  return value;
}

/** mongod strips whitespace from a keyfile; the __system password is what remains. */
function readKey() {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const fs = require('fs');
  return fs.readFileSync(KEYFILE, 'utf8').replace(/\s/g, '');
}

/** A command's reply, or a failed command's error as a reply: {ok: 0, code, codeName, errmsg}. */
function run(db, command) {
  try {
    return db.runCommand(command);
  } catch (error) {
    return { ok: 0, code: error.code, codeName: error.codeName, errmsg: error.message };
  }
}

function isOk(reply) {
  return reply !== null && typeof reply === 'object' && Number(reply.ok) === 1;
}

/** Calls attempt() until it returns something other than undefined, or fails after ATTEMPTS. */
function retry(what, attempt) {
  let last = 'no answer';
  for (let i = 0; i < ATTEMPTS; i += 1) {
    try {
      const result = attempt();
      if (result !== undefined) return result;
    } catch (error) {
      if (error instanceof InitError) throw error;
      last = error.message;
    }
    sleep(RETRY_MS);
  }
  return fail(`${what}: gave up after ${(ATTEMPTS * RETRY_MS) / 1000} s (${last})`);
}

function adminAsSystem(host, key) {
  const uri =
    `mongodb://__system:${encodeURIComponent(key)}@${host}/admin` +
    '?authSource=local&directConnection=true&serverSelectionTimeoutMS=5000';
  return retry(`connecting to ${host}`, () => {
    const db = connect(uri);
    return isOk(run(db, { ping: 1 })) ? db : undefined;
  });
}

function initiate(set, admin) {
  const reply = run(admin, {
    replSetInitiate: { _id: set.replSet, members: [{ _id: 0, host: set.member }] },
  });
  if (!isOk(reply) && reply.codeName !== 'AlreadyInitialized') {
    fail(`replSetInitiate ${set.replSet} on ${set.host}: ${reply.errmsg}`);
  }
}

function waitForPrimary(set, admin) {
  retry(`waiting for ${set.replSet} to elect ${set.member} primary`, () => {
    const hello = run(admin, { hello: 1 });
    if (isOk(hello) && hello.setName !== undefined && hello.setName !== set.replSet) {
      fail(`${set.host} belongs to replica set ${hello.setName}, not ${set.replSet}`);
    }
    return isOk(hello) && hello.isWritablePrimary === true ? true : undefined;
  });
}

function upsertUser(set, admin, user, password) {
  const roles = [{ role: 'root', db: 'admin' }];
  const existing = run(admin, { usersInfo: { user, db: 'admin' } });
  if (!isOk(existing)) fail(`usersInfo on ${set.replSet}: ${existing.errmsg}`);
  const reply =
    existing.users.length > 0
      ? run(admin, { updateUser: user, pwd: password, roles })
      : run(admin, { createUser: user, pwd: password, roles });
  if (!isOk(reply)) fail(`creating user ${user} on ${set.replSet}: ${reply.errmsg}`);
}

function main() {
  const user = requiredEnv('SYNC_TEST_MONGO_USER');
  const password = requiredEnv('SYNC_TEST_MONGO_PASSWORD');
  const key = readKey();
  const summary = [];
  for (const set of REPLICA_SETS) {
    const admin = adminAsSystem(set.host, key);
    initiate(set, admin);
    waitForPrimary(set, admin);
    upsertUser(set, admin, user, password);
    summary.push({ replicaSet: set.replSet, member: set.member, user });
  }
  print(JSON.stringify({ init: 'done', replicaSets: summary }));
}

try {
  main();
} catch (error) {
  print(`test-init: ${error instanceof InitError ? '' : 'unexpected error: '}${error.message}`);
  quit(1);
}
