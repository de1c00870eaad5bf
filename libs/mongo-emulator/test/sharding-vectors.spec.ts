import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EJSON } from 'bson';
import { compareValues } from '../src/bson/compare';
import { hashShardKeyValue } from '../src/sharding/hashing';

/**
 * The shared vectors (test/fixtures/sharding-vectors.json) that the engine's implementations
 * are tested against too (libs/engine/src/shards/sharding-vectors.spec.ts): mongod's hash64
 * values from its hasher_test.cpp and the documented BSON comparison order.
 */
interface Vectors {
  hash64: Array<{ value: unknown; hash: string }>;
  hash64Agreement: Array<{ value: unknown; hash: string }>;
  ordering: unknown[][];
  orderingExtended: unknown[][];
}

const raw = JSON.parse(
  readFileSync(join(__dirname, '../../../test/fixtures/sharding-vectors.json'), 'utf8'),
) as Vectors;
const parse = (v: unknown): unknown => EJSON.deserialize({ v } as never, { relaxed: false }).v;
const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);

describe('emulator shard key hashing and ordering against the shared vectors', () => {
  it.each(
    [...raw.hash64, ...raw.hash64Agreement].map((c) => [JSON.stringify(c.value), c.value, c.hash]),
  )('hash64(%s)', (_label, value, hash) => {
    expect(hashShardKeyValue(parse(value)).toString()).toBe(hash);
  });

  it.each([
    ['ordering', raw.ordering],
    ['orderingExtended', raw.orderingExtended],
  ])('orders every pair of %s as the documented BSON comparison order', (_name, table) => {
    const groups = table.map((g) => g.map(parse));
    const wrong: string[] = [];
    groups.forEach((gi, i) =>
      groups.forEach((gj, j) => {
        for (const a of gi)
          for (const b of gj)
            if (sign(compareValues(a, b)) !== sign(i - j))
              wrong.push(`${EJSON.stringify(a)} vs ${EJSON.stringify(b)}`);
      }),
    );
    expect(wrong).toEqual([]);
  });
});
