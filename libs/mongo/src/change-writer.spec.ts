import { startReplicaSet } from '@sync/mongo-emulator';
import {
  DestinationWriteError,
  RawDocument,
  type WriteFailure,
  type WriteOp,
} from '@sync/engine/apply';
import { labelsOf } from '@sync/engine';
import {
  BSON,
  Binary,
  Double,
  Int32,
  MongoBulkWriteError,
  MongoClient,
  MongoNetworkError,
  MongoWriteConcernError,
  type Document,
} from 'mongodb';
import { MongoChangeWriter, WriteConcernFailedError } from './change-writer';

type Cluster = Awaited<ReturnType<typeof startReplicaSet>>;

/** A raw document that fails the test if anything decodes it. */
class Undecodable extends RawDocument {
  override get document(): never {
    throw new Error('a raw document was decoded');
  }
}

const WCE = {
  code: 64,
  codeName: 'WriteConcernFailed',
  errmsg: 'waiting for replication timed out',
  errInfo: { wtimeout: true },
};

describe('MongoChangeWriter and write concern errors (emulator, real driver)', () => {
  let cluster: Cluster;
  let client: MongoClient;
  let writer: MongoChangeWriter;
  let n = 0;
  let ns: { db: string; coll: string };

  beforeAll(async () => {
    cluster = await startReplicaSet();
    // The production options (mongo-cluster-directory.ts): majority + retryable writes.
    client = await new MongoClient(cluster.uri, {
      writeConcern: { w: 'majority', j: true },
      retryWrites: true,
    }).connect();
    writer = new MongoChangeWriter(client);
  });
  beforeEach(async () => {
    ns = { db: 'wc', coll: `docs${++n}` };
    const coll = client.db(ns.db).collection<{ _id: number; u: number }>(ns.coll);
    await coll.insertMany([
      { _id: 1, u: 1 },
      { _id: 2, u: 2 },
    ]);
    await coll.createIndex({ u: 1 }, { unique: true });
  });
  afterEach(() => client.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' }));
  afterAll(async () => {
    await client.close();
    await cluster.stop();
  });

  const failNext = (commands: string[]) =>
    client.db('admin').command({
      configureFailPoint: 'failCommand',
      mode: { times: 1 },
      data: { failCommands: commands, writeConcernError: WCE },
    });

  /** op 0 breaks the unique index on `u`; op 1 is a valid write. */
  const conflicting: WriteOp[] = [
    { kind: 'update', filter: { _id: 1 }, update: { $set: { u: 2 } } },
    { kind: 'update', filter: { _id: 2 }, update: { $set: { x: 1 } } },
  ];

  /** `ops` written by a writer over a command-monitored client: its failures, the commands sent. */
  async function monitoredWrite(
    ops: WriteOp[],
  ): Promise<{ failures: WriteFailure[]; commands: string[] }> {
    const commands: string[] = [];
    const monitored = await new MongoClient(cluster.uri, {
      writeConcern: { w: 'majority', j: true },
      monitorCommands: true,
    }).connect();
    monitored.on('commandStarted', (e) => void commands.push(e.commandName));
    try {
      const failures = await new MongoChangeWriter(monitored).bulkWrite(ns, ops);
      return { failures, commands: commands.filter((c) => c !== 'endSessions') };
    } finally {
      await monitored.close();
    }
  }

  it('writes a replacement at the 16 MiB limit beside the bulk the driver would refuse for it', async () => {
    // A document of 16 MiB − 1 byte: its replace-upsert statement is over the 16 MiB the
    // driver's bulk API checks, though mongod takes it.
    const limit = 16 * 1024 * 1024;
    const base = { _id: 5, u: 5, payload: new Binary(Buffer.alloc(0)) };
    const pad = limit - 1 - BSON.serialize(base).length;
    const big = { ...base, payload: new Binary(Buffer.alloc(pad, 3)) };
    expect(BSON.serialize(big).length).toBe(limit - 1);
    const failures = await writer.bulkWrite(ns, [
      conflicting[0]!,
      { kind: 'replace', filter: { _id: 5 }, replacement: big },
      conflicting[1]!,
    ]);
    // The small ops' failure keeps its index in the call; the large one and the rest applied.
    expect(failures.map((f) => [f.index, f.code])).toEqual([[0, 11000]]);
    const coll = client.db(ns.db).collection(ns.coll);
    const stored = (await coll.findOne({ _id: 5 } as never, { raw: true })) as unknown as Buffer;
    expect(Buffer.compare(stored, Buffer.from(BSON.serialize(big)))).toBe(0);
    expect(await coll.findOne({ _id: 2 } as never)).toEqual({ _id: 2, u: 2, x: 1 });
  });

  it('writes an update whose $set nearly fills 16 MiB, beside the rest of its bulk', async () => {
    const limit = 16 * 1024 * 1024;
    const coll = client.db(ns.db).collection(ns.coll);
    await coll.insertOne({ _id: 6, u: 6, payload: new Binary(Buffer.alloc(0)) } as never);
    // The payload that makes the document 16 MiB − 1 byte: the statement {q, u: {$set}} is over
    // the driver's 16 MiB check.
    const empty = BSON.serialize({ _id: 6, u: 6, payload: new Binary(Buffer.alloc(0)) }).length;
    const payload = new Binary(Buffer.alloc(limit - 1 - empty, 9));
    const failures = await writer.bulkWrite(ns, [
      { kind: 'update', filter: { _id: 6 }, update: { $set: { payload } } },
      conflicting[1]!,
    ]);
    expect(failures).toEqual([]);
    const stored = (await coll.findOne({ _id: 6 } as never, { raw: true })) as unknown as Buffer;
    expect(stored.length).toBe(limit - 1);
    expect(Buffer.compare(stored, Buffer.from(BSON.serialize({ _id: 6, u: 6, payload })))).toBe(0);
    expect(await coll.findOne({ _id: 2 } as never)).toEqual({ _id: 2, u: 2, x: 1 });
  });

  it('sends an insert as an insert, beside the updates and deletes, one command each', async () => {
    const { failures, commands } = await monitoredWrite([
      // An insert of an `_id` the destination holds: the lane's cue to replace.
      { kind: 'replace', filter: { _id: 1 }, replacement: { _id: 1, u: 10 }, insert: true },
      { kind: 'update', filter: { _id: 2 }, update: { $set: { x: 1 } } },
      { kind: 'replace', filter: { _id: 3 }, replacement: { _id: 3, u: 3 }, insert: true },
      { kind: 'delete', filter: { _id: 4 } },
    ]);
    expect(failures).toEqual([
      {
        index: 0,
        code: 11000,
        message: expect.stringContaining('E11000'),
        faultLabels: new Set(['refused', 'duplicateKey']),
      },
    ]);
    // One command each (sent together: no order between them).
    expect(commands.sort()).toEqual(['delete', 'insert', 'update']);
    const coll = client.db(ns.db).collection(ns.coll);
    expect(await coll.find({}, { sort: { _id: 1 } }).toArray()).toEqual([
      { _id: 1, u: 1 },
      { _id: 2, u: 2, x: 1 },
      { _id: 3, u: 3 },
    ]);
  });

  it('sends raw inserts as the bytes given, beside decoded ones, duplicates at their index', async () => {
    const bytes = BSON.serialize({ _id: 7, b: new Int32(1), e: { z: 1, a: [new Double(2)] } });
    const { failures, commands } = await monitoredWrite([
      { kind: 'replace', filter: { _id: 8 }, replacement: { _id: 8, u: 8 }, insert: true },
      // Sent as its bytes: never decoded on the way.
      { kind: 'replace', filter: { _id: 7 }, replacement: new Undecodable(bytes), insert: true },
      // Already there: the lane's cue to replace.
      {
        kind: 'replace',
        filter: { _id: 2 },
        replacement: new RawDocument(BSON.serialize({ _id: 2, u: 20 })),
        insert: true,
      },
    ]);
    expect(failures.map((f) => [f.index, f.code])).toEqual([[2, 11000]]);
    expect(commands).toEqual(['insert']);
    const coll = client.db(ns.db).collection(ns.coll);
    const stored = (await coll.findOne({ _id: 7 } as never, { raw: true })) as unknown as Buffer;
    expect(Buffer.compare(stored, Buffer.from(bytes))).toBe(0);
    expect(await coll.findOne({ _id: 8 } as never)).toEqual({ _id: 8, u: 8 });
    expect(await coll.findOne({ _id: 2 } as never)).toEqual({ _id: 2, u: 2 });
  });

  it('replace-upserts a raw document as its bytes, spliced into the statement', async () => {
    const existing = BSON.serialize({ _id: 1, u: 11, e: { z: new Int32(2), a: 'x' } });
    const missing = BSON.serialize({ _id: 12, u: 12 });
    const { failures, commands } = await monitoredWrite([
      { kind: 'replace', filter: { _id: 1 }, replacement: new Undecodable(existing) },
      { kind: 'replace', filter: { _id: 12 }, replacement: new Undecodable(missing) },
      { kind: 'update', filter: { _id: 2 }, update: { $set: { x: 1 } } },
    ]);
    expect(failures).toEqual([]);
    expect(commands).toEqual(['update']);
    const coll = client.db(ns.db).collection(ns.coll);
    for (const [id, bytes] of [
      [1, existing],
      [12, missing],
    ] as const) {
      const stored = (await coll.findOne({ _id: id } as never, { raw: true })) as unknown as Buffer;
      expect(Buffer.compare(stored, Buffer.from(bytes))).toBe(0);
    }
    expect(await coll.findOne({ _id: 2 } as never)).toEqual({ _id: 2, u: 2, x: 1 });
  });

  it('splits raw inserts over 16 MiB into several insert commands', async () => {
    const big = (id: number) =>
      new RawDocument(
        BSON.serialize({
          _id: id,
          u: 100 + id,
          pad: new Binary(Buffer.alloc(9 * 1024 * 1024, id)),
        }),
      );
    const { failures, commands } = await monitoredWrite([
      { kind: 'replace', filter: { _id: 10 }, replacement: big(10), insert: true },
      { kind: 'replace', filter: { _id: 11 }, replacement: big(11), insert: true },
      { kind: 'replace', filter: { _id: 1 }, replacement: { _id: 1, u: 1 }, insert: true },
    ]);
    // The duplicate is in the second command; its index is the call's.
    expect(failures.map((f) => [f.index, f.code])).toEqual([[2, 11000]]);
    expect(commands).toEqual(['insert', 'insert']);
    expect(await client.db(ns.db).collection(ns.coll).countDocuments()).toBe(4);
  });

  it('throws WriteConcernFailedError when a write concern error comes with raw inserts', async () => {
    await failNext(['insert']);
    const error = await writer
      .bulkWrite(ns, [
        {
          kind: 'replace',
          filter: { _id: 9 },
          replacement: new RawDocument(BSON.serialize({ _id: 9, u: 9 })),
          insert: true,
        },
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WriteConcernFailedError);
    expect(error).toMatchObject({ namespace: `wc.${ns.coll}`, isRetryable: true });
  });

  it('maps a duplicate key to a per-op failure when the write concern is met', async () => {
    const failures = await writer.bulkWrite(ns, conflicting);
    expect(failures).toEqual([
      {
        index: 0,
        code: 11000,
        message: expect.stringContaining('E11000'),
        faultLabels: new Set(['refused', 'duplicateKey']),
      },
    ]);
  });

  it('throws WriteConcernFailedError when a write concern error comes with duplicate keys', async () => {
    await failNext(['update']);
    const error = await writer.bulkWrite(ns, conflicting).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WriteConcernFailedError);
    expect(error).toBeInstanceOf(DestinationWriteError);
    expect(error).toMatchObject({
      name: 'WriteConcernFailedError',
      namespace: `wc.${ns.coll}`,
      serverMessage: 'waiting for replication timed out',
      code: 64,
      errInfo: { wtimeout: true },
      isRetryable: true,
    });
    expect((error as Error).message).toBe(
      `write concern failed on wc.${ns.coll}: waiting for replication timed out (code 64)`,
    );
    // The update command's reply carried it; the driver threw it as MongoWriteConcernError.
    expect((error as Error).cause).toBeInstanceOf(MongoWriteConcernError);
  });

  it('throws WriteConcernFailedError for a write concern error without per-op errors', async () => {
    await failNext(['delete']);
    const error = await writer
      .bulkWrite(ns, [{ kind: 'delete', filter: { _id: 2 } }])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WriteConcernFailedError);
  });

  it('rejects every call merged into the failing bulk', async () => {
    await failNext(['update']);
    const results = await Promise.allSettled([
      writer.bulkWrite(ns, [conflicting[0]]),
      writer.bulkWrite(ns, [conflicting[1]]),
    ]);
    for (const r of results) {
      expect(r.status).toBe('rejected');
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(WriteConcernFailedError);
    }
  });

  it('throws when the write concern error arrives on a later batch than the write errors', async () => {
    // Unordered bulks run one command per op type: update first, then delete.
    await failNext(['delete']);
    const error = await writer
      .bulkWrite(ns, [conflicting[0], { kind: 'delete', filter: { _id: 2 } }])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WriteConcernFailedError);
  });
});

