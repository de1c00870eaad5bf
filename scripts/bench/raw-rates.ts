import { BSON, type MongoClient } from 'mongodb';
import { DEFAULT_COPIER } from '@sync/engine';
import { MongoDestinationCluster, MongoSourceCluster } from '@sync/mongo';
import { batchesOf, collectionName, inLanes, secondsSince, type DatasetSpec } from './dataset';
import { cpuSince, cpuWindows, type CpuMark, type CpuParts } from './cpu-budget';

export interface Rate {
  documents: number;
  bytes: number;
  seconds: number;
  docsPerSec: number;
  mbPerSec: number;
}

export function rate(documents: number, bytes: number, seconds: number): Rate {
  return {
    documents,
    bytes,
    seconds,
    docsPerSec: seconds > 0 ? documents / seconds : 0,
    mbPerSec: seconds > 0 ? bytes / 1e6 / seconds : 0,
  };
}

export interface ScanResult extends Rate {
  /** Collections scanned at the same time in the best attempt. */
  concurrency: number;
  /** CPU per document of the best attempt: the source emulator and the reading bench process. */
  cpuMicrosPerDoc: CpuMark;
  attempts: Array<{ concurrency: number; docsPerSec: number }>;
}

/**
 * (a) The source's raw scan rate: driver `find({})` over every collection with large batches,
 * `raw: true` (as the worker's reader: documents stay BSON buffers, nothing is re-encoded).
 * Tried one collection at a time and several at once; the best attempt is the limit.
 */
export async function measureScan(
  client: MongoClient,
  spec: DatasetSpec,
  concurrencies: number[],
  /** The processes whose CPU is accounted (the source emulator). */
  parts: CpuParts = {},
  batchSize = 10_000,
): Promise<ScanResult> {
  const attempts: ScanResult['attempts'] = [];
  let best: ScanResult | null = null;
  for (const concurrency of concurrencies) {
    let documents = 0;
    let bytes = 0;
    const started = process.hrtime.bigint();
    const cpu = cpuSince(parts);
    await inLanes(spec.collections, concurrency, async (k) => {
      const name = collectionName(k);
      const cursor = client.db(spec.database).collection(name).find({}, { raw: true, batchSize });
      for await (const doc of cursor as AsyncIterable<unknown>) {
        documents += 1;
        bytes += (doc as Uint8Array).byteLength;
      }
    });
    const result = {
      ...rate(documents, bytes, secondsSince(started)),
      concurrency,
      attempts,
      cpuMicrosPerDoc: cpu(documents),
    };
    attempts.push({ concurrency, docsPerSec: Math.round(result.docsPerSec) });
    if (!best || result.docsPerSec > best.docsPerSec) best = result;
  }
  return best!;
}

export interface WriteResult extends Rate {
  concurrency: number;
  batchSize: number;
  /** The probes that chose the concurrency and batch size (a sample of the documents each). */
  probes: Array<{ concurrency: number; batchSize: number; docsPerSec: number }>;
  /**
   * CPU per document of the full write while it sends (writeRangeRaw): the destination emulator,
   * and the bench process as `bench` (what the writing client alone costs).
   */
  cpuMicrosPerDoc: CpuMark;
}

/**
 * (b) The destination's raw write rate: the same documents (same generator, same `_id`s) encoded
 * ahead and sent as they are, unordered (`writeRangeRaw`), into a scratch database on the
 * destination. A short probe over
 * concurrency × batch size picks the best setting; then the whole dataset is written with it.
 * The scratch database is dropped afterwards (unless `keepScratch`).
 */
export async function measureWrite(
  client: MongoClient,
  scratchDatabase: string,
  spec: DatasetSpec,
  datasetBytes: number,
  grid: { concurrencies: number[]; batchSizes: number[]; probeDocuments: number },
  /** Leave the dataset in the scratch database (the caller measures more on it, then drops it). */
  keepScratch = false,
  /** The processes whose CPU is accounted (the destination emulator). */
  parts: CpuParts = {},
): Promise<WriteResult> {
  const probes: WriteResult['probes'] = [];
  let best = { concurrency: grid.concurrencies[0]!, batchSize: grid.batchSizes[0]!, docsPerSec: 0 };
  const probeCount = Math.min(spec.documents, grid.probeDocuments);
  if (grid.concurrencies.length * grid.batchSizes.length > 1) {
    for (const batchSize of grid.batchSizes) {
      for (const concurrency of grid.concurrencies) {
        await client.db(scratchDatabase).dropDatabase();
        const r = await writeRangeRaw(client, scratchDatabase, spec, 0, probeCount, {
          batchSize,
          concurrency,
        });
        const docsPerSec = r.documents / r.seconds;
        probes.push({ concurrency, batchSize, docsPerSec: Math.round(docsPerSec) });
        if (docsPerSec > best.docsPerSec) best = { concurrency, batchSize, docsPerSec };
      }
    }
  }
  await client.db(scratchDatabase).dropDatabase();
  const r = await writeRangeRaw(client, scratchDatabase, spec, 0, spec.documents, best, parts);
  const cpuMicrosPerDoc = r.cpuMicrosPerDoc;
  if (!keepScratch) await client.db(scratchDatabase).dropDatabase();
  return {
    ...rate(r.documents, datasetBytes, r.seconds),
    concurrency: best.concurrency,
    batchSize: best.batchSize,
    probes,
    cpuMicrosPerDoc,
  };
}

