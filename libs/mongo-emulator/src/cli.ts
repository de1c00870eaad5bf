/**
 * Command-line launcher:
 *   emulator --topology replset [--name rs0] [--port 0] [--history N] [--noop-interval-ms MS] [--user name:password:role[,role...]]... [--pause-stats]
 *   emulator --topology sharded --shards N [--mongos M] [--name sharded] [--port 0] [--history N] [--noop-interval-ms MS] [--user ...]... [--pause-stats]
 * `--noop-interval-ms` is the periodic no-op write interval of every primary (replica set or
 * shard), mongod's periodicNoopIntervalSecs (default 10000).
 * `--pause-stats` (or EMULATOR_PAUSE_STATS=1) records event-loop delay and GC pauses for the
 * `emulatorStats` command (an emulator extension).
 * Prints one JSON line once every listener is up (`{"uri": ...}`, plus `shards` for a sharded
 * cluster) and runs until SIGINT/SIGTERM.
 * Exit codes: 0 on a signal-initiated shutdown, 2 on bad arguments, 1 on startup failure.
 */
import { startReplicaSet, startShardedCluster, type ReplicaSetOptions } from './index';
import type { ShardedClusterOptions } from './sharding/cluster';
import type { UserSpec } from './auth/user-registry';
import { BUILTIN_ROLES } from './auth/roles';
import { enablePauseStats, pauseStatsRequested } from './server/pause-stats';

export class UsageError extends Error {}

export interface CliOptions {
  topology: 'replset' | 'sharded';
  /** Options of a replset topology (also the parsed common flags of a sharded one). */
  replSet: ReplicaSetOptions;
  /** Set for `--topology sharded`. */
  sharded?: ShardedClusterOptions;
  /** `--pause-stats`: record main-thread pauses for `emulatorStats`. */
  pauseStats?: boolean;
}

const USAGE =
  'usage: emulator --topology replset|sharded [--shards N] [--mongos M] [--name rs0] [--port 0] [--history N] [--noop-interval-ms MS] [--user <name>:<password>:<role>[,<role>...]]... [--pause-stats]';

function parseInteger(flag: string, value: string, min: number, max: number): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`${flag} expects an integer, got '${value}'`);
  const n = Number(value);
  if (n < min || n > max)
    throw new UsageError(`${flag} must be between ${min} and ${max}, got ${n}`);
  return n;
}

/** `name:password:role[,role...]`; the password may itself contain ':' (the last ':' separates roles). */
export function parseUser(value: string): UserSpec {
  const first = value.indexOf(':');
  const last = value.lastIndexOf(':');
  if (first <= 0 || last === first)
    throw new UsageError(`--user expects <name>:<password>:<role>[,<role>...], got '${value}'`);
  const user = value.slice(0, first);
  const password = value.slice(first + 1, last);
  const roles = value
    .slice(last + 1)
    .split(',')
    .filter(Boolean);
  if (!password) throw new UsageError(`--user ${user}: empty password`);
  if (!roles.length) throw new UsageError(`--user ${user}: at least one role is required`);
  for (const role of roles) {
    if (!BUILTIN_ROLES.has(role.split('@')[0]))
      throw new UsageError(`--user ${user}: unknown role '${role}'`);
  }
  return { user, password, roles };
}

export function parseArgs(argv: string[]): CliOptions {
  let topology: string | undefined;
  const replSet: ReplicaSetOptions = {};
  const users: UserSpec[] = [];
  let shards: number | undefined;
  let mongos: number | undefined;
  let pauseStats = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const eq = arg.indexOf('=');
    const flag = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const inline = arg.startsWith('--') && eq > 0 ? arg.slice(eq + 1) : undefined;
    const value = (): string => {
      if (inline !== undefined) return inline;
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--'))
        throw new UsageError(`${flag} requires a value`);
      i += 1;
      return next;
    };
    switch (flag) {
      case '--pause-stats':
        if (inline !== undefined) throw new UsageError('--pause-stats takes no value');
        pauseStats = true;
        break;
      case '--topology':
        topology = value();
        break;
      case '--name': {
        const name = value();
        if (!/^[A-Za-z0-9_-]+$/.test(name))
          throw new UsageError(`--name must be letters, digits, '-' or '_', got '${name}'`);
        replSet.name = name;
        break;
      }
      case '--port':
        replSet.port = parseInteger('--port', value(), 0, 65535);
        break;
      case '--history':
        replSet.historySize = parseInteger('--history', value(), 1, Number.MAX_SAFE_INTEGER);
        break;
      case '--noop-interval-ms':
        replSet.noopIntervalMs = parseInteger('--noop-interval-ms', value(), 1, 2 ** 31 - 1);
        break;
      case '--user':
        users.push(parseUser(value()));
        break;
      case '--shards':
        shards = parseInteger('--shards', value(), 1, 64);
        break;
      case '--mongos':
        mongos = parseInteger('--mongos', value(), 1, 64);
        break;
      default:
        throw new UsageError(`unknown argument '${arg}'`);
    }
  }
  if (topology === undefined) throw new UsageError('--topology is required');
  if (topology === 'sharded') {
    if (shards === undefined) throw new UsageError('--shards is required with --topology sharded');
    const sharded: ShardedClusterOptions = { name: replSet.name ?? 'sharded', shards };
    if (mongos !== undefined) sharded.mongos = mongos;
    if (replSet.port !== undefined) sharded.port = replSet.port;
    if (replSet.historySize !== undefined) sharded.historySize = replSet.historySize;
    if (replSet.noopIntervalMs !== undefined) sharded.noopIntervalMs = replSet.noopIntervalMs;
    if (users.length) sharded.users = users;
    return { topology: 'sharded', replSet, sharded, ...(pauseStats ? { pauseStats } : {}) };
  }
  if (topology !== 'replset') {
    throw new UsageError(`unsupported topology '${topology}': expected 'replset' or 'sharded'`);
  }
  if (shards !== undefined || mongos !== undefined)
    throw new UsageError('--shards and --mongos need --topology sharded');
  if (users.length) replSet.users = users;
  return { topology: 'replset', replSet, ...(pauseStats ? { pauseStats } : {}) };
}

export async function main(argv: string[]): Promise<void> {
  let options: CliOptions;
  try {
    options = parseArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`emulator: ${err.message}. ${USAGE}\n`);
      process.exit(2);
    }
    throw err;
  }
  if (options.pauseStats || pauseStatsRequested()) enablePauseStats();
  let rs: { stop(): Promise<void> };
  let line: object;
  try {
    if (options.sharded) {
      const cluster = await startShardedCluster(options.sharded);
      rs = cluster;
      line = { uri: cluster.uri, shards: cluster.shards.map((s) => ({ _id: s._id, uri: s.uri })) };
    } else {
      const set = await startReplicaSet(options.replSet);
      rs = set;
      line = { uri: set.uri };
    }
  } catch (err) {
    process.stderr.write(`emulator: cannot start: ${(err as Error).message}\n`);
    process.exit(1);
  }
  process.stdout.write(`${JSON.stringify(line)}\n`);
  let stopping = false;
  const shutdown = () => {
    if (stopping) return;
    stopping = true;
    rs.stop().then(
      () => process.exit(0),
      () => process.exit(0),
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

if (require.main === module) {
  void main(process.argv.slice(2));
}
