import { BSON, Binary, Int32, type Document } from 'mongodb';
import type { SyncJob } from '@sync/engine';
import { translateEvent, type ChangeEvent } from '@sync/engine/apply';
import { describeOn, testDb } from '../helpers/real-clusters';
import {
  commitAndWait,
  engineFor,
  expectEqualClusters,
  request,
  startAuthClusters,
  waitFor,
  type AuthClusters,
} from './sync-helpers';

type AnyDoc = { _id: unknown } & Document;

/** MongoDB's limit on a stored document: 16 MiB (BSONObjMaxUserSize). */
const MAX_BSON = 16 * 1024 * 1024;

/**
 * A document of exactly `size` BSON bytes: a binary payload sized to fill it. Measured with
 * `BSON.serialize` (what the driver sends): `calculateObjectSize` overcounts a Binary here.
 */
function documentOf(size: number, id: unknown, extra: Document = {}): AnyDoc {
  const base: AnyDoc = {
    _id: id,
    ...extra,
    a: { b: new Int32(0) },
    payload: new Binary(Buffer.alloc(0)),
  };
  const overhead = BSON.serialize(base).length;
  const doc = { ...base, payload: new Binary(Buffer.alloc(size - overhead, 7)) };
  expect(BSON.serialize(doc).length).toBe(size);
  return doc;
}

/**
 * Documents at MongoDB's size limit (16 MiB − 1 byte): the initial copy (raw batches and the
 * insert message around them), updates replayed onto them, an update applied by reading the
 * document from the source (update with lookup), inserts and replacements of such
 * documents during change application (their change events carry the document whole: a little
 * over 16 MiB, within the 16 MiB + 16 KiB a server returns), the live verifier and the commit's
 * final pass, and a byte-for-byte comparison at the end.
 */
describeOn('replicaSets')('documents at the 16 MiB limit', () => {
  let c: AuthClusters;
  const jobs: SyncJob[] = [];

  afterEach(async () => {
    for (const job of jobs.splice(0)) await job.close().catch(() => undefined);
    await c?.close();
  });

  it('copies, updates, verifies and commits documents of 16 MiB − 1 byte byte-exact', async () => {
    c = await startAuthClusters();
    const big = c.appSrc.db(testDb('blobs')).collection<AnyDoc>('big');
    await big.insertOne(documentOf(MAX_BSON - 1, 'at-limit'));

    await big.insertOne(documentOf(MAX_BSON - 1, 'also-at-limit', { n: new Int32(1) }));
    await big.insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: i, v: new Int32(i) })));

    const job = await engineFor(c);
    jobs.push(job);
    await job.start(request({ enableUserWriteBlocking: true }));
    await waitFor(
      () => job.progress().canCommit === true,
      120_000,
      'canCommit',
      () => JSON.stringify(job.progress()),
    );

    // Updates replayed as $set on documents at the limit (the size stays 16 MiB − 1 byte).
    await big.updateOne({ _id: 'at-limit' } as Document, { $set: { 'a.b': new Int32(7) } });
    await big.updateOne({ _id: 'also-at-limit' } as Document, { $inc: { n: new Int32(1) } });
    // Change events that carry a document at the limit whole: an insert and a replacement.
    await big.insertOne(documentOf(MAX_BSON - 1, 'inserted-at-limit', { n: new Int32(2) }));
    await big.replaceOne(
      { _id: 7 } as Document,
      documentOf(MAX_BSON - 1, 7, { replaced: true }) as Document,
    );
    // An update that rewrites the large field itself: its replayed $set is over 16 MiB too.
    const rewritten = documentOf(MAX_BSON - 1, 'inserted-at-limit', { n: new Int32(2) });
    const payloadBytes = (rewritten.payload as Binary).length();
    await big.updateOne({ _id: 'inserted-at-limit' } as Document, {
      $set: { payload: new Binary(Buffer.alloc(payloadBytes, 5)) },
    });
    // An update the sync cannot replay from its description, so it reads the document from the
    // source and writes it whole (update with lookup): a pipeline update adding two fields out
    // of `$set`'s order ("zz" then "b") to a document it brings to exactly 16 MiB − 1 byte (an
    // Int32 field "zz" is 8 bytes, "b" 7).
    await big.insertOne(documentOf(MAX_BSON - 1 - 15, 'looked-up', { n: new Int32(3) }));
    const stream = big.watch([{ $match: { 'documentKey._id': 'looked-up' } }]);
    const next = stream.next();
    await big.updateOne({ _id: 'looked-up' } as Document, [
      { $set: { zz: new Int32(1), b: new Int32(2) } },
    ]);
    const event = (await next) as unknown as ChangeEvent;
    await stream.close();
    const translation = translateEvent(event, () => true);
    expect(translation.kind === 'document' && translation.write.steps).toEqual([
      { kind: 'lookup', documentKey: { _id: 'looked-up' } },
    ]);
    // Sizes as stored: the raw bytes the server returns.
    for (const id of ['at-limit', 'also-at-limit', 'inserted-at-limit', 7, 'looked-up']) {
      const raw = (await big.findOne({ _id: id } as Document, { raw: true })) as unknown as Buffer;
      expect(raw.length).toBe(MAX_BSON - 1);
    }
    await waitFor(
      async () => {
        const dst = await c.dst
          .db(testDb('blobs'))
          .collection<AnyDoc>('big')
          .findOne({ _id: 'at-limit' } as Document);
        const replaced = await c.dst
          .db(testDb('blobs'))
          .collection<AnyDoc>('big')
          .findOne({ _id: 7 } as Document, { projection: { replaced: 1 } });
        const lookedUp = await c.dst
          .db(testDb('blobs'))
          .collection<AnyDoc>('big')
          .findOne({ _id: 'looked-up' } as Document, { projection: { zz: 1, b: 1 } });
        return (
          (dst?.a as { b?: unknown } | undefined)?.b === 7 &&
          replaced?.replaced === true &&
          lookedUp?.b === 2
        );
      },
      60_000,
      'the updates on the destination',
      () => JSON.stringify(job.progress()),
    );
    await commitAndWait(job);
    expect(job.progress().state).toBe('COMMITTED');
    await expectEqualClusters(c);
  }, 240_000);
});
