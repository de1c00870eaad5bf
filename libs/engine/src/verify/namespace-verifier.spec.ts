import { Int32 } from 'bson';
import type { CollectionInfo } from '../ports/source-cluster';
import { checkMetadata, ListingCache, type VerifiableCluster } from './namespace-verifier';

/** A side whose one database lists `names` (options differ where `optionsOf` says). */
function side(names: string[], optionsOf: (name: string) => object = () => ({})) {
  const calls = { listCollections: 0 };
  const cluster = {
    listCollections: async (): Promise<CollectionInfo[]> => {
      calls.listCollections += 1;
      return names.map((name) => ({ name, type: 'collection', options: optionsOf(name) }));
    },
    listIndexes: async () => [{ v: new Int32(2), key: { _id: new Int32(1) }, name: '_id_' }],
  } as unknown as VerifiableCluster;
  return { cluster, calls };
}

describe('checkMetadata over many collections of one database', () => {
  it('lists each side once per pass and finds every collection by name', async () => {
    const names = Array.from({ length: 3_000 }, (_, i) => `tenant${i}`);
    const source = side(names, (name) => (name === 'tenant7' ? { capped: true } : {}));
    // The destination lacks one collection and has one extra.
    const destination = side([...names.filter((n) => n !== 'tenant42'), 'extra']);
    const listings = new ListingCache();
    const problems = new Map<string, string[]>();
    for (const collection of names) {
      const found = await checkMetadata(
        source.cluster,
        destination.cluster,
        { database: 'app', collection, type: 'collection', ranges: [{}] },
        { compareUnique: true, listings },
      );
      if (found.length > 0) problems.set(collection, found);
    }
    expect(Object.fromEntries(problems)).toEqual({
      tenant7: ['collection options differ'],
      tenant42: ['missing on destination'],
    });
    expect([source.calls.listCollections, destination.calls.listCollections]).toEqual([1, 1]);
  });

  it('ListingCache.find answers undefined for a name the database does not list', async () => {
    const { cluster, calls } = side(['a', 'b']);
    const listings = new ListingCache();
    expect((await listings.find(cluster, 'source', 'app', 'b'))?.name).toBe('b');
    expect(await listings.find(cluster, 'source', 'app', 'c')).toBeUndefined();
    // Another side or database is another listing.
    await listings.find(cluster, 'destination', 'app', 'a');
    await listings.find(cluster, 'source', 'other', 'a');
    expect(calls.listCollections).toBe(3);
  });
});
