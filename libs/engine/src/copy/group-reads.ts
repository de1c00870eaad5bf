import type { Timestamp } from 'bson';
import type { EngineLogger } from '../ports/engine-logger';
import type { PartitionRecord } from '../ports/job-store';
import type { SourceCluster } from '../ports/source-cluster';

/** A partition's collection, as the copy resolves it (the fields a group read needs). */
export interface GroupableTarget {
  source: { db: string; coll: string };
  uuid?: string;
  estimatedBytes?: number;
  /** A plain collection this worker copies whole (no view, no time series, no shard filter). */
  whole?: boolean;
}

export interface GroupReadOptions {
  /** Collections read together at most (default 64). */
  collections: number;
  /** A collection estimated at most this is read with others (default 256 KiB). */
  memberBytes: number;
  /** Estimated bytes of one group at most (default 4 MiB). */
  groupBytes: number;
  /** A group read that brings more than this is dropped: each is read alone (default 8 MiB). */
  maxBytes: number;
}

export const DEFAULT_GROUP_READS: GroupReadOptions = {
  collections: 64,
  memberBytes: 256 * 1024,
  groupBytes: 4 * 1024 * 1024,
  maxBytes: 8 * 1024 * 1024,
};

interface Group {
  database: string;
  members: Array<{ id: string; collection: string; uuid: string | undefined }>;
  next: Group | null;
  /** By partition id: the documents read (taken once), or null (read alone). */
  result: Promise<Map<string, Uint8Array[]>> | null;
}

/**
 * Many small collections copied with one source read per group instead of one per collection
 * (`SourceCluster.readWholeMany`): at 20,000 collections of two documents, the per-collection
 * `find` was a source command per namespace, and with the worker's own handling of it, the
 * larger part of the copy's cost. Consecutive partitions that are whole small plain collections
 * of one database form a group; the first copy lane to reach a group reads it (and starts the
 * next group's read, so lanes do not wait on each read in turn); every lane then takes its
 * partition's documents and writes them as it writes any partition's.
 *
 * What a group read cannot vouch for is read alone as before: a collection whose name had
 * another UUID after the read (replaced around it), a group whose read failed or brought more
 * than `maxBytes`. Documents held here are at most two groups' (`maxBytes` each).
 */
export class GroupReads {
  /** Partitions of planned groups not taken yet (at most a group or two ahead of the lanes). */
  private readonly groups = new Map<string, Group>();
  /** Queue positions looked at so far: groups are planned as the lanes reach them. */
  private planned = 0;
  /** The group planned last (its successor is planned when it is read). */
  private last: Group | null = null;

  constructor(
    private readonly source: SourceCluster,
    /** The copy's queue, in the order its lanes take it. */
    private readonly queue: readonly PartitionRecord[],
    private readonly resolve: (partition: PartitionRecord) => GroupableTarget,
    private readonly logger: EngineLogger,
    private readonly afterClusterTime: Timestamp | undefined,
    private readonly options: GroupReadOptions = DEFAULT_GROUP_READS,
  ) {}

  /**
   * The documents of the partition at `index` of the queue, read with its group, taken once;
   * null: read it alone (not groupable, already taken, or its group could not vouch for it).
   */
  async take(
    partition: PartitionRecord,
    index: number,
    signal: AbortSignal,
  ): Promise<Uint8Array[] | null> {
    if (!this.source.readWholeMany) return null;
    while (this.planned <= index && this.planNext()) {
      // planned up to the lanes' position
    }
    const group = this.groups.get(partition._id);
    if (!group) return null;
    this.groups.delete(partition._id);
    group.result ??= this.read(group, signal);
    const read = await group.result;
    // The next group is read while this one is written.
    if (group === this.last) this.planNext();
    if (group.next && !signal.aborted) group.next.result ??= this.read(group.next, signal);
    const documents = read.get(partition._id) ?? null;
    read.delete(partition._id);
    return documents;
  }

  /**
   * Plans the next group of at least two collections from the queue's unplanned positions: it
   * starts at the first groupable partition and takes the next groupable ones of the same
   * database within the count and bytes (others between them are left to be read alone). False
   * at the end of the queue.
   */
  private planNext(): boolean {
    const { options } = this;
    while (this.planned < this.queue.length) {
      let group: Group | null = null;
      let bytes = 0;
      while (this.planned < this.queue.length) {
        const partition = this.queue[this.planned]!;
        const target = this.resolve(partition);
        const estimate = target.estimatedBytes;
        const groupable =
          target.whole === true &&
          partition.status !== 'done' &&
          !partition.natural &&
          !('min' in partition) &&
          !('max' in partition) &&
          estimate !== undefined &&
          estimate <= options.memberBytes;
        if (groupable && group) {
          const full =
            group.database !== target.source.db ||
            group.members.length >= options.collections ||
            bytes + estimate > options.groupBytes;
          if (full) break; // this one starts the next group
        }
        this.planned += 1;
        if (!groupable) continue;
        group ??= { database: target.source.db, members: [], next: null, result: null };
        group.members.push({
          id: partition._id,
          collection: target.source.coll,
          uuid: target.uuid,
        });
        bytes += estimate;
      }
      // A group of one saves nothing: that partition is read alone.
      if (!group || group.members.length < 2) continue;
      for (const member of group.members) this.groups.set(member.id, group);
      if (this.last) this.last.next = group;
      this.last = group;
      return true;
    }
    return false;
  }

  private async read(group: Group, signal: AbortSignal): Promise<Map<string, Uint8Array[]>> {
    const found = new Map<string, Uint8Array[]>();
    try {
      const read = await this.source.readWholeMany!(
        group.database,
        group.members.map((m) => m.collection),
        {
          maxBytes: this.options.maxBytes,
          signal,
          ...(this.afterClusterTime ? { afterClusterTime: this.afterClusterTime } : {}),
        },
      );
      if (!read) {
        this.logger.debug('collections read together brought more than expected; reading each', {
          database: group.database,
          collections: group.members.length,
        });
        return found;
      }
      group.members.forEach((member, i) => {
        const uuid = read.uuids[i];
        // Without an expected UUID only a collection that is still there is vouched for.
        if (uuid === null || (member.uuid !== undefined && uuid !== member.uuid)) return;
        found.set(member.id, read.documents[i]!);
      });
    } catch (error) {
      if (!signal.aborted) {
        this.logger.debug('collections could not be read together; reading each', {
          database: group.database,
          collections: group.members.length,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
    return found;
  }
}