describe('MongoChangeWriter with a driver error carrying writeErrors and a write concern error', () => {
  /** The shape BulkOperationBase.handleWriteError builds when both are in the bulk result. */
  function bulkErrorWithBoth(): MongoBulkWriteError {
    const writeErrors = [{ index: 0, code: 11000, errmsg: 'E11000 duplicate key error' }];
    const result = {
      getWriteErrors: () => writeErrors,
      getWriteConcernError: () => ({ code: 100, errmsg: 'Not enough data-bearing nodes' }),
    };
    return new MongoBulkWriteError(
      { message: 'E11000 duplicate key error', code: 11000, writeErrors: writeErrors as never },
      result as never,
    );
  }

  function fakeClient(error: unknown): MongoClient {
    const collection = { bulkWrite: () => Promise.reject(error) };
    return { db: () => ({ collection: () => collection }) } as unknown as MongoClient;
  }

  it('throws instead of reporting the per-op failures', async () => {
    const writer = new MongoChangeWriter(fakeClient(bulkErrorWithBoth()));
    const error = await writer
      .bulkWrite({ db: 'd', coll: 'c' }, [{ kind: 'delete', filter: { _id: 1 } }])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WriteConcernFailedError);
    expect(error).toMatchObject({
      namespace: 'd.c',
      code: 100,
      serverMessage: 'Not enough data-bearing nodes',
    });
  });

  it('still maps per-op failures when there is no write concern error', async () => {
    const plain = new MongoBulkWriteError(
      {
        message: 'E11000',
        code: 11000,
        writeErrors: [{ index: 0, code: 11000, errmsg: 'E11000' }] as never,
      },
      { getWriteConcernError: () => undefined } as never,
    );
    const writer = new MongoChangeWriter(fakeClient(plain));
    await expect(
      writer.bulkWrite({ db: 'd', coll: 'c' }, [{ kind: 'delete', filter: { _id: 1 } }]),
    ).resolves.toEqual([
      {
        index: 0,
        code: 11000,
        message: 'E11000',
        faultLabels: new Set(['refused', 'duplicateKey']),
      },
    ]);
  });
});

