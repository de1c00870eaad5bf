import { BSON, Double, Int32, ObjectId, type Document } from 'bson';
import type { Namespace } from './change-event';
import { DestinationWriteError } from './errors';
import type { ChangeWriter, WriteFailure, WriteOp } from './ports';
import { FakeLookup, FakeWriter } from './testing-fakes.spec-helper';
import { WriteLane } from './write-lane';
import { RawDocument } from './raw-document';
import type { WriteStep } from './write-step';
import type { InPlaceRetryOptions } from '../faults/retry-in-place';
import { labelsForWriteCode } from '../faults/fault-labels';

const ns: Namespace = { db: 'd', coll: 'c' };

/** A writer whose first `times` bulks fail each op with `fail(op)` (undefined: succeeds). */
class FailingWriter extends FakeWriter {
  constructor(
    private readonly fail: (op: WriteOp) => Omit<WriteFailure, 'index'> | undefined,
    private times = 1,
  ) {
    super();
  }
  override async bulkWrite(target: Namespace, ops: WriteOp[]): Promise<WriteFailure[]> {
    const rest = await super.bulkWrite(target, ops);
    if (this.times <= 0) return rest;
    this.times -= 1;
    return ops.flatMap((op, index) => {
      const f = this.fail(op);
      return f ? [{ index, ...f }] : [];
    });
  }
}

/** Retries in place without waiting (the sleep is the test clock's). */
const instantRetry = (attempts: number, retried: string[] = []): InPlaceRetryOptions => ({
  attempts,
  clock: { now: () => 0, sleep: () => Promise.resolve() },
  onRetry: (e) => void retried.push(`${e.what}#${e.attempt}`),
});

function run(
  writer: ChangeWriter,
  lookup: FakeLookup,
  steps: Array<[Document, WriteStep]>,
  retry: InPlaceRetryOptions = instantRetry(0),
) {
  const errors: unknown[] = [];
  const applied: number[] = [];
  const lane = new WriteLane({
    writer,
    lookup,
    onApplied: (seqs) => applied.push(...seqs),
    onError: (e) => errors.push(e),
    retry,
  });
  steps.forEach(([id, step], seq) =>
    lane.push({ ns, identity: JSON.stringify(id), steps: [step], supersedes: false }, seq),
  );
  return { drained: lane.drain().then(() => undefined), errors, applied };
}

const update = (_id: unknown): WriteStep => ({
  kind: 'update',
  filter: { _id },
  update: { $set: { 'a.b': 1 } },
});

