import { randomBytes } from 'node:crypto';
import { relative } from 'node:path';

/**
 * The one switch between emulated and real clusters for the integration and end-to-end suites.
 *
 * Unset (CI here): every suite starts the emulated clusters it needs, as before. Set, in pairs:
 * - SYNC_TEST_SOURCE_URI / SYNC_TEST_DESTINATION_URI: two replica sets;
 * - SYNC_TEST_SHARDED_SOURCE_URI / SYNC_TEST_SHARDED_DESTINATION_URI: two sharded clusters (their
 *   mongos), source with 2 shards, destination with 3, as the emulated ones.
 * Each connection string carries a user with the `root` role. With any of them set no suite
 * starts an emulated cluster: a suite whose kind of cluster is not given, and a test that needs
 * a knob only the emulator has, is reported as skipped with the reason in its name.
 *
 * The clusters must be disposable: every scenario starts by dropping every database but admin,
 * config and local on them (the sync copies whole clusters, and keeps its job in
 * `sync_reserved_for_internal_use`, a fixed name), and drops them again when it ends. Suites
 * sharing them must run one at a time (`jest --runInBand`).
 *
 * For the suites: describeOn(need) and emulatorOnly(reason) / describeEmulatorOnly(reason) for
 * the named skips; testDb / testNs for the scenario's database names. real-cluster-admin.ts does
 * the resets, users and shard listing; clusters.ts (in-process) and e2e/support/harness.ts
 * (processes) start a scenario's clusters either way.
 */

export const TEST_CLUSTER_VARIABLES = {
  source: 'SYNC_TEST_SOURCE_URI',
  destination: 'SYNC_TEST_DESTINATION_URI',
  shardedSource: 'SYNC_TEST_SHARDED_SOURCE_URI',
  shardedDestination: 'SYNC_TEST_SHARDED_DESTINATION_URI',
} as const;

/** The sync's own metadata database (libs/engine INTERNAL_DATABASE; not configurable). */
export const INTERNAL_DATABASE = 'sync_reserved_for_internal_use';
/** Databases a reset keeps (the server's own). */
export const SYSTEM_DATABASES = ['admin', 'config', 'local'];

export interface RealClusterPair {
  /** Connection strings as given (with the root user's credentials). */
  source: string;
  destination: string;
}

function pair(sourceVariable: string, destinationVariable: string): RealClusterPair | undefined {
  const source = process.env[sourceVariable] || undefined;
  const destination = process.env[destinationVariable] || undefined;
  if (source === undefined && destination === undefined) return undefined;
  if (source === undefined || destination === undefined) {
    throw new Error(
      `${sourceVariable} and ${destinationVariable} go together: set both or neither`,
    );
  }
  return { source, destination };
}

/** The real replica sets, when SYNC_TEST_SOURCE_URI and SYNC_TEST_DESTINATION_URI are set. */
export function realReplicaSets(): RealClusterPair | undefined {
  return pair(TEST_CLUSTER_VARIABLES.source, TEST_CLUSTER_VARIABLES.destination);
}

/** The real sharded clusters (mongos), when both SYNC_TEST_SHARDED_* variables are set. */
export function realShardedClusters(): RealClusterPair | undefined {
  return pair(TEST_CLUSTER_VARIABLES.shardedSource, TEST_CLUSTER_VARIABLES.shardedDestination);
}

/** True when any cluster variable is set: then no suite starts emulated clusters. */
export function onRealClusters(): boolean {
  return realReplicaSets() !== undefined || realShardedClusters() !== undefined;
}

// ------------------------------------------------------------------------------------------------
// Named skips

type TestFn = (name: string, fn?: jest.ProvidesCallback, timeout?: number) => void;
type DescribeFn = (name: string, fn: () => void) => void;

/**
 * Also one `skipped: <file> › <name>` line on stderr: Jest lists no test of a file whose every
 * test is skipped (as libs/mongo-emulator/test/helpers/real-server.ts does).
 */
function announceSkip(title: string): string {
  const file = relative(process.cwd(), expect.getState().testPath ?? '');
  process.stderr.write(`skipped: ${file} › ${title}\n`);
  return title;
}

/**
 * `it` on emulated clusters; on real ones the test is reported as skipped, named
 * `<name> [emulator only: <reason>]` — for tests that need a knob only the emulator has (a tiny
 * change history, fail points, killing or restarting the server, a third cluster).
 */
export function emulatorOnly(reason: string): TestFn {
  if (!onRealClusters()) return it;
  return (name, fn, timeout) =>
    it.skip(announceSkip(`${name} [emulator only: ${reason}]`), fn, timeout);
}

/** `describe` on emulated clusters; on real ones every test is skipped, the reason in the name. */
export function describeEmulatorOnly(reason: string): DescribeFn {
  if (!onRealClusters()) return describe;
  return (name, fn) => describe.skip(announceSkip(`${name} [emulator only: ${reason}]`), fn);
}

/** Which clusters a suite runs against. */
export type ClusterNeed = 'replicaSets' | 'shardedClusters' | 'replicaSetAndShardedClusters';

const NEEDED: Record<ClusterNeed, string[]> = {
  replicaSets: [TEST_CLUSTER_VARIABLES.source, TEST_CLUSTER_VARIABLES.destination],
  shardedClusters: [
    TEST_CLUSTER_VARIABLES.shardedSource,
    TEST_CLUSTER_VARIABLES.shardedDestination,
  ],
  replicaSetAndShardedClusters: [
    TEST_CLUSTER_VARIABLES.source,
    TEST_CLUSTER_VARIABLES.shardedDestination,
  ],
};

/** Whether the clusters a suite needs are there: emulated (nothing set) or given. */
export function clustersAvailable(need: ClusterNeed): boolean {
  if (!onRealClusters()) return true;
  const replicaSets = realReplicaSets() !== undefined;
  const sharded = realShardedClusters() !== undefined;
  if (need === 'replicaSets') return replicaSets;
  if (need === 'shardedClusters') return sharded;
  return replicaSets && sharded;
}

/**
 * `describe` for a suite that needs `need`: on real clusters without them, its tests are
 * reported as skipped, named `[needs <VARIABLE> and <VARIABLE>]`.
 */
export function describeOn(need: ClusterNeed): DescribeFn {
  if (clustersAvailable(need)) return describe;
  return (name, fn) =>
    describe.skip(announceSkip(`${name} [needs ${NEEDED[need].join(' and ')}]`), fn);
}

// ------------------------------------------------------------------------------------------------
// Databases of each scenario

/** Per test file (jest gives each its own module registry). */
const RUN = randomBytes(2).toString('hex');
let scenario = 0;

/**
 * Starts a new set of database names (`testDb`): called each time real clusters are reset for a
 * scenario. Emulated clusters are fresh for each scenario and keep the plain names.
 */
export function nextScenario(): void {
  scenario += 1;
}

/**
 * A database of the current scenario: `base` on emulated clusters, `<base>_<run>_<n>` on real
 * ones, so a scenario never meets another one's data (say a late write of a stopped process).
 * Call it while a test runs, not at module load: the name changes with every scenario.
 */
export function testDb(base: string): string {
  if (!onRealClusters() || SYSTEM_DATABASES.includes(base) || base === INTERNAL_DATABASE) {
    return base;
  }
  return `${base}_${RUN}_${scenario}`;
}

/** `db.collection` with the database of the current scenario (testDb). */
export function testNs(namespace: string): string {
  const dot = namespace.indexOf('.');
  return `${testDb(namespace.slice(0, dot))}${namespace.slice(dot)}`;
}
