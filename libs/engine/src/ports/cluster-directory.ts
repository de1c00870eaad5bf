import type { CoordinationStore } from './coordination-store';
import type { DestinationCluster } from './destination-cluster';
import type { JobStore } from './job-store';
import type { SourceCluster } from './source-cluster';

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
}
