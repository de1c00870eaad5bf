import type { Document } from 'bson';
import type { Namespace } from './change-event';
import type { WriteOp } from './ports';

/**
 * One step of a document's write plan. `lookup` means: read the document from the source now
 * and make the destination equal to it (replace-upsert, or delete when it is gone). It is the
 * safe fallback for updates whose description cannot be replayed as-is (see update-event.ts).
 */
export type WriteStep =
  | WriteOp
  | { kind: 'lookup'; documentKey: Document }
  /**
   * Per-shard workers only: remove every version of the document (its `_id`) that this worker's
   * shard owns under another shard key than `documentKey`'s — the version this shard held
   * before a shard-key change. Versions owned by other shards are their workers' to change.
   */
  | { kind: 'retire'; documentKey: Document };

/** The destination writes for one CRUD event, in the order they must run. */
export interface DocumentWrite {
  ns: Namespace;
  /** documentIdentity(): routes to a lane and collapses writes of the same document. */
  identity: string;
  /**
   * Steps run one after the other: two steps of one document never share a bulk, because an
   * unordered bulk does not promise order and one update cannot hold conflicting paths.
   */
  steps: WriteStep[];
  /**
   * True when the last step fully determines the document (replace, delete, lookup): earlier
   * pending steps of the same document can then be dropped.
   */
  supersedes: boolean;
  /**
   * Fields of the destination collection's shard key (dotted paths), when it is sharded: a
   * replace-upsert must name them in its filter or mongos cannot target it.
   */
  shardKeyFields?: string[];
  /** The source collection's UUID (hex), for lookups that must read that very collection. */
  collectionUuid?: string;
}