describe('WriteLane update fallback', () => {
  it('re-reads the document from the source when the update meets a newer shape', async () => {
    const writer = new FailingWriter((op) =>
      op.kind === 'update'
        ? { code: 28, message: "Cannot create field 'b' in element {a: 1}" }
        : undefined,
    );
    const lookup = new FakeLookup();
    lookup.source.set('d.c|7', { _id: 7, a: { b: 1 } });
    const { drained, applied } = run(writer, lookup, [[{ _id: 7 }, update(7)]]);
    await drained;
    expect(lookup.calls).toBe(1);
    expect(writer.bulks[1].ops).toEqual([
      { kind: 'replace', filter: { _id: 7 }, replacement: { _id: 7, a: { b: 1 } } },
    ]);
    expect(applied).toEqual([0]);
  });

  it('throws DestinationWriteError for a duplicate key instead of looking the document up', async () => {
    const id = new ObjectId('64b7f0c2a1b2c3d4e5f60718');
    const writer = new FailingWriter(() => ({
      code: 11000,
      message: 'E11000 duplicate key error',
    }));
    const lookup = new FakeLookup();
    const { drained, errors, applied } = run(writer, lookup, [[{ _id: id }, update(id)]]);
    const error = await drained.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DestinationWriteError);
    expect((error as Error).message).toBe(
      'update of _id {"$oid":"64b7f0c2a1b2c3d4e5f60718"} on d.c failed: E11000 duplicate key error (code 11000)',
    );
    expect(error).toMatchObject({ isRetryable: false });
    expect(errors).toEqual([error]);
    expect(lookup.calls).toBe(0);
    expect(writer.bulks).toHaveLength(1);
    expect(applied).toEqual([]);
  });

  it('throws a retryable DestinationWriteError for a write concern error reported per op', async () => {
    const writer = new FailingWriter(() => ({
      code: 64,
      message: 'waiting for replication timed out',
    }));
    const lookup = new FakeLookup();
    const { drained } = run(writer, lookup, [[{ _id: 1 }, update(new Int32(1))]]);
    const error = await drained.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DestinationWriteError);
    expect(error).toMatchObject({ isRetryable: true });
    expect((error as Error).message).toBe(
      'update of _id 1 on d.c failed: waiting for replication timed out (code 64)',
    );
    expect(lookup.calls).toBe(0);
  });

  it('retries in place only the writes that failed with a transient code, then applies', async () => {
    const writer = new FailingWriter((op) =>
      op.filter._id === 2 ? { code: 10107, message: 'not primary' } : undefined,
    );
    const retried: string[] = [];
    const { drained, applied, errors } = run(
      writer,
      new FakeLookup(),
      [
        [{ _id: 1 }, { kind: 'replace', filter: { _id: 1 }, replacement: { _id: 1, v: 1 } }],
        [{ _id: 2 }, { kind: 'replace', filter: { _id: 2 }, replacement: { _id: 2, v: 2 } }],
      ],
      instantRetry(3, retried),
    );
    await drained;
    expect(errors).toEqual([]);
    expect(retried).toEqual(['write to d.c#1']);
    expect(writer.bulks.map((b) => b.ops.map((op) => op.filter._id))).toEqual([[1, 2], [2]]);
    expect(applied).toEqual([0, 1]);
  });

  it('sends a whole bulk again after a transient command failure, and gives up after the budget', async () => {
    const writer = new FakeWriter();
    let failuresLeft = 2;
    const inner = writer.bulkWrite.bind(writer);
    writer.bulkWrite = (target, ops) => {
      if (failuresLeft-- > 0) {
        return Promise.reject(
          Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' }),
        );
      }
      return inner(target, ops);
    };
    const retried: string[] = [];
    const ok = run(writer, new FakeLookup(), [[{ _id: 1 }, update(1)]], instantRetry(2, retried));
    await ok.drained;
    expect(retried).toEqual(['write to d.c#1', 'write to d.c#2']);
    expect(ok.applied).toEqual([0]);

    failuresLeft = 3;
    const failed = run(writer, new FakeLookup(), [[{ _id: 1 }, update(1)]], instantRetry(2));
    await expect(failed.drained).rejects.toThrow('connection reset');
    expect(failed.applied).toEqual([]);
  });

  it('never retries a failure a retry cannot fix (a duplicate key)', async () => {
    const writer = new FailingWriter(() => ({ code: 11000, message: 'E11000' }));
    const retried: string[] = [];
    const { drained } = run(
      writer,
      new FakeLookup(),
      [[{ _id: 1 }, update(1)]],
      instantRetry(5, retried),
    );
    await expect(drained).rejects.toThrow('(code 11000)');
    expect(retried).toEqual([]);
    expect(writer.bulks).toHaveLength(1);
  });

  it('throws for a failure without a code', async () => {
    const writer = new FailingWriter(() => ({ message: 'something broke' }));
    const lookup = new FakeLookup();
    const { drained } = run(writer, lookup, [[{ _id: 'x' }, update('x')]]);
    await expect(drained).rejects.toThrow('update of _id "x" on d.c failed: something broke');
    expect(lookup.calls).toBe(0);
  });

  it('looks nothing up when any failure of the bulk is not a shape conflict', async () => {
    const writer = new FailingWriter((op) =>
      op.filter._id === 1
        ? { code: 28, message: 'PathNotViable' }
        : { code: 11000, message: 'E11000 duplicate key error' },
    );
    const lookup = new FakeLookup();
    const { drained } = run(writer, lookup, [
      [{ _id: 1 }, update(1)],
      [{ _id: 2 }, update(2)],
    ]);
    await expect(drained).rejects.toThrow('update of _id 2 on d.c failed');
    expect(lookup.calls).toBe(0);
  });

  it('names the operation kind of a failing replace', async () => {
    // Every try: a replace meeting a duplicate key is sent again (an upsert race) first.
    const writer = new FailingWriter(
      (op) => (op.kind === 'replace' ? { code: 11000, message: 'E11000' } : undefined),
      Infinity,
    );
    const step: WriteStep = { kind: 'replace', filter: { _id: 3 }, replacement: { _id: 3 } };
    const { drained } = run(writer, new FakeLookup(), [[{ _id: 3 }, step]]);
    await expect(drained).rejects.toThrow('replace of _id 3 on d.c failed: E11000 (code 11000)');
  });

  it.each([
    ['a refusal with a code (Unauthorized)', { code: 13, codeName: 'Unauthorized' }, false],
    ['an error without a code (a closed client)', {}, true],
    ['a transient code', { code: 91, codeName: 'ShutdownInProgress' }, true],
    ['an operation the driver refused to send', { name: 'MongoInvalidArgumentError' }, false],
  ])(
    'names the namespace of a whole bulk that failed: %s (retryable: %s)',
    async (_what, fields, retryable) => {
      const writer = new FakeWriter();
      writer.bulkWrite = () =>
        Promise.reject(
          Object.assign(new Error('refused'), { name: 'MongoServerError', ...fields }),
        );
      const { drained } = run(writer, new FakeLookup(), [[{ _id: 1 }, update(1)]]);
      const error = await drained.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DestinationWriteError);
      expect(error).toMatchObject({ namespace: 'd.c', isRetryable: retryable });
      expect((error as Error).message).toMatch(/^1 write\(s\) to d\.c failed: .*refused$/);
    },
  );

  it('passes an error thrown by the writer through unchanged', async () => {
    const thrown = new DestinationWriteError('write concern failed on d.c: timeout', true);
    const writer = new FakeWriter();
    writer.bulkWrite = () => Promise.reject(thrown);
    const { drained } = run(writer, new FakeLookup(), [[{ _id: 1 }, update(1)]]);
    await expect(drained).rejects.toBe(thrown);
  });
});

