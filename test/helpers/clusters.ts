import { MongoClient } from 'mongodb';
import { startReplicaSet } from '@sync/mongo-emulator';

/**
 * A source and a destination cluster for integration tests: emulated replica sets by default,
 * or real clusters when SYNC_TEST_SOURCE_URI and SYNC_TEST_DESTINATION_URI are set.
 *
 * With real clusters the suites drop every user database they find before each scenario:
 * point these variables only at disposable test clusters.
 */
export interface TestClusters {
  sourceUri: string;
  destinationUri: string;
  /** True when running against real MongoDB rather than the emulator. */
  real: boolean;
  /** Drops user databases (and the sync metadata database) on both sides. */
  reset(): Promise<void>;
  stop(): Promise<void>;
}

export interface TestClusterOptions {
  /** Users to exist on both clusters (created at launch for emulated ones, by createUser for real ones). */
  users?: Array<{ user: string; password: string; roles: string[] }>;
  historySize?: number;
}

export async function startTestClusters(options: TestClusterOptions = {}): Promise<TestClusters> {
  const envSource = process.env.SYNC_TEST_SOURCE_URI;
  const envDestination = process.env.SYNC_TEST_DESTINATION_URI;
  if (envSource && envDestination) {
    // Real clusters: the suites' users (an ordinary one is needed to see write blocking bind)
    // are created through the given connection strings, which must carry a user-admin.
    for (const uri of [envSource, envDestination]) await ensureUsers(uri, options.users ?? []);
    return {
      sourceUri: envSource,
      destinationUri: envDestination,
      real: true,
      reset: async () => {
        await dropUserDatabases(envSource);
        await dropUserDatabases(envDestination);
      },
      stop: async () => undefined,
    };
  }
  const source = await startReplicaSet({
    name: 'source',
    users: options.users,
    historySize: options.historySize,
  });
  const destination = await startReplicaSet({
    name: 'destination',
    users: options.users,
    historySize: options.historySize,
  });
  return {
    sourceUri: source.uri,
    destinationUri: destination.uri,
    real: false,
    reset: async () => {
      await dropUserDatabases(source.uri, options.users?.[0]);
      await dropUserDatabases(destination.uri, options.users?.[0]);
    },
    stop: async () => {
      await Promise.all([source.stop(), destination.stop()]);
    },
  };
}

/** Adds credentials to a connection string (authSource=admin). */
export function withCredentials(uri: string, user: string, password: string): string {
  const url = new URL(uri);
  url.username = encodeURIComponent(user);
  url.password = encodeURIComponent(password);
  url.searchParams.set('authSource', 'admin');
  return url.toString();
}

async function dropUserDatabases(
  uri: string,
  user?: { user: string; password: string },
): Promise<void> {
  const client = await MongoClient.connect(
    user ? withCredentials(uri, user.user, user.password) : uri,
  );
  try {
    const { databases } = await client.db('admin').admin().listDatabases({ nameOnly: true });
    for (const { name } of databases) {
      if (!['admin', 'config', 'local'].includes(name)) await client.db(name).dropDatabase();
    }
  } finally {
    await client.close();
  }
}

async function ensureUsers(
  uri: string,
  users: Array<{ user: string; password: string; roles: string[] }>,
): Promise<void> {
  if (users.length === 0) return;
  const client = await MongoClient.connect(uri);
  try {
    for (const u of users) {
      try {
        await client.db('admin').command({
          createUser: u.user,
          pwd: u.password,
          roles: u.roles.map((role) => ({ role, db: 'admin' })),
        });
      } catch (error) {
        // 51003 UserAlreadyExists: a previous run created it.
        if ((error as { code?: number }).code !== 51003) throw error;
      }
    }
  } finally {
    await client.close();
  }
}
