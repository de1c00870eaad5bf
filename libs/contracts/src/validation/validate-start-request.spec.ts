import { ApiError } from '../api-error';
import type { ApiErrorName } from '../api-errors';
import { validateStartRequest } from './validate-start-request';

const base = { source: 'cluster0', destination: 'cluster1' };
const clusterNames = ['cluster0', 'cluster1'];
const entry = (key: unknown, extra: object = {}) => ({
  database: 'shop',
  collection: 'orders',
  shardCollection: { key },
  ...extra,
});
const sharding = (...entries: unknown[]) => ({ ...base, sharding: { shardingEntries: entries } });
const include = (...entries: unknown[]) => ({ ...base, includeNamespaces: entries });
const exclude = (...entries: unknown[]) => ({ ...base, excludeNamespaces: entries });

function failure(body: unknown): { error: ApiErrorName; message: string } {
  try {
    validateStartRequest(body, { clusterNames });
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return { error: (error as ApiError).error, message: (error as ApiError).message };
  }
  throw new Error('expected the body to be rejected');
}

describe('validateStartRequest', () => {
  it('applies the defaults and returns plain objects', () => {
    const request = validateStartRequest(base, { clusterNames });
    expect(request).toEqual({
      source: 'cluster0',
      destination: 'cluster1',
      buildIndexes: 'beforeDataCopy',
      enableUserWriteBlocking: false,
      reversible: false,
    });
    expect(Object.getPrototypeOf(request)).toBe(Object.prototype);
  });

  it('keeps every field of a full request', () => {
    const body = {
      ...base,
      buildIndexes: 'beforeDataCopy',
      enableUserWriteBlocking: true,
      reversible: true,
      includeNamespaces: [
        { database: 'shop', collections: ['orders', 'items'] },
        { database: 'logs', collectionsRegex: { pattern: '^app_', options: 'ix' } },
        { database: 'all' },
      ],
      excludeNamespaces: [{ database: 'shop', collections: ['tmp'] }],
    };
    expect(validateStartRequest(body, { clusterNames })).toEqual(body);
  });

  it('verification: absent (on by default), an empty object (on), or turned off', () => {
    expect(validateStartRequest(base).verification).toBeUndefined();
    expect(validateStartRequest({ ...base, verification: {} }).verification).toEqual({
      enabled: true,
    });
    expect(
      validateStartRequest({ ...base, verification: { enabled: false } }).verification,
    ).toEqual({ enabled: false });
  });

  it('fills sharding defaults and keeps the key order', () => {
    const request = validateStartRequest(sharding(entry([{ b: 1 }, { a: -1 }])));
    expect(request.sharding).toEqual({
      createSupportingIndexes: false,
      shardingEntries: [entry([{ b: 1 }, { a: -1 }])],
    });
    expect(Object.keys(request.sharding!.shardingEntries[0].shardCollection.key[0])).toEqual(['b']);
  });

  it.each([
    ['empty sharding entries (shards nothing)', { ...base, sharding: { shardingEntries: [] } }],
    ['hashed shard key', sharding(entry([{ _id: 'hashed' }]))],
    ['compound key with one hashed field', sharding(entry([{ a: 1 }, { b: 'hashed' }]))],
    ['dotted key field', sharding(entry([{ 'a.b': 1 }]))],
    ['never without reversible', { ...base, buildIndexes: 'never' }],
    [
      'regex option letters i m s x',
      include({ database: 'd', collectionsRegex: { pattern: 'a # c', options: 'imsx' } }),
    ],
    ['63-byte database name', include({ database: 'd'.repeat(63) })],
    [
      'createSupportingIndexes true',
      { ...base, sharding: { createSupportingIndexes: true, shardingEntries: [] } },
    ],
    ['exclude of a system database', exclude({ database: 'admin' })],
  ])('accepts %s', (_name, body) => {
    expect(() => validateStartRequest(body, { clusterNames })).not.toThrow();
  });

  // Each row: [case, body, error name, text the description must contain (names the field)].
  it.each<[string, unknown, ApiErrorName, string]>([
    ['body is an array', [base], 'InvalidRequest', 'JSON object'],
    ['body is null', null, 'InvalidRequest', 'JSON object'],
    ['body is a string', 'start', 'InvalidRequest', 'JSON object'],
    ['source missing', { destination: 'cluster1' }, 'InvalidRequest', 'source is required'],
    ['destination missing', { source: 'cluster0' }, 'InvalidRequest', 'destination is required'],
    ['source not a string', { ...base, source: 0 }, 'InvalidRequest', 'source must be a string'],
    ['source empty', { ...base, source: '' }, 'InvalidRequest', 'source must not be empty'],
    [
      'misspelt includeNamespace',
      { ...base, includeNamespace: [] },
      'InvalidRequest',
      'unknown field "includeNamespace"',
    ],
    [
      'unknown top-level field',
      { ...base, verify: true },
      'InvalidRequest',
      'unknown field "verify"',
    ],
    [
      'buildIndexes not allowed',
      { ...base, buildIndexes: 'afterDataCopy' },
      'InvalidRequest',
      'buildIndexes must be one of beforeDataCopy, never',
    ],
    [
      'buildIndexes null',
      { ...base, buildIndexes: null },
      'InvalidRequest',
      'buildIndexes must be one of',
    ],
    [
      'reversible as string',
      { ...base, reversible: 'true' },
      'InvalidRequest',
      'reversible must be a boolean (true or false), not the string "true"',
    ],
    [
      'reversible null',
      { ...base, reversible: null },
      'InvalidRequest',
      'reversible must be a boolean',
    ],
    [
      'enableUserWriteBlocking as number',
      { ...base, enableUserWriteBlocking: 1 },
      'InvalidRequest',
      'enableUserWriteBlocking must be a boolean',
    ],
    [
      'includeNamespaces not an array',
      { ...base, includeNamespaces: { database: 'd' } },
      'InvalidRequest',
      'includeNamespaces must be an array',
    ],
    ['includeNamespaces empty', include(), 'InvalidRequest', 'includeNamespaces must not be empty'],
    [
      'includeNamespaces element not an object',
      include('shop'),
      'InvalidRequest',
      'includeNamespaces must contain only objects',
    ],
    [
      'filter database missing',
      include({ collections: ['a'] }),
      'InvalidRequest',
      'includeNamespaces[0].database is required',
    ],
    [
      'filter unknown field',
      include({ database: 'd', collection: ['a'] }),
      'InvalidRequest',
      'unknown field "collection" in includeNamespaces[0]',
    ],
    [
      'exclude unknown field',
      exclude({ database: 'd', databaseRegex: 'x' }),
      'InvalidRequest',
      'unknown field "databaseRegex" in excludeNamespaces[0]',
    ],
    [
      'database with a dot',
      include({ database: 'a.b' }),
      'InvalidRequest',
      'includeNamespaces[0].database must not contain "."',
    ],
    [
      'database with a slash',
      include({ database: 'a/b' }),
      'InvalidRequest',
      'must not contain "/"',
    ],
    [
      'database with a backslash',
      include({ database: 'a\\b' }),
      'InvalidRequest',
      'must not contain "\\"',
    ],
    [
      'database with a space',
      include({ database: 'a b' }),
      'InvalidRequest',
      'must not contain a space',
    ],
    [
      'database with a quote',
      include({ database: 'a"b' }),
      'InvalidRequest',
      'must not contain """',
    ],
    [
      'database with a dollar',
      include({ database: 'a$b' }),
      'InvalidRequest',
      'must not contain "$"',
    ],
    [
      'database empty',
      include({ database: '' }),
      'InvalidRequest',
      'includeNamespaces[0].database must not be empty',
    ],
    [
      'database of 64 bytes',
      include({ database: 'd'.repeat(64) }),
      'InvalidRequest',
      'shorter than 64 bytes',
    ],
    [
      'database of 64 UTF-8 bytes',
      include({ database: 'é'.repeat(32) }),
      'InvalidRequest',
      'shorter than 64 bytes',
    ],
    [
      'include of a system database',
      include({ database: 'local' }),
      'InvalidRequest',
      '"local" is a system database',
    ],
    [
      'collections empty',
      include({ database: 'd', collections: [] }),
      'InvalidRequest',
      'includeNamespaces[0].collections must not be empty',
    ],
    [
      'collections not strings',
      include({ database: 'd', collections: [1] }),
      'InvalidRequest',
      'collections must contain only strings',
    ],
    [
      'collection with a dollar',
      include({ database: 'd', collections: ['a$'] }),
      'InvalidRequest',
      'collections element [0] must not contain $',
    ],
    [
      'system collection',
      include({ database: 'd', collections: ['system.views'] }),
      'InvalidRequest',
      'collections element [0] must not start with "system."',
    ],
    [
      'empty collection name',
      include({ database: 'd', collections: ['a', ''] }),
      'InvalidRequest',
      'collections element [1] must not be empty',
    ],
    [
      'namespace too long',
      include({ database: 'd', collections: ['c'.repeat(254)] }),
      'InvalidRequest',
      'includeNamespaces[0].collections: namespace is 256 bytes',
    ],
    [
      'collections and regex together',
      include({ database: 'd', collections: ['a'], collectionsRegex: { pattern: 'a' } }),
      'InvalidRequest',
      'cannot be combined with collectionsRegex',
    ],
    [
      'regex not an object',
      include({ database: 'd', collectionsRegex: '^a' }),
      'InvalidRequest',
      'collectionsRegex must be an object',
    ],
    [
      'regex pattern missing',
      include({ database: 'd', collectionsRegex: { options: 'i' } }),
      'InvalidRequest',
      'collectionsRegex.pattern is required',
    ],
    [
      'regex pattern not compiling',
      include({ database: 'd', collectionsRegex: { pattern: '(a' } }),
      'InvalidRequest',
      'collectionsRegex.pattern is not a valid regular expression',
    ],
    [
      'regex pattern exponential',
      include({ database: 'd', collectionsRegex: { pattern: '^(a+)+$' } }),
      'InvalidRequest',
      'nests unbounded quantifiers',
    ],
    [
      'regex option letter not accepted',
      include({ database: 'd', collectionsRegex: { pattern: 'a', options: 'g' } }),
      'InvalidRequest',
      'has unsupported option "g"',
    ],
    [
      'regex option repeated',
      include({ database: 'd', collectionsRegex: { pattern: 'a', options: 'ii' } }),
      'InvalidRequest',
      'repeats option "i"',
    ],
    [
      'regex options not a string',
      include({ database: 'd', collectionsRegex: { pattern: 'a', options: 1 } }),
      'InvalidRequest',
      'options must be a string',
    ],
    [
      'regex unknown field',
      include({ database: 'd', collectionsRegex: { pattern: 'a', flags: 'i' } }),
      'InvalidRequest',
      'unknown field "flags" in includeNamespaces[0].collectionsRegex',
    ],
    [
      'verification not an object',
      { ...base, verification: false },
      'InvalidRequest',
      'verification must be an object',
    ],
    [
      'verification unknown field',
      { ...base, verification: { enabled: false, sampleRate: 1 } },
      'InvalidRequest',
      'unknown field "sampleRate" in verification',
    ],
    [
      'verification.enabled as string',
      { ...base, verification: { enabled: 'false' } },
      'InvalidRequest',
      'verification.enabled must be a boolean',
    ],
    [
      'verification.enabled null',
      { ...base, verification: { enabled: null } },
      'InvalidRequest',
      'verification.enabled',
    ],
    [
      'sharding not an object',
      { ...base, sharding: [] },
      'InvalidRequest',
      'sharding must be an object',
    ],
    [
      'shardingEntries missing',
      { ...base, sharding: {} },
      'InvalidRequest',
      'sharding.shardingEntries is required',
    ],
    [
      'sharding unknown field',
      { ...base, sharding: { shardingEntries: [], balancer: false } },
      'InvalidRequest',
      'unknown field "balancer" in sharding',
    ],
    [
      'createSupportingIndexes as string',
      { ...base, sharding: { shardingEntries: [], createSupportingIndexes: 'false' } },
      'InvalidRequest',
      'sharding.createSupportingIndexes must be a boolean',
    ],
    [
      'sharding entry not an object',
      sharding('shop.orders'),
      'InvalidRequest',
      'sharding.shardingEntries must contain only objects',
    ],
    [
      'sharding entry without collection',
      sharding({ database: 'shop', shardCollection: { key: [{ a: 1 }] } }),
      'InvalidRequest',
      'sharding.shardingEntries[0].collection is required',
    ],
    [
      'sharding entry without shardCollection',
      sharding({ database: 'shop', collection: 'c' }),
      'InvalidRequest',
      'sharding.shardingEntries[0].shardCollection is required',
    ],
    [
      'sharding entry unknown field',
      sharding(entry([{ a: 1 }], { unique: true })),
      'InvalidRequest',
      'unknown field "unique" in sharding.shardingEntries[0]',
    ],
    [
      'shardCollection unknown field',
      sharding({ ...entry([{ a: 1 }]), shardCollection: { key: [{ a: 1 }], unique: true } }),
      'InvalidRequest',
      'unknown field "unique" in sharding.shardingEntries[0].shardCollection',
    ],
    [
      'sharding entry bad database',
      sharding(entry([{ a: 1 }], { database: 'a.b' })),
      'InvalidRequest',
      'sharding.shardingEntries[0].database must not contain "."',
    ],
    [
      'sharding entry system database',
      sharding(entry([{ a: 1 }], { database: 'config' })),
      'InvalidRequest',
      '"config" is a system database',
    ],
    [
      'sharding entry bad collection',
      sharding(entry([{ a: 1 }], { collection: 'a$b' })),
      'InvalidRequest',
      'sharding.shardingEntries[0].collection must not contain $',
    ],
    [
      'shard key missing',
      sharding({ ...entry([]), shardCollection: {} }),
      'InvalidRequest',
      'shardCollection.key is required',
    ],
    [
      'shard key not an array',
      sharding(entry({ a: 1 })),
      'InvalidRequest',
      'shardCollection.key must be an array',
    ],
    [
      'shard key empty',
      sharding(entry([])),
      'InvalidRequest',
      'key must contain at least one field',
    ],
    [
      'shard key element with two fields',
      sharding(entry([{ a: 1, b: 1 }])),
      'InvalidRequest',
      'key element [0] must map exactly one field name',
    ],
    ['shard key element with no field', sharding(entry([{}])), 'InvalidRequest', 'it has 0 fields'],
    [
      'shard key element not an object',
      sharding(entry(['a'])),
      'InvalidRequest',
      'key element [0] must be an object',
    ],
    [
      'shard key direction 2',
      sharding(entry([{ a: 2 }])),
      'InvalidRequest',
      'maps "a" to 2; allowed values are 1, -1 and "hashed"',
    ],
    ['shard key direction "1"', sharding(entry([{ a: '1' }])), 'InvalidRequest', 'maps "a" to "1"'],
    [
      'shard key direction "2dsphere"',
      sharding(entry([{ a: '2dsphere' }])),
      'InvalidRequest',
      'allowed values are 1, -1 and "hashed"',
    ],
    [
      'shard key field with $',
      sharding(entry([{ $a: 1 }])),
      'InvalidRequest',
      'must not start with $',
    ],
    [
      'shard key field with empty segment',
      sharding(entry([{ 'a..b': 1 }])),
      'InvalidRequest',
      'empty path segment',
    ],
    [
      'shard key field repeated',
      sharding(entry([{ a: 1 }, { a: -1 }])),
      'InvalidRequest',
      'element [1] repeats field "a"',
    ],
    [
      'shard key with two hashed fields',
      sharding(entry([{ a: 'hashed' }, { b: 'hashed' }])),
      'InvalidRequest',
      'at most one "hashed" field',
    ],
    [
      'collection sharded twice',
      sharding(entry([{ a: 1 }]), entry([{ b: 1 }])),
      'InvalidRequest',
      'sharding.shardingEntries[1] shards shop.orders a second time',
    ],
    [
      '__proto__ key',
      JSON.parse('{"source":"cluster0","destination":"cluster1","__proto__":{"x":1}}'),
      'InvalidRequest',
      'unknown field "__proto__"',
    ],
    [
      'constructor key',
      { ...base, constructor: 1 },
      'InvalidRequest',
      'unknown field "constructor"',
    ],
    [
      'nested toString key',
      include({ database: 'd', toString: 'x' }),
      'InvalidRequest',
      'unknown field "toString" in includeNamespaces[0]',
    ],
    [
      'unknown source cluster',
      { ...base, source: 'cluster9' },
      'UnknownCluster',
      'source "cluster9" is not a configured cluster',
    ],
    [
      'unknown destination cluster',
      { ...base, destination: 'prod' },
      'UnknownCluster',
      'destination "prod"',
    ],
    [
      'same source and destination',
      { ...base, destination: 'cluster0' },
      'SameSourceAndDestination',
      'both "cluster0"',
    ],
    [
      'never with reversible',
      { ...base, buildIndexes: 'never', reversible: true, enableUserWriteBlocking: true },
      'NeverWithReversible',
      'never',
    ],
    [
      'reversible without write blocking',
      { ...base, reversible: true },
      'ReversibleRequiresWriteBlocking',
      'enableUserWriteBlocking',
    ],
  ])('rejects %s', (_name, body, error, text) => {
    const result = failure(body);
    expect(result.error).toBe(error);
    expect(result.message).toContain(text);
  });

  it('lists several problems in one description', () => {
    const { message } = failure({ source: 1, destination: 2, reversible: 'yes' });
    expect(message).toBe(
      'source must be a string naming a configured cluster; destination must be a string naming a configured cluster; reversible must be a boolean (true or false), not the string "yes"',
    );
  });

  it('checks cluster names only when they are known', () => {
    expect(() => validateStartRequest({ source: 'a', destination: 'b' })).not.toThrow();
  });
});
