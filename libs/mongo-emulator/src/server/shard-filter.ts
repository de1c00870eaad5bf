import type { Document } from 'bson';

/**
 * Shard filtering (mongod's ScopedCollectionFilter): a read a router sends to a shard carries
 * the shard version, and the shard then returns only the documents whose shard key falls in a
 * chunk it owns, so orphans (documents left behind or written straight into a shard that does
 * not own their range) never reach a client of the router. A client connected to the shard
 * itself sends no shard version and sees everything, orphans included.
 *
 * In the emulator the router and the shards share a process: the router attaches the
 * ownership test to the command it hands a shard's executor under this symbol, which no
 * command decoded from the wire can carry.
 */
export const SHARD_FILTER: unique symbol = Symbol('emulator.shardFilter');

/** True when the document belongs to a chunk the shard owns. */
export type OwnershipFilter = (doc: Document) => boolean;

/** The ownership filter a router attached to a command, if any. */
export function shardFilterOf(cmd: Document): OwnershipFilter | undefined {
  const f = (cmd as { [SHARD_FILTER]?: unknown })[SHARD_FILTER];
  return typeof f === 'function' ? (f as OwnershipFilter) : undefined;
}

/** A copy of `cmd` carrying `filter`. */
export function withShardFilter(cmd: Document, filter: OwnershipFilter): Document {
  return { ...cmd, [SHARD_FILTER]: filter };
}
