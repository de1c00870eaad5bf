import { MongoClient } from 'mongodb';
import { startReplicaSet, startShardedCluster } from '@sync/mongo-emulator';
import {
  checkShardCount,
  credentialsOf,
  ensureUsers,
  listRealShards,
  resetRealCluster,
  type TestUser,
} from './real-cluster-admin';
import {
  TEST_CLUSTER_VARIABLES,
  nextScenario,
  onRealClusters,
  realReplicaSets,
  realShardedClusters,
} from './real-clusters';

/**
 * Clusters for the integration suites, in-process: emulated ones by default, or the real ones
 * test/helpers/real-clusters.ts names (SYNC_TEST_SOURCE_URI and the others). Real clusters are
 * reset at the start of each scenario and again when it stops (every database but admin, config
 * and local dropped): point the variables only at disposable test clusters.
 */
export interface TestClusters {
  /** Connection strings with full rights (emulated: no credentials; real: as given, root). */
  sourceUri: string;
  destinationUri: string;
  /** True when running against real MongoDB rather than the emulator. */
  real: boolean;
  /** Drops user databases and the sync metadata database on both sides (a new scenario). */
  reset(): Promise<void>;
  /** Stops emulated clusters; resets real ones (the scenario's databases dropped). */
  stop(): Promise<void>;
}

export interface TestClusterOptions {
  /** Users to exist on both clusters (created at launch for emulated ones, by createUser for real ones). */
  users?: TestUser[];
  /** Change history the emulator keeps: an emulator-only knob (refused on real clusters). */
  historySize?: number;
}

export async function startTestClusters(options: TestClusterOptions = {}): Promise<TestClusters> {
  if (onRealClusters()) {
    const real = requireReal(realReplicaSets(), 'replicaSets');
    refuseEmulatorKnobs(options);
    const reset = async (): Promise<void> => {
      await Promise.all([resetRealCluster(real.source), resetRealCluster(real.destination)]);
    };
    await reset();
    // The suites' users (an ordinary one is needed to see write blocking bind) are created
    // through the given connection strings, which carry a root user.
    for (const uri of [real.source, real.destination]) await ensureUsers(uri, options.users ?? []);
    nextScenario();
    return {
      sourceUri: real.source,
      destinationUri: real.destination,
      real: true,
      reset: async () => {
        await reset();
        nextScenario();
      },
      stop: reset,
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

/** One cluster of a suite that mixes topologies (replica set → sharded, sharded → sharded). */
export interface TestCluster {
  /** Connection string with full rights (emulated: no authentication; real: as given, root). */
  uri: string;
  /** A sharded cluster's shards, each a connection string with the same rights. */
  shards: Array<{ _id: string; uri: string }>;
  /** Stops an emulated cluster; resets a real one (the scenario's databases dropped). */
  stop(): Promise<void>;
}

export type TestTopology =
  { kind: 'replicaSet' } | { kind: 'sharded'; name: string; shards: number };

/**
 * The `role` cluster of a scenario: started in-process (emulated, no authentication), or the
 * real one its variable names — SYNC_TEST_SOURCE_URI / SYNC_TEST_DESTINATION_URI for a replica
 * set, SYNC_TEST_SHARDED_* for a sharded cluster (2 source shards, 3 destination shards; the
 * shards must accept the same root user, for the tests that read a shard directly).
 */
export async function startTestCluster(
  role: 'source' | 'destination',
  topology: TestTopology,
): Promise<TestCluster> {
  if (onRealClusters()) {
    const sharded = topology.kind === 'sharded';
    const real = sharded
      ? requireReal(realShardedClusters(), 'shardedClusters')
      : requireReal(realReplicaSets(), 'replicaSets');
    const uri = real[role];
    await resetRealCluster(uri);
    nextScenario();
    let shards: TestCluster['shards'] = [];
    if (sharded) {
      const listed = await listRealShards(uri);
      checkShardCount(role, listed);
      const user = credentialsOf(uri);
      shards = listed.map((shard) => ({
        _id: shard._id,
        uri: user ? withCredentials(shard.uri, user.user, user.password) : shard.uri,
      }));
    }
    return { uri, shards, stop: () => resetRealCluster(uri) };
  }
  if (topology.kind === 'replicaSet') {
    const cluster = await startReplicaSet();
    return { uri: cluster.uri, shards: [], stop: () => cluster.stop() };
  }
  const cluster = await startShardedCluster({ name: topology.name, shards: topology.shards });
  return {
    uri: cluster.uri,
    shards: cluster.shards.map((shard) => ({ _id: shard._id, uri: shard.uri })),
    stop: () => cluster.stop(),
  };
}

function requireReal<T>(real: T | undefined, need: 'replicaSets' | 'shardedClusters'): T {
  if (real !== undefined) return real;
  const variables =
    need === 'replicaSets'
      ? `${TEST_CLUSTER_VARIABLES.source} and ${TEST_CLUSTER_VARIABLES.destination}`
      : `${TEST_CLUSTER_VARIABLES.shardedSource} and ${TEST_CLUSTER_VARIABLES.shardedDestination}`;
  throw new Error(
    `real clusters are configured but not ${variables}: declare the suite with describeOn('${need}')`,
  );
}

function refuseEmulatorKnobs(options: TestClusterOptions): void {
  if (options.historySize !== undefined) {
    throw new Error(
      'historySize is an emulator-only knob: declare the test with emulatorOnly(reason)',
    );
  }
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
