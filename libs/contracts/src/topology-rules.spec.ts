import { ApiError } from './api-error';
import type { ApiErrorName } from './api-errors';
import type { StartRequest } from './start-request';
import { checkTopologyRules, type ClusterShape } from './topology-rules';

const rs: ClusterShape = { kind: 'replicaSet', shardCount: 1 };
const sharded = (shardCount: number): ClusterShape => ({ kind: 'sharded', shardCount });
const request = (extra: Partial<StartRequest> = {}): StartRequest => ({
  source: 'cluster0',
  destination: 'cluster1',
  buildIndexes: 'beforeDataCopy',
  enableUserWriteBlocking: true,
  reversible: false,
  ...extra,
});
const withSharding = { sharding: { createSupportingIndexes: false, shardingEntries: [] } };

describe('checkTopologyRules', () => {
  it.each<[string, Partial<StartRequest>, ClusterShape, ClusterShape]>([
    ['replica set to replica set', {}, rs, rs],
    ['replica set to replica set, reversible', { reversible: true }, rs, rs],
    ['replica set to sharded with sharding', withSharding, rs, sharded(2)],
    ['sharded to sharded', {}, sharded(2), sharded(3)],
    [
      'sharded to sharded, reversible, same shard count',
      { reversible: true },
      sharded(3),
      sharded(3),
    ],
  ])('allows %s', (_name, extra, source, destination) => {
    expect(() => checkTopologyRules(request(extra), source, destination)).not.toThrow();
  });

  it.each<[string, Partial<StartRequest>, ClusterShape, ClusterShape, ApiErrorName]>([
    [
      'replica set to sharded without sharding',
      {},
      rs,
      sharded(2),
      'ShardingRequiredForReplicaSetToSharded',
    ],
    ['sharding for replica set to replica set', withSharding, rs, rs, 'ShardingNotAllowed'],
    ['sharding for sharded to sharded', withSharding, sharded(2), sharded(2), 'ShardingNotAllowed'],
    [
      'reversible replica set to sharded',
      { ...withSharding, reversible: true },
      rs,
      sharded(2),
      'ReversibleUnsupportedReplicaSetToSharded',
    ],
    [
      'reversible with different shard counts',
      { reversible: true },
      sharded(2),
      sharded(3),
      'ReversibleUnsupportedShardCountMismatch',
    ],
    ['sharded to replica set', {}, sharded(2), rs, 'UnsupportedTopology'],
  ])('rejects %s', (_name, extra, source, destination, name) => {
    let caught: unknown;
    try {
      checkTopologyRules(request(extra), source, destination);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ApiError);
    expect((caught as ApiError).error).toBe(name);
  });
});
