import { ObjectId, type Document } from 'bson';
import { CommandError } from '../../errors';
import type { CollectionEntry } from '../metadata';
import type { MongosRouter } from '../router';
import { chunkFor, compareKeys, shardKeyOf, versionOf } from '../targeting';
import { isDocument } from './util';
import type { RouterCommandDefinition } from './types';

/** split {middle} / {find} (median of the chunk's documents). */
export const splitCommand: RouterCommandDefinition = {
  name: 'split',
  async run({ router, body, conn, db }) {
    router.requireAdmin('split', db);
    router.checkAuth(conn, 'split', db, [{ target: 'cluster', action: 'anyAdminCommand' }]);
    const entry = router.shardedCollection(body, 'split');
    const chunks = router.metadata.chunksOf(entry).sort((a, b) => compareKeys(a.min, b.min));
    let middle: Document | undefined;
    if (isDocument(body.middle)) middle = body.middle;
    else if (isDocument(body.find)) {
      const chunk = chunkFor(chunks, shardKeyOf(body.find, entry.key));
      const docs = await chunkDocuments(router, entry, chunk.shard);
      const keys = docs
        .map((d) => shardKeyOf(d, entry.key))
        .filter((k) => compareKeys(chunk.min, k) <= 0 && compareKeys(k, chunk.max) < 0)
        .sort(compareKeys);
      if (keys.length < 2)
        throw new CommandError('CommandFailed', `chunk has too few documents to split`);
      middle = keys[Math.floor(keys.length / 2)];
    } else {
      throw new CommandError('InvalidOptions', 'need to specify find or middle');
    }
    if (Object.keys(middle).join() !== Object.keys(entry.key).join())
      throw new CommandError(
        'InvalidOptions',
        `split point ${JSON.stringify(middle)} does not match the shard key ${JSON.stringify(entry.key)}`,
      );
    const chunk = chunkFor(chunks, middle);
    if (compareKeys(chunk.min, middle) === 0)
      throw new CommandError('InvalidOptions', `cannot split chunk at its lower bound`);
    const major = Math.max(...chunks.map((c) => c.lastmod.t));
    const minor = Math.max(...chunks.filter((c) => c.lastmod.t === major).map((c) => c.lastmod.i));
    const upper = {
      ...chunk,
      _id: new ObjectId(),
      min: middle,
      lastmod: versionOf(major, minor + 2),
      history: chunk.history.map((h) => ({ ...h })),
    };
    chunk.max = middle;
    chunk.lastmod = versionOf(major, minor + 1);
    router.metadata.chunks.push(upper);
    return router.local({ ok: 1 });
  },
};

async function chunkDocuments(
  router: MongosRouter,
  entry: CollectionEntry,
  shardId: string,
): Promise<Document[]> {
  const [db, ...rest] = entry._id.split('.');
  const coll = router.metadata.shard(shardId).rs.node.catalog.getCollection(db, rest.join('.'));
  return coll ? [...coll.records.values()].map((r) => r.doc) : [];
}
