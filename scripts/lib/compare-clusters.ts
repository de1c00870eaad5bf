import {
  compareClusters as compareThroughPorts,
  type CompareOptions,
  type ComparisonReport,
} from '@sync/engine';
import { MongoSourceCluster } from '@sync/mongo';
import type { MongoClient } from 'mongodb';

export type { ClusterDifference, CompareOptions, ComparisonReport } from '@sync/engine';

/**
 * The engine's cluster comparison (libs/engine/src/verify) over two driver clients: collection
 * types and options, every document as BSON bytes in `_id` order, and indexes.
 */
export function compareClusters(
  source: MongoClient,
  destination: MongoClient,
  options: CompareOptions = {},
): Promise<ComparisonReport> {
  return compareThroughPorts(
    new MongoSourceCluster(source, 'source'),
    new MongoSourceCluster(destination, 'destination'),
    options,
  );
}
