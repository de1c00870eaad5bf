import { pairShards, sourceShardOf } from './shard-sync';

describe('pairShards (reverse of a per-shard sync)', () => {
  it('pairs the workers with the new source shards in sorted order', () => {
    expect(pairShards(['a-1', 'a-0'], ['b-1', 'b-0'], 'cluster1')).toEqual({
      'a-0': 'b-0',
      'a-1': 'b-1',
    });
  });

  it('keeps a worker on the shard of its own id, pairing the rest in order', () => {
    expect(pairShards(['s0', 's1', 's2'], ['x', 's1', 'a'], 'cluster1')).toEqual({
      s0: 'a',
      s1: 's1',
      s2: 'x',
    });
  });

  it('refuses different shard counts by name, naming both lists', () => {
    expect(() => pairShards(['s0', 's1'], ['d0', 'd1', 'd2'], 'cluster1')).toThrow(
      expect.objectContaining({
        error: 'ReverseShardCountMismatch',
        message: expect.stringContaining('cluster1 has 3 (d0, d1, d2), the sync runs 2 (s0, s1)'),
      }),
    );
  });

  it('reads the shard of the worker id unless a reverse paired it with another', () => {
    const shard = { id: 's1', coordinatorID: 's0', members: ['s0', 's1'] };
    expect(sourceShardOf(shard)).toBe('s1');
    expect(sourceShardOf({ ...shard, sources: { s0: 'd0', s1: 'd1' } })).toBe('d1');
    expect(sourceShardOf({ ...shard, sources: { s0: 'd0', s1: 'd1' } }, 's0')).toBe('d0');
  });
});
