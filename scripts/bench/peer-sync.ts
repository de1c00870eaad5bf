/**
 * The peer side by side: `mongochangestream` syncing collections from the source into the
 * destination with the minimal sink a user would write from its README ("Change Stream
 * Strategies → MongoDB"): the initial scan's batches as unordered insertMany (a duplicate key is
 * a document the change stream wrote first), change events as one unordered bulkWrite per batch
 * (insert → insertOne, update/replace → replaceOne upsert of the looked-up full document,
 * delete → deleteOne). One `initSync` per collection, state in Redis, every collection's scan
 * and change stream running at once. Only the change stream's queue timeout is set (500 ms
 * instead of its 30 s default), as a user who cares about lag would.
 *
 *   node peer-sync.js <sourceUri> <destinationUri> <redisUrl> <db.coll> [<db.coll> …]
 *
 * Runs in its own process (like the worker) and prints JSON lines: `{"started":…}` once every
 * scan and stream is running, `{"scanned":…, "seconds":…, "documents":…}` when every initial
 * scan is done; then it follows the change streams until SIGTERM.
 */
import { Redis } from 'ioredis';
import { initSync } from 'mongochangestream';
import {
  MongoBulkWriteError,
  MongoClient,
  type AnyBulkWriteOperation,
  type ChangeStreamDocument,
  type ChangeStreamInsertDocument,
  type Document,
} from 'mongodb';

const DUPLICATE_KEY = 11000;

const say = (line: object): void => {
  process.stdout.write(`${JSON.stringify(line)}\n`);
};

/** A write whose only errors are duplicate keys went through (the document is there). */
function ignoreDuplicates(error: unknown): void {
  if (error instanceof MongoBulkWriteError) {
    const errors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
    if (errors.length > 0 && errors.every((e) => e.code === DUPLICATE_KEY)) return;
  }
  throw error;
}

async function main(): Promise<void> {
  const [sourceUri, destinationUri, redisUrl, ...namespaces] = process.argv.slice(2);
  if (!sourceUri || !destinationUri || !redisUrl || namespaces.length === 0) {
    throw new Error('usage: peer-sync <sourceUri> <destinationUri> <redisUrl> <db.coll>…');
  }
  const source = await MongoClient.connect(sourceUri);
  const destination = await MongoClient.connect(destinationUri);
  const redis = new Redis(redisUrl);
  let documents = 0;
  const stops: Array<() => Promise<void>> = [];
  const scans: Array<Promise<void>> = [];
  const started = Date.now();
  for (const ns of namespaces) {
    const dot = ns.indexOf('.');
    const [db, coll] = [ns.slice(0, dot), ns.slice(dot + 1)];
    const target = destination.db(db).collection(coll);
    const sync = initSync(redis, source.db(db).collection(coll));
    const processScan = async (docs: ChangeStreamInsertDocument[]): Promise<void> => {
      await target
        .insertMany(
          docs.map((d) => d.fullDocument),
          { ordered: false },
        )
        .catch(ignoreDuplicates);
      documents += docs.length;
    };
    const processChanges = async (events: ChangeStreamDocument[]): Promise<void> => {
      const ops: AnyBulkWriteOperation<Document>[] = [];
      for (const e of events) {
        if (e.operationType === 'insert') ops.push({ insertOne: { document: e.fullDocument } });
        else if (e.operationType === 'update' || e.operationType === 'replace') {
          if (e.fullDocument)
            ops.push({
              replaceOne: {
                filter: { _id: e.documentKey._id },
                replacement: e.fullDocument,
                upsert: true,
              },
            });
        } else if (e.operationType === 'delete')
          ops.push({ deleteOne: { filter: { _id: e.documentKey._id } } });
      }
      if (ops.length) await target.bulkWrite(ops, { ordered: false }).catch(ignoreDuplicates);
    };
    // The dataset's `_id`s are Int64 (numbers once promoted): the scan's resume key says so.
    const scan = await sync.runInitialScan(processScan, {
      sortField: { field: '_id', serialize: String, deserialize: Number },
    });
    const stream = await sync.processChangeStream(processChanges, { timeout: 500 });
    void stream.start();
    scans.push(scan.start());
    stops.push(scan.stop, stream.stop);
  }
  say({ started: Date.now() });
  await Promise.all(scans);
  say({ scanned: Date.now(), seconds: (Date.now() - started) / 1000, documents });
  const shutdown = async (): Promise<void> => {
    await Promise.all(stops.map((stop) => stop().catch(() => undefined)));
    redis.disconnect();
    await Promise.all([source.close(), destination.close()]);
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown());
  process.once('SIGINT', () => void shutdown());
}

main().catch((error: unknown) => {
  process.stderr.write(
    `peer-sync failed: ${error instanceof Error ? error.stack : String(error)}\n`,
  );
  process.exit(1);
});