describe('WriteLane: the one place a subset of a bulk is sent again', () => {
  const replace = (_id: number): WriteStep => ({
    kind: 'replace',
    filter: { _id },
    replacement: { _id, v: _id },
  });
  const duplicate = { code: 11000, message: 'E11000', faultLabels: labelsForWriteCode(11000) };

  it('sends a replace-upsert that lost a duplicate-key race again at once, alone', async () => {
    const writer = new FailingWriter((op) => (op.filter._id === 2 ? duplicate : undefined), 2);
    const retried: string[] = [];
    const { drained, applied } = run(
      writer,
      new FakeLookup(),
      [
        [{ _id: 1 }, replace(1)],
        [{ _id: 2 }, replace(2)],
      ],
      instantRetry(3, retried),
    );
    await drained;
    expect(writer.bulks.map((b) => b.ops.map((op) => op.filter._id))).toEqual([[1, 2], [2], [2]]);
    expect(retried).toEqual([]); // not a retry in place: no backoff, not counted
    expect(applied).toEqual([0, 1]);
  });

  it('gives a lasting duplicate key up after 3 more tries', async () => {
    const writer = new FailingWriter(() => duplicate, Infinity);
    const { drained } = run(writer, new FakeLookup(), [[{ _id: 7 }, replace(7)]]);
    await expect(drained).rejects.toThrow('replace of _id 7 on d.c failed: E11000 (code 11000)');
    expect(writer.bulks).toHaveLength(4);
  });

  const insert = (_id: number): WriteStep => ({
    kind: 'replace',
    filter: { _id },
    replacement: { _id, v: _id },
    insert: true,
  });

  it('sends an insert that meets its document again at once, as the replace-upsert', async () => {
    const writer = new FakeWriter();
    writer.docs.set('d.c|2', { _id: 2, copied: true });
    const retried: string[] = [];
    const { drained, applied, errors } = run(
      writer,
      new FakeLookup(),
      [
        [{ _id: 1 }, insert(1)],
        [{ _id: 2 }, insert(2)],
      ],
      instantRetry(3, retried),
    );
    await drained;
    expect(errors).toEqual([]);
    expect(writer.bulks.map((b) => b.ops)).toEqual([[insert(1), insert(2)], [replace(2)]]);
    expect(writer.bulks[1].ops[0]).not.toHaveProperty('insert');
    expect(writer.docs.get('d.c|1')).toEqual({ _id: 1, v: 1 });
    expect(writer.docs.get('d.c|2')).toEqual({ _id: 2, v: 2 });
    expect(retried).toEqual([]); // not a retry in place: no backoff, not counted
    expect(applied).toEqual([0, 1]);
  });

  it('gives a lasting duplicate key of an insert up after 3 upserts', async () => {
    const writer = new FailingWriter(() => duplicate, Infinity);
    const { drained } = run(writer, new FakeLookup(), [[{ _id: 7 }, insert(7)]]);
    await expect(drained).rejects.toThrow('replace of _id 7 on d.c failed: E11000 (code 11000)');
    expect(writer.bulks.map((b) => b.ops)).toEqual([
      [insert(7)],
      [replace(7)],
      [replace(7)],
      [replace(7)],
    ]);
  });

  it('keeps an inserted document updated in the same batch an insert', async () => {
    const writer = new FakeWriter();
    const { drained } = run(writer, new FakeLookup(), [
      [{ _id: 1 }, insert(1)],
      [{ _id: 1 }, update(1)],
    ]);
    await drained;
    expect(writer.bulks.map((b) => b.ops)).toEqual([
      [{ ...insert(1), replacement: { _id: 1, v: 1, a: { b: 1 } } }],
    ]);
  });

  it('upserts on a per-shard worker, whose duplicate keys settle moves between shards', async () => {
    const writer = new FakeWriter();
    const lane = new WriteLane({
      writer,
      lookup: new FakeLookup(),
      onApplied: () => undefined,
      onError: () => undefined,
      keyspace: { keyFields: () => undefined, owns: () => true },
    });
    lane.push({ ns, identity: '1', steps: [insert(1)], supersedes: true }, 0);
    await lane.drain();
    expect(writer.bulks.map((b) => b.ops)).toEqual([[replace(1)]]);
    expect(writer.bulks[0].ops[0]).not.toHaveProperty('insert');
  });

  it('never sends an update or a delete again for a duplicate key', async () => {
    const writer = new FailingWriter(() => duplicate, Infinity);
    const { drained } = run(writer, new FakeLookup(), [[{ _id: 1 }, update(1)]]);
    await expect(drained).rejects.toThrow('(code 11000)');
    expect(writer.bulks).toHaveLength(1);
  });
});

