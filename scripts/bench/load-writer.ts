/**
 * One writer process of the change load (change-load.ts): its own connection and its own share
 * of the mix (its own `_id` range for inserts, so writers never collide; deletes only of what
 * it inserted itself), so the load generator is not one process's CPU and one client's pool.
 *
 * Driven over IPC by the bench: `{init}` once, then `{issue: n, tag}` → `{tag, inserts,
 * updates, deletes}` when the writes are acknowledged (or `{tag, error}`). Exits with its
 * parent.
 */
import { MongoClient } from 'mongodb';
import { MixPlanner } from './change-mix';
import type { DatasetSpec } from './dataset';

export interface WriterInit {
  init: { uri: string; spec: DatasetSpec; seed: number; idBase: number };
}
export interface WriterIssue {
  issue: number;
  tag: number;
}
export interface WriterDone {
  tag: number;
  inserts?: number;
  updates?: number;
  deletes?: number;
  error?: string;
}

let client: MongoClient | null = null;
let planner: MixPlanner | null = null;
let database = '';

const send = (message: WriterDone | { ready: true }): void => {
  process.send?.(message);
};

async function issue(count: number, tag: number): Promise<void> {
  try {
    const batches = planner!.plan(count);
    const db = client!.db(database);
    await Promise.all(
      batches.map((b) => db.collection(b.collection).bulkWrite(b.ops, { ordered: false })),
    );
    const done = { tag, inserts: 0, updates: 0, deletes: 0 };
    for (const b of batches) {
      planner!.acknowledge(b);
      done.inserts += b.inserts;
      done.updates += b.updates;
      done.deletes += b.deletes;
    }
    send(done);
  } catch (error) {
    send({ tag, error: error instanceof Error ? error.message : String(error) });
  }
}

process.on('message', (message: WriterInit | WriterIssue) => {
  if ('init' in message) {
    const { uri, spec, seed, idBase } = message.init;
    database = spec.database;
    planner = new MixPlanner(spec, seed, idBase);
    void MongoClient.connect(uri).then((c) => {
      client = c;
      send({ ready: true });
    });
  } else {
    void issue(message.issue, message.tag);
  }
});
process.on('disconnect', () => {
  void client?.close().finally(() => process.exit(0));
});
