import type { JobSession } from '../job/job-session';
import { copyOf, type CopyStatus } from '../catalog/namespace-catalog';
import type { NamespaceRecord } from '../ports/job-store';

export interface NamespaceProgress {
  namespace: string;
  /** Source collection UUID (hex); absent for views. */
  uuid?: string;
  type: 'collection' | 'view';
  /**
   * `pending` (not partitioned yet), `copying`, `copied`, `verified` (copied, and the
   * verifier's live pass found it equal on both sides), or `created` (a view, or a collection
   * created by a change event: nothing to copy).
   */
  state: 'pending' | 'copying' | 'copied' | 'verified' | 'created';
  estimatedBytes: number;
  copiedBytes: number;
  partitions: { total: number; done: number };
  shardKey?: Record<string, unknown>;
}

/**
 * Whether a namespace's documents are all on the destination, given its copy status as of the
 * job's phase (copyOf): copied, or every partition of its set done (the initial copy's
 * namespaces count as copied once the job's phase is `copied`; until then progress counts them
 * by their partitions, so it moves while a copy of many small collections runs).
 */
export function isCopied(copy: CopyStatus, partitions: ReadonlyArray<{ status: string }>): boolean {
  if (copy !== 'pending') return true;
  return partitions.length > 0 && partitions.every((p) => p.status === 'done');
}

/** One entry per namespace of the catalog (GET /progress?detail=namespaces). */
export function namespaceDetail(
  session: JobSession,
  /** Found equal on both sides by the live verifier (per namespace). */
  verified: (record: NamespaceRecord) => boolean = () => false,
): NamespaceProgress[] {
  return session.catalog.records.map((record) => {
    const partitions = session.partitionsOf(record.key);
    const done = partitions.filter((p) => p.status === 'done');
    const copiedBytes =
      done.reduce((sum, p) => sum + p.copiedBytes, 0) +
      partitions
        .filter((p) => p.status !== 'done')
        .reduce((sum, p) => sum + session.tally.inFlightBytes(p._id), 0);
    const state: NamespaceProgress['state'] =
      record.copy === 'none'
        ? 'created'
        : isCopied(copyOf(record, session.job.phase), partitions)
          ? verified(record)
            ? 'verified'
            : 'copied'
          : record.partitionSet === undefined
            ? 'pending'
            : 'copying';
    return {
      namespace: `${record.database}.${record.collection}`,
      ...(record.type === 'collection' && /^[0-9a-f]{32}$/.test(record.key)
        ? { uuid: record.key }
        : {}),
      type: record.type,
      state,
      estimatedBytes: record.estimatedBytes,
      copiedBytes,
      partitions: { total: partitions.length, done: done.length },
      ...(record.shardKey ? { shardKey: record.shardKey.key } : {}),
    };
  });
}