describe('WriteLane classifies per-write failures by their labels', () => {
  it('retries in place a failure labelled transient, whatever its code', async () => {
    const writer = new FailingWriter(() => ({
      code: 4242,
      message: 'labelled by the adapter',
      faultLabels: new Set(['refused', 'transient'] as const),
    }));
    const retried: string[] = [];
    const { drained, applied } = run(
      writer,
      new FakeLookup(),
      [[{ _id: 1 }, update(1)]],
      instantRetry(2, retried),
    );
    await drained;
    expect(retried).toEqual(['write to d.c#1']);
    expect(applied).toEqual([0]);
  });

  it('reads a labelled failure by its labels, not its code', async () => {
    // Code 28 (a shape conflict by code) labelled only `refused`: no lookup, the lane stops.
    const writer = new FailingWriter(() => ({
      code: 28,
      message: 'PathNotViable',
      faultLabels: new Set(['refused'] as const),
    }));
    const lookup = new FakeLookup();
    const { drained } = run(writer, lookup, [[{ _id: 1 }, update(1)]], instantRetry(2));
    const error = await drained.catch((e: unknown) => e);
    expect(error).toMatchObject({ isRetryable: false });
    expect(lookup.calls).toBe(0);
  });

  it('makes a failure labelled writeConcern retryable by the run', async () => {
    const writer = new FailingWriter(() => ({
      message: 'not durable',
      faultLabels: new Set(['writeConcern'] as const),
    }));
    const { drained } = run(writer, new FakeLookup(), [[{ _id: 1 }, update(1)]]);
    await expect(drained.catch((e: unknown) => e)).resolves.toMatchObject({ isRetryable: true });
  });
});

