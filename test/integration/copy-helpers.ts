import { EXACT_BSON } from '@sync/mongo';
import { createSyncEngine } from '../../apps/worker/src/composition/create-sync-engine';
import { silentLogger, type SyncJob } from '@sync/engine';
import type { StartRequest } from '@sync/contracts';
import { BSON, type Document } from 'bson';
import type { MongoClient } from 'mongodb';

export const baseRequest: StartRequest = {
  source: 'cluster0',
  destination: 'cluster1',
  buildIndexes: 'beforeDataCopy',
  enableUserWriteBlocking: false,
  reversible: false,
};

/** Runs a sync until its copy is done; small partitions so that ranges really are exercised. */
export async function copyWith(
  sourceUri: string,
  destinationUri: string,
  request: StartRequest,
): Promise<SyncJob> {
  const engine = await createSyncEngine({
    clusters: { cluster0: sourceUri, cluster1: destinationUri },
    logger: silentLogger,
    engine: {
      partitioning: { targetBytes: 16 * 1024, maxPartitions: 16, oversampling: 8 },
      copier: {
        concurrency: 4,
        readBatchSize: 200,
        writeBatchDocuments: 300,
        writeBatchBytes: 256 * 1024,
      },
    },
  });
  await engine.ready;
  await engine.start(request);
  const job = engine as unknown as SyncJob;
  // Change application keeps RUNNING busy forever: the copy is done once info moves on.
  await waitFor(() => job.progress().info === 'change event application', 30_000);
  return job;
}

/** Polls `predicate` (sync or async) until it holds. */
export async function waitFor(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
  what = 'condition',
  /** Describes the state at a timeout (e.g. the last progress snapshot). */
  describe?: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${describe ? `; last: ${describe()}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function userNamespaces(client: MongoClient): Promise<string[]> {
  const { databases } = await client.db('admin').admin().listDatabases({ nameOnly: true });
  const out: string[] = [];
  for (const { name } of databases) {
    if (['admin', 'config', 'local', 'sync_reserved_for_internal_use'].includes(name)) continue;
    for (const c of await client.db(name).listCollections({}, { nameOnly: true }).toArray()) {
      if (!c.name.startsWith('system.')) out.push(`${name}.${c.name}`);
    }
  }
  return out.sort();
}

/** Every document as exact serialized bytes, in `_id` order (natural order for capped). */
export async function documentBytes(
  client: MongoClient,
  db: string,
  coll: string,
  natural = false,
): Promise<string[]> {
  const docs: Document[] = await client
    .db(db)
    .collection(coll)
    .find({}, { ...EXACT_BSON, sort: natural ? { $natural: 1 } : { _id: 1 } })
    .toArray();
  return docs.map((d) => Buffer.from(BSON.serialize(d)).toString('hex'));
}

/**
 * One short line per progress snapshot for a timeout's message — state, commit step, what it
 * waits for, its failure — so a truncated CI log still shows where a worker stands.
 */
export function describeProgress(snapshots: Array<Record<string, unknown>>): string {
  const keep = (value: unknown): unknown =>
    typeof value === 'string' && value.length > 240 ? `${value.slice(0, 240)}…` : value;
  return snapshots
    .map((p) => {
      const fields: Record<string, unknown> = {
        syncID: p.syncID,
        state: p.state,
        canCommit: p.canCommit,
        info: keep(p.info),
        lag: p.lagTimeSeconds,
        events: p.totalEventsApplied,
      };
      for (const [key, value] of Object.entries(p))
        if (/commit|waiting|error|fail/i.test(key) && key !== 'canCommit') fields[key] = value;
      return JSON.stringify(fields, (_, v: unknown) => keep(v));
    })
    .join(' | ');
}