describe('MongoChangeWriter only translates: per-op failures and errors come back labelled', () => {
  /** A client whose `update` commands get these replies (or throw these errors), recorded. */
  function recordingClient(replies: unknown[]) {
    const calls: Document[] = [];
    const db = {
      command: (command: Document) => {
        calls.push(command);
        const reply = replies.shift();
        return reply instanceof Error ? Promise.reject(reply) : Promise.resolve(reply ?? {});
      },
    };
    const client = { db: () => db } as unknown as MongoClient;
    return { client, calls };
  }
  const writeErrorsReply = (
    writeErrors: Array<{ index: number; code: number; errmsg: string }>,
  ) => ({
    ok: 1,
    n: 0,
    writeErrors,
  });
  const replace = (_id: number): WriteOp => ({
    kind: 'replace',
    filter: { _id },
    replacement: { _id },
  });

  it('sends a replace-upsert that met a duplicate key once (the write lane retries)', async () => {
    const { client, calls } = recordingClient([
      writeErrorsReply([{ index: 1, code: 11000, errmsg: 'E11000 duplicate key error' }]),
    ]);
    const failures = await new MongoChangeWriter(client).bulkWrite({ db: 'd', coll: 'c' }, [
      replace(1),
      replace(2),
    ]);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ update: 'c', ordered: false, bypassDocumentValidation: true });
    expect(failures).toEqual([
      {
        index: 1,
        code: 11000,
        message: 'E11000 duplicate key error',
        faultLabels: new Set(['refused', 'duplicateKey']),
      },
    ]);
  });

  it.each([
    [10107, ['refused', 'transient']],
    [64, ['refused', 'transient', 'writeConcern']],
    [28, ['refused', 'shapeConflict']],
    [121, ['refused']],
  ])('labels a per-op failure with code %s: %j', async (code, labels) => {
    const { client } = recordingClient([writeErrorsReply([{ index: 0, code, errmsg: 'x' }])]);
    const [failure] = await new MongoChangeWriter(client).bulkWrite({ db: 'd', coll: 'c' }, [
      replace(1),
    ]);
    expect([...(failure.faultLabels ?? [])].sort()).toEqual([...labels].sort());
  });

  it('labels a whole-command driver error it rethrows', async () => {
    const thrown = new MongoNetworkError('connection reset');
    const { client } = recordingClient([thrown]);
    const error = await new MongoChangeWriter(client)
      .bulkWrite({ db: 'd', coll: 'c' }, [replace(1)])
      .catch((e: unknown) => e);
    expect(error).toBe(thrown);
    expect([...labelsOf(error)]).toEqual(['transient']);
  });

  it('labels WriteConcernFailedError', () => {
    const error = new WriteConcernFailedError('d.c', 'timeout', 64);
    expect([...labelsOf(error)].sort()).toEqual(['refused', 'transient', 'writeConcern']);
    expect([...labelsOf(new WriteConcernFailedError('d.c', 'no nodes', 100))].sort()).toEqual([
      'refused',
      'writeConcern',
    ]);
  });
});