describe('WriteLane superseding on a sharded source', () => {
  it('an upsert under a new shard key that supersedes a pending write removes the old by _id', async () => {
    const writer = new FakeWriter();
    writer.delayFor = () => 20; // keep the second push pending behind the first bulk
    const lane = new WriteLane({
      writer,
      lookup: new FakeLookup(),
      onApplied: () => undefined,
      onError: (e) => {
        throw e;
      },
    });
    const identity = 'd.c|7';
    lane.push({ ns, identity: 'other', steps: [update(1)], supersedes: false }, 0);
    // The delete half of a shard-key move, then the insert half under the new key.
    lane.push(
      {
        ns,
        identity,
        steps: [{ kind: 'delete', filter: { k: 'old', _id: 7 } }],
        supersedes: true,
      },
      1,
    );
    const doc = { _id: 7, k: 'new' };
    lane.push(
      {
        ns,
        identity,
        steps: [{ kind: 'replace', filter: { k: 'new', _id: 7 }, replacement: doc }],
        supersedes: true,
      },
      2,
    );
    await lane.drain();
    const ops = writer.bulks.flatMap((b) => b.ops).filter((op) => op.filter._id === 7);
    expect(ops.map((op) => [op.kind, op.filter])).toEqual([
      ['delete', { _id: 7 }],
      ['replace', { k: 'new', _id: 7 }],
    ]);
  });
});

describe('WriteLane repeated updates of one document', () => {
  const set = (_id: unknown, $set: Document, $unset?: Document): WriteStep => ({
    kind: 'update',
    filter: { _id },
    update: $unset ? { $set, $unset } : { $set },
  });

  /** Steps pushed in one go form one batch, written in rounds. */
  async function batched(steps: Array<[Document, WriteStep]>) {
    const writer = new FakeWriter();
    const { drained, errors, applied } = run(writer, new FakeLookup(), steps);
    await drained;
    expect(errors).toEqual([]);
    return { bulks: writer.bulks.map((b) => b.ops), applied };
  }

  it('keeps only the last of updates that set and unset the same paths', async () => {
    const { bulks, applied } = await batched([
      [{ _id: 1 }, set(1, { seq: 1, 'f.l': 1 }, { gone: '' })],
      [{ _id: 1 }, set(1, { 'f.l': 2, seq: 2 }, { gone: '' })],
      [{ _id: 1 }, set(1, { seq: 3, 'f.l': 3 }, { gone: '' })],
    ]);
    expect(bulks).toEqual([[set(1, { seq: 3, 'f.l': 3 }, { gone: '' })]]);
    expect(applied).toEqual([0, 1, 2]);
  });

  it('keeps both when the paths differ, the operators differ or the filters differ', async () => {
    const push: WriteStep = {
      kind: 'update',
      filter: { _id: 3 },
      update: { $push: { a: { $each: [], $slice: 1 } } },
    };
    const { bulks } = await batched([
      [{ _id: 1 }, set(1, { a: 1 })],
      [{ _id: 1 }, set(1, { a: 2, b: 2 })],
      [{ _id: 2 }, set(2, { a: 1 })],
      [{ _id: 2 }, set(2, { a: 2 }, { b: '' })],
      [{ _id: 3 }, push],
      [{ _id: 3 }, push],
      [{ _id: 4 }, set(new Double(4), { a: 1 })],
      [{ _id: 4 }, set(4, { a: 2 })],
    ]);
    expect(bulks).toHaveLength(2);
    expect(bulks[0]).toEqual([
      set(1, { a: 1 }),
      set(2, { a: 1 }),
      push,
      set(new Double(4), { a: 1 }),
    ]);
    expect(bulks[1]).toEqual([
      set(1, { a: 2, b: 2 }),
      set(2, { a: 2 }, { b: '' }),
      push,
      set(4, { a: 2 }),
    ]);
  });
});