/** Documents encoded ahead of each timed window of the raw write (~32 MB at 1 KB). */
const RAW_WRITE_WINDOW = 32_000;

/**
 * The destination's own write rate for documents `from`..`to`: each window's documents are
 * generated and encoded to BSON first (untimed), then sent as they are (an OP_MSG document
 * sequence, `insertRawUnordered`, unordered) on `concurrency` lanes of `batchSize` documents.
 * Only the sending is timed, and only its CPU counted: the figure is what the destination takes,
 * not what this process spends building JavaScript documents (an `insertMany` of generated
 * documents measured the bench's own client once the destination got faster than it).
 */
export async function writeRangeRaw(
  client: MongoClient,
  database: string,
  spec: DatasetSpec,
  from: number,
  to: number,
  options: { batchSize: number; concurrency: number },
  parts: CpuParts = {},
): Promise<{ documents: number; bytes: number; seconds: number; cpuMicrosPerDoc: CpuMark }> {
  const writer = new MongoDestinationCluster(client, 'bench-destination');
  const cpu = cpuWindows(parts);
  let documents = 0;
  let bytes = 0;
  let seconds = 0;
  for (let start = from; start < to; start += RAW_WRITE_WINDOW) {
    const end = Math.min(to, start + RAW_WRITE_WINDOW);
    const batches = [...batchesOf(spec, start, end, options.batchSize)].map((b) => ({
      collection: b.collection,
      documents: b.documents.map((d) => BSON.serialize(d)),
      bytes: b.bytes,
    }));
    cpu.open();
    const started = process.hrtime.bigint();
    await inLanes(batches.length, options.concurrency, async (i) => {
      const batch = batches[i]!;
      await writer.insertRawUnordered(database, batch.collection, batch.documents);
      documents += batch.documents.length;
      bytes += batch.bytes;
    });
    seconds += secondsSince(started);
    cpu.close();
  }
  return { documents, bytes, seconds, cpuMicrosPerDoc: cpu.perUnit(documents) };
}

export interface BareCopyResult extends Rate {
  collections: number;
  /** CPU per document: the emulators, and this process as `bench` (the client's own cost). */
  cpuMicrosPerDoc: CpuMark;
}

/**
 * (a+b) The bare copy: collections read raw and written raw exactly as the worker's copy does
 * it — the driver adapters' `readRaw` (documents stay BSON bytes) and `insertRawUnordered` (the
 * bytes sent as an OP_MSG document sequence), batches of the copy's default size — with no
 * engine in between: no partitions, marks, progress or verification. Its client CPU per document
 * is the floor of the worker's technique on the official driver; what the worker spends above
 * it is the engine's. Up to `maxDocuments` (whole collections), into `scratchDatabase`, which is
 * dropped afterwards.
 */
export async function measureBareCopy(
  sourceClient: MongoClient,
  destinationClient: MongoClient,
  scratchDatabase: string,
  spec: DatasetSpec,
  maxDocuments: number,
  parts: CpuParts = {},
): Promise<BareCopyResult> {
  const reader = new MongoSourceCluster(sourceClient, 'bench-source');
  const writer = new MongoDestinationCluster(destinationClient, 'bench-destination');
  const perCollection = spec.documents / spec.collections;
  const collections = Math.max(
    1,
    Math.min(spec.collections, Math.floor(maxDocuments / Math.max(1, perCollection))),
  );
  await destinationClient.db(scratchDatabase).dropDatabase();
  let documents = 0;
  let bytes = 0;
  const started = process.hrtime.bigint();
  const cpu = cpuSince(parts);
  await inLanes(collections, DEFAULT_COPIER.concurrency, async (k) => {
    const name = collectionName(k);
    const read = reader.readRaw(spec.database, name, {
      range: {},
      batchSize: DEFAULT_COPIER.readBatchSize,
      maxBatchBytes: DEFAULT_COPIER.writeBatchBytes,
    });
    for await (const batch of read) {
      await writer.insertRawUnordered(scratchDatabase, name, batch.documents);
      documents += batch.documents.length;
      bytes += batch.bytes;
    }
  });
  const seconds = secondsSince(started);
  const cpuMicrosPerDoc = cpu(documents);
  await destinationClient.db(scratchDatabase).dropDatabase();
  return { ...rate(documents, bytes, seconds), collections, cpuMicrosPerDoc };
}
