import { MongoClient } from 'mongodb';
import { SYSTEM_DATABASES, TEST_CLUSTER_VARIABLES } from './real-clusters';

/**
 * What the suites do to a real cluster (test/helpers/real-clusters.ts has the switch): reset it
 * for a scenario, create their users, list a sharded cluster's shards.
 */
export interface TestUser {
  user: string;
  password: string;
  roles: string[];
}

/** The connection string without its credentials. */
export function withoutCredentials(uri: string): string {
  const url = new URL(uri);
  url.username = '';
  url.password = '';
  return url.toString();
}

/** Credentials of a connection string (decoded), if it has any. */
export function credentialsOf(uri: string): { user: string; password: string } | undefined {
  const url = new URL(uri);
  if (url.username === '') return undefined;
  return { user: decodeURIComponent(url.username), password: decodeURIComponent(url.password) };
}

async function withClient<T>(uri: string, run: (client: MongoClient) => Promise<T>): Promise<T> {
  const client = await MongoClient.connect(uri, { serverSelectionTimeoutMS: 15_000 });
  try {
    return await run(client);
  } finally {
    await client.close();
  }
}

/**
 * Makes a real cluster as new: user writes unblocked (a committed sync leaves its source
 * blocked), the balancer of a sharded one running again (a sync stops it), and every database
 * but admin, config and local dropped — user data and the sync's metadata database.
 */
export async function resetRealCluster(uri: string): Promise<void> {
  await withClient(uri, async (client) => {
    const admin = client.db('admin');
    await admin.command({ setUserWriteBlockMode: 1, global: false });
    const hello = await admin.command({ hello: 1 });
    if (hello.msg === 'isdbgrid') await admin.command({ balancerStart: 1 });
    const { databases } = await admin.admin().listDatabases({ nameOnly: true });
    for (const { name } of databases) {
      if (!SYSTEM_DATABASES.includes(name)) await client.db(name).dropDatabase();
    }
  });
}

/**
 * Creates the users on a real cluster (or sets their password and roles when they exist). A
 * server without user management (the emulator standing in for a real cluster: its users exist
 * from launch) must already let each of them in.
 */
export async function ensureUsers(uri: string, users: readonly TestUser[]): Promise<void> {
  if (users.length === 0) return;
  await withClient(uri, async (client) => {
    const admin = client.db('admin');
    const managed = await admin.command({ usersInfo: 1 }).then(
      () => true,
      (error: { code?: number }) => {
        if (error.code === 59) return false; // CommandNotFound
        throw error;
      },
    );
    if (!managed) {
      for (const u of users) await expectLogin(uri, u);
      return;
    }
    for (const u of users) {
      const roles = u.roles.map((role) => ({ role, db: 'admin' }));
      const { users: existing } = await admin.command({ usersInfo: { user: u.user, db: 'admin' } });
      await admin.command(
        (existing as unknown[]).length > 0
          ? { updateUser: u.user, pwd: u.password, roles }
          : { createUser: u.user, pwd: u.password, roles },
      );
    }
  });
}

async function expectLogin(uri: string, user: TestUser): Promise<void> {
  const url = new URL(uri);
  url.username = encodeURIComponent(user.user);
  url.password = encodeURIComponent(user.password);
  url.searchParams.set('authSource', 'admin');
  try {
    await withClient(url.toString(), (client) => client.db('admin').command({ ping: 1 }));
  } catch (error) {
    throw new Error(
      `${withoutCredentials(uri)} has no user management and user ${user.user} cannot log in ` +
        `(${String(error)}): create it with the password the suites use`,
    );
  }
}

export interface RealShard {
  _id: string;
  /** The shard's replica set, at the hosts listShards names (no credentials). */
  uri: string;
}

/** The shards of a real sharded cluster, as its mongos lists them. */
export async function listRealShards(uri: string): Promise<RealShard[]> {
  return withClient(uri, async (client) => {
    const reply = await client.db('admin').command({ listShards: 1 });
    return (reply.shards as Array<{ _id: string; host: string }>).map((shard) => {
      const slash = shard.host.indexOf('/');
      const set = slash < 0 ? undefined : shard.host.slice(0, slash);
      const hosts = shard.host.slice(slash + 1);
      return {
        _id: shard._id,
        uri: `mongodb://${hosts}/${set ? `?replicaSet=${encodeURIComponent(set)}` : ''}`,
      };
    });
  });
}

/** Real sharded clusters the sharded suites accept: 2 source shards, 3 destination shards. */
export const REAL_SHARD_COUNTS = { source: 2, destination: 3 } as const;

/** Fails with one clear line when a real sharded cluster has another number of shards. */
export function checkShardCount(
  role: 'source' | 'destination',
  shards: readonly RealShard[],
): void {
  const expected = REAL_SHARD_COUNTS[role];
  if (shards.length !== expected) {
    const variable =
      role === 'source'
        ? TEST_CLUSTER_VARIABLES.shardedSource
        : TEST_CLUSTER_VARIABLES.shardedDestination;
    throw new Error(
      `${variable}: the sharded suites need a ${role} with ${expected} shards, it has ${shards.length}`,
    );
  }
}
