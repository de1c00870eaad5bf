// mongosh script run once by the `mongo-init` service of docker-compose.yml (profile "deploy"):
//
//   mongosh --nodb --quiet /deploy/init-clusters.js
//
// For both sharded clusters it initiates the config server and shard replica sets, adds the
// shards through the cluster's mongos under their replica set names (the shard ids listShards
// reports, which the workers' --id flags name), and creates the user the workers and the
// coordinator connect with (SYNC_MONGO_USER / SYNC_MONGO_PASSWORD, role root).
//
// No user exists yet and this container is not on the servers' localhost, so it authenticates as
// the clusters' internal user (__system, password = the shared keyfile, mounted read-only).
// Idempotent: run again, it changes nothing but the user's password and roles. Exits non-zero,
// with one line saying why, when any step fails.
// Shell API calls (connect, runCommand, sleep) stay out of callbacks given to Array methods:
// mongosh cannot wait for them there.
/* global connect, sleep, print, quit */

const CLUSTERS = [
  {
    name: 'source',
    configServer: { replSet: 'src-config', host: 'src-config:27019' },
    shards: [
      { replSet: 'src-shard0', host: 'src-shard0:27018' },
      { replSet: 'src-shard1', host: 'src-shard1:27018' },
    ],
    mongos: 'src-mongos:27017',
  },
  {
    name: 'destination',
    configServer: { replSet: 'dst-config', host: 'dst-config:27019' },
    shards: [
      { replSet: 'dst-shard0', host: 'dst-shard0:27018' },
      { replSet: 'dst-shard1', host: 'dst-shard1:27018' },
      { replSet: 'dst-shard2', host: 'dst-shard2:27018' },
    ],
    mongos: 'dst-mongos:27017',
  },
];
const KEYFILE = '/keyfile/key';
const ATTEMPTS = 90; // × 2 s: how long a server may take to answer, elect a primary, or add a shard
const RETRY_MS = 2000;

/** A failure no retry can mend: main() prints it as one line and exits 1. */
class InitError extends Error {}

function fail(message) {
  throw new InitError(message);
}

function requiredEnv(name) {
  const value = process.env[name];
  if (value === undefined || value === '') {
    fail(`${name} is empty: copy .env.example to .env and set it (see the README)`);
  }
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

function initiateReplicaSet(set, configsvr, key) {
  const admin = adminAsSystem(set.host, key);
  const reply = run(admin, {
    replSetInitiate: { _id: set.replSet, configsvr, members: [{ _id: 0, host: set.host }] },
  });
  if (!isOk(reply) && reply.codeName !== 'AlreadyInitialized') {
    fail(`replSetInitiate ${set.replSet} on ${set.host}: ${reply.errmsg}`);
  }
  return admin;
}

function waitForPrimary(set, admin) {
  retry(`waiting for ${set.replSet} to elect ${set.host} primary`, () => {
    const hello = run(admin, { hello: 1 });
    if (isOk(hello) && hello.setName !== undefined && hello.setName !== set.replSet) {
      fail(`${set.host} belongs to replica set ${hello.setName}, not ${set.replSet}`);
    }
    return isOk(hello) && hello.isWritablePrimary === true ? true : undefined;
  });
}

function shardIds(mongos) {
  const reply = run(mongos, { listShards: 1 });
  if (!isOk(reply)) throw new Error(`listShards: ${reply.errmsg}`);
  return reply.shards.map((shard) => shard._id);
}

function addShards(cluster, mongos) {
  for (const shard of cluster.shards) {
    // mongos answers only once its config servers are up, and may not see a new primary at once.
    retry(`adding shard ${shard.replSet} to the ${cluster.name} cluster`, () => {
      if (shardIds(mongos).includes(shard.replSet)) return true;
      const reply = run(mongos, {
        addShard: `${shard.replSet}/${shard.host}`,
        name: shard.replSet,
      });
      if (isOk(reply)) return true;
      throw new Error(reply.errmsg);
    });
  }
  const expected = cluster.shards.map((shard) => shard.replSet).sort();
  const actual = shardIds(mongos).sort();
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    fail(`the ${cluster.name} cluster has shards ${actual.join(', ')}, not ${expected.join(', ')}`);
  }
  return actual;
}

function upsertUser(cluster, mongos, user, password) {
  const roles = [{ role: 'root', db: 'admin' }];
  const existing = run(mongos, { usersInfo: { user, db: 'admin' } });
  if (!isOk(existing)) fail(`usersInfo on the ${cluster.name} cluster: ${existing.errmsg}`);
  const reply =
    existing.users.length > 0
      ? run(mongos, { updateUser: user, pwd: password, roles })
      : run(mongos, { createUser: user, pwd: password, roles });
  if (!isOk(reply)) fail(`creating user ${user} on the ${cluster.name} cluster: ${reply.errmsg}`);
}

function main() {
  const user = requiredEnv('SYNC_MONGO_USER');
  const password = requiredEnv('SYNC_MONGO_PASSWORD');
  const key = readKey();
  const summary = [];
  for (const cluster of CLUSTERS) {
    const sets = [
      { set: cluster.configServer, configsvr: true },
      ...cluster.shards.map((set) => ({ set, configsvr: false })),
    ];
    const admins = [];
    for (const { set, configsvr } of sets) admins.push(initiateReplicaSet(set, configsvr, key));
    for (let i = 0; i < sets.length; i += 1) waitForPrimary(sets[i].set, admins[i]);
    const mongos = adminAsSystem(cluster.mongos, key);
    const shards = addShards(cluster, mongos);
    upsertUser(cluster, mongos, user, password);
    summary.push({ cluster: cluster.name, mongos: cluster.mongos, shards, user });
  }
  print(JSON.stringify({ init: 'done', clusters: summary }));
}

try {
  main();
} catch (error) {
  print(`mongo-init: ${error instanceof InitError ? '' : 'unexpected error: '}${error.message}`);
  quit(1);
}
