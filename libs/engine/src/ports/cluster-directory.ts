import type { CoordinationStore } from './coordination-store';
import type { DestinationCluster } from './destination-cluster';
import type { JobStore } from './job-store';
import type { SourceCluster } from './source-cluster';
import type { WatermarkStore } from './watermark-store';

/**
 * The clusters named at launch (`cluster0`, `cluster1`). Any of them may be a source or a
 * destination depending on the start request (and, after reverse, roles swap).
 */
export interface ClusterDirectory {
  names(): string[];
  source(name: string): SourceCluster;
  destination(name: string): DestinationCluster;
  /** The job metadata store kept on that cluster (used when it is the destination). */
  jobStore(name: string): JobStore;
  /** The shared record of a per-shard sync kept on that cluster (when it is the destination). */
  coordination(name: string): CoordinationStore;
  /** A per-shard sync's cluster-time watermarks kept on that cluster (as the destination). */
  watermarks(name: string): WatermarkStore;
  /**
   * One shard of a sharded cluster, connected directly to its replica set (the host
   * `listShards` reports, with the launch connection string's credentials and TLS options):
   * what a per-shard worker reads its documents and change events from.
   */
  shardSource(name: string, shardId: string): Promise<SourceCluster>;
}
