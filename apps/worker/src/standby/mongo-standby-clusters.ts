import type { SyncState } from '@sync/contracts';
import { INTERNAL_DATABASE } from '@sync/engine';
import { MongoCoordinationStore } from '@sync/mongo/mongo-coordination-store';
import { MongoClient } from 'mongodb';
import type { StandbyCluster } from './standby-engine';

/**
 * A standby's view of every configured cluster: the shard claims (`workers`) and the job's state
 * (`jobs`), read through its own clients (connected lazily, closed once it took over). The
 * takeover itself is the claim's atomic write (MongoCoordinationStore.takeOver), which matches
 * nothing while the active worker renews its claim.
 */
export function mongoStandbyClusters(
  clusters: Record<string, string>,
  shardId: string,
): { clusters: StandbyCluster[]; close: () => Promise<void> } {
  const clients = Object.entries(clusters).map(
    ([name, uri]) => [name, new MongoClient(uri, { serverSelectionTimeoutMS: 10_000 })] as const,
  );
  return {
    clusters: clients.map(([name, client]) => ({
      name,
      store: new MongoCoordinationStore(client),
      jobState: async () => {
        const job = await client
          .db(INTERNAL_DATABASE)
          .collection('jobs')
          .findOne({ _id: shardId as never }, { projection: { state: 1 } });
        return typeof job?.state === 'string' ? (job.state as SyncState) : null;
      },
    })),
    close: async () => {
      await Promise.all(clients.map(([, client]) => client.close().catch(() => undefined)));
    },
  };
}