describe('WriteLane updates onto a pending full document', () => {
  const replace = (doc: Document): WriteStep => ({
    kind: 'replace',
    filter: { _id: doc._id },
    replacement: doc,
  });
  const upd = (_id: unknown, u: Document): WriteStep => ({
    kind: 'update',
    filter: { _id },
    update: u,
  });

  /** Events of one document pushed in one go (one batch); each its own event. */
  async function batch(events: Array<{ steps: WriteStep[]; supersedes: boolean }>) {
    const writer = new FakeWriter();
    const applied: number[] = [];
    const errors: unknown[] = [];
    const lane = new WriteLane({
      writer,
      lookup: new FakeLookup(),
      onApplied: (seqs) => applied.push(...seqs),
      onError: (e) => errors.push(e),
      retry: instantRetry(0),
    });
    events.forEach((e, seq) => lane.push({ ns, identity: 'd.c\u0000n:1', ...e }, seq));
    await lane.drain();
    expect(errors).toEqual([]);
    return { bulks: writer.bulks.map((b) => b.ops), applied };
  }
  const insert = (doc: Document) => ({ steps: [replace(doc)], supersedes: true });
  const update = (u: Document) => ({ steps: [upd(1, u)], supersedes: false });
  const keys = (doc: Document): string[] => Object.keys(doc);

  it('insert + update + update: one replace with the final document, field order kept', async () => {
    const inserted = { _id: 1, a: new Int32(1), f: { l: new Int32(0) } };
    const { bulks, applied } = await batch([
      insert(inserted),
      update({ $set: { a: new Int32(2), 'f.l': new Int32(5) } }),
      update({ $set: { z: 'new' }, $unset: { a: '' } }),
    ]);
    expect(bulks).toEqual([[replace({ _id: 1, f: { l: new Int32(5) }, z: 'new' })]]);
    const written = (bulks[0][0] as Extract<WriteOp, { kind: 'replace' }>).replacement;
    expect(keys(written)).toEqual(['_id', 'f', 'z']);
    expect(applied).toEqual([0, 1, 2]);
    // The event's document itself is untouched.
    expect(inserted).toEqual({ _id: 1, a: new Int32(1), f: { l: new Int32(0) } });
  });

  it('a raw insert is written as its bytes alone, and decoded once an update is applied onto it', async () => {
    const bytes = BSON.serialize({ _id: 1, a: new Int32(1) });
    const rawInsert = () => ({
      steps: [
        {
          kind: 'replace' as const,
          filter: { _id: 1 },
          replacement: new RawDocument(bytes),
          insert: true,
        },
      ],
      supersedes: true,
    });
    const alone = await batch([rawInsert()]);
    const sent = (alone.bulks[0][0] as Extract<WriteOp, { kind: 'replace' }>).replacement;
    expect(sent).toBeInstanceOf(RawDocument);
    expect((sent as RawDocument).bytes).toBe(bytes);
    const updated = await batch([rawInsert(), update({ $set: { b: 'new' } })]);
    expect(updated.bulks).toEqual([
      [
        {
          kind: 'replace',
          filter: { _id: 1 },
          replacement: { _id: new Int32(1), a: new Int32(1), b: 'new' },
          insert: true,
        },
      ],
    ]);
  });

  it('insert + update + delete: only the delete', async () => {
    const { bulks } = await batch([
      insert({ _id: 1, a: 1 }),
      update({ $set: { a: 2 } }),
      { steps: [{ kind: 'delete', filter: { _id: 1 } }], supersedes: true },
    ]);
    expect(bulks).toEqual([[{ kind: 'delete', filter: { _id: 1 } }]]);
  });

  it('update then replace: only the replace; replace then update: one replace', async () => {
    const first = await batch([
      { steps: [upd(1, { $set: { a: 2 } })], supersedes: false },
      insert({ _id: 1, b: 1 }),
    ]);
    expect(first.bulks).toEqual([[replace({ _id: 1, b: 1 })]]);
    const second = await batch([insert({ _id: 1, b: 1 }), update({ $set: { b: 2 } })]);
    expect(second.bulks).toEqual([[replace({ _id: 1, b: 2 })]]);
  });

  it('an update it cannot reproduce stays an operation, and so does every update after it', async () => {
    const arrayElement = upd(1, { $set: { 'arr.0': 9 } });
    const truncation = upd(1, { $push: { arr: { $each: [], $slice: 1 } } });
    const later = upd(1, { $set: { c: 3 } });
    const { bulks } = await batch([
      insert({ _id: 1, arr: [1, 2], c: 0 }),
      update({ $set: { c: 1 } }),
      { steps: [truncation, arrayElement], supersedes: false },
      { steps: [later], supersedes: false },
    ]);
    expect(bulks).toEqual([
      [replace({ _id: 1, arr: [1, 2], c: 1 })],
      [truncation],
      [arrayElement],
      [later],
    ]);
  });

  it('a dotted path through a scalar and an update of another key stay operations', async () => {
    const throughScalar = upd(1, { $set: { 'c.d': 1 } });
    const otherKey = upd(2, { $set: { c: 1 } });
    const { bulks } = await batch([
      insert({ _id: 1, c: 0 }),
      { steps: [throughScalar], supersedes: false },
      { steps: [otherKey], supersedes: false },
    ]);
    expect(bulks).toEqual([[replace({ _id: 1, c: 0 })], [throughScalar], [otherKey]]);
  });
});
