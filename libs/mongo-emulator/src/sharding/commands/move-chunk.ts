import type { Document } from 'bson';
import { CommandError } from '../../errors';
import { chunkFor, compareKeys, shardKeyOf } from '../targeting';
import { isDocument } from './util';
import type { RouterCommandContext, RouterCommandDefinition } from './types';

/** moveChunk {find | bounds, to} and moveRange {min, toShard}: really moves the documents. */
function moveChunk({ router, body, conn, db, name }: RouterCommandContext) {
  router.requireAdmin(name, db);
  router.checkAuth(conn, name, db, [{ target: 'cluster', action: 'anyAdminCommand' }]);
  const entry = router.shardedCollection(body, name);
  const to = name === 'moveRange' ? body.toShard : body.to;
  if (typeof to !== 'string')
    throw new CommandError(
      'InvalidOptions',
      `${name === 'moveRange' ? 'toShard' : 'to'} must be specified`,
    );
  if (!router.shards.some((s) => s.id === to))
    throw new CommandError('ShardNotFound', `Shard ${to} not found`);
  const chunks = router.metadata.chunksOf(entry).sort((a, b) => compareKeys(a.min, b.min));
  let chunk;
  if (name === 'moveRange') {
    if (!isDocument(body.min)) throw new CommandError('InvalidOptions', 'min must be specified');
    chunk = chunkFor(chunks, body.min);
    if (compareKeys(chunk.min, body.min) !== 0)
      throw new CommandError(
        'InvalidOptions',
        'moveRange is only supported for whole chunks by the MongoDB emulator',
      );
  } else if (isDocument(body.find)) {
    chunk = chunkFor(chunks, shardKeyOf(body.find, entry.key));
  } else if (Array.isArray(body.bounds) && isDocument(body.bounds[0])) {
    chunk = chunks.find((c) => compareKeys(c.min, body.bounds[0] as Document) === 0);
    if (!chunk)
      throw new CommandError('InvalidOptions', 'no chunk found with the shard key bounds');
  } else {
    throw new CommandError('InvalidOptions', 'need to specify find or bounds');
  }
  if (entry.permitMigrations === false)
    throw new CommandError(
      'ConflictingOperationInProgress',
      'Collection is undergoing changes so moveChunk is not allowed.',
    );
  if (chunk.shard !== to) {
    // MigrationSourceManager logs moveChunk.start, then moveChunk.commit with the
    // recipient's clone counts, on the donor shard.
    const donor = router.metadata.shard(chunk.shard);
    const range = { min: chunk.min, max: chunk.max, from: chunk.shard, to };
    router.metadata.logChange(
      'moveChunk.start',
      entry._id,
      { ...range },
      donor,
      conn.remoteAddress,
    );
    const counts = router.ops.moveRange(entry, chunk.min, to);
    router.metadata.logChange(
      'moveChunk.commit',
      entry._id,
      { ...range, counts },
      donor,
      conn.remoteAddress,
    );
  }
  return router.local(name === 'moveChunk' ? { millis: 0, ok: 1 } : { ok: 1 });
}

export const moveChunkCommand: RouterCommandDefinition = { name: 'moveChunk', run: moveChunk };
export const moveRangeCommand: RouterCommandDefinition = { name: 'moveRange', run: moveChunk };
