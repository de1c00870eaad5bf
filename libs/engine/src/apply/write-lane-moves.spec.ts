import { BSON, Timestamp, type Document } from 'bson';
import type { Namespace } from './change-event';
import type { ChangeWriter, DocumentLookup, WriteFailure, WriteOp } from './ports';
import { translateEvent } from './translate-event';
import type { ChangeEvent } from './change-event';
import { WriteLane, type ShardKeyspace } from './write-lane';

/**
 * A per-shard worker's lane when a document moves between source shards. Source shard A (this
 * worker) owns regions below 'm' (ap, eu), shard B the others (us, uz); the source collection
 * is sharded on {region, _id}. The other worker's writes are made directly on the destination.
 */
const ns: Namespace = { db: 'd', coll: 'orders' };
const ts = (t: number) => new Timestamp({ t, i: 1 });

/** One destination shard: versions keyed by (_id, region); `uniqueId` as mongod's _id index. */
class Destination implements ChangeWriter {
  readonly docs = new Map<string, Document>();
  readonly log: string[] = [];
  constructor(private readonly uniqueId: boolean) {}

  private static key(doc: Document): string {
    return `${String(doc._id)}|${String(doc.region)}`;
  }

  private matching(filter: Document): string[] {
    return [...this.docs.entries()]
      .filter(([, doc]) => Object.entries(filter).every(([f, v]) => (doc[f] ?? null) === v))
      .map(([key]) => key);
  }

  put(doc: Document): void {
    this.docs.set(Destination.key(doc), doc);
  }

  async bulkWrite(_: Namespace, ops: WriteOp[]): Promise<WriteFailure[]> {
    const failures: WriteFailure[] = [];
    ops.forEach((op, index) => {
      this.log.push(`${op.kind} ${JSON.stringify(op.filter)}`);
      const found = this.matching(op.filter);
      if (op.kind === 'delete') {
        if (found[0]) this.docs.delete(found[0]);
      } else if (op.kind === 'update') {
        if (found[0]) {
          const doc = this.docs.get(found[0])!;
          this.docs.delete(found[0]);
          this.put({ ...doc, ...(op.update.$set as Document) });
        }
      } else if (found[0]) {
        this.docs.delete(found[0]);
        this.put(op.replacement);
      } else if (this.uniqueId && this.matching({ _id: op.filter._id }).length > 0) {
        failures.push({ index, code: 11000, message: 'E11000 duplicate key error: _id_' });
      } else {
        this.put(op.replacement);
      }
    });
    return failures;
  }

  async versions(_: Namespace, id: unknown, fields: string[]): Promise<Document[]> {
    return this.matching({ _id: id }).map((key) => {
      const doc = this.docs.get(key)!;
      return Object.fromEntries(['_id', ...fields].map((f) => [f, doc[f]]));
    });
  }
}

/** The source now: a lookup matches its whole filter (the full document key). */
class Source implements DocumentLookup {
  readonly docs: Document[] = [];
  async findByKey(_: Namespace, key: Document): Promise<Document | null> {
    return this.docs.find((doc) => Object.entries(key).every(([f, v]) => doc[f] === v)) ?? null;
  }
}

class Keyspace implements ShardKeyspace {
  keyFields(): string[] {
    return ['region'];
  }
  owns(_: Namespace, __: string | undefined, doc: Document): boolean {
    return String(doc.region) < 'm';
  }
}

function event(
  operationType: ChangeEvent['operationType'],
  t: number,
  documentKey: Document,
  extra: Partial<ChangeEvent> = {},
): ChangeEvent {
  return {
    _id: { _data: `82${t}` },
    operationType,
    clusterTime: ts(t),
    ns,
    documentKey,
    ...extra,
  };
}

async function apply(
  destination: Destination,
  source: Source,
  keyspace: Keyspace,
  events: ChangeEvent[],
): Promise<{ moves: number; errors: unknown[] }> {
  const errors: unknown[] = [];
  let moves = 0;
  const lane = new WriteLane({
    writer: destination,
    lookup: source,
    onApplied: () => undefined,
    onError: (e) => errors.push(e),
    keyspace,
    onMoveRepaired: (n) => (moves += n),
  });
  // One event per batch: each is written before the next is pushed (the order that matters).
  for (const [seq, e] of events.entries()) {
    const translation = translateEvent(e, () => true, { perShard: true });
    if (translation.kind !== 'document') throw new Error('a document event');
    lane.push(translation.write, seq);
    await lane.drain().catch(() => undefined);
  }
  return { moves, errors };
}

const docs = (d: Destination) =>
  [...d.docs.values()].map((doc) => BSON.deserialize(BSON.serialize(doc)));

describe('WriteLane: a per-shard worker settles documents moved between shards', () => {
  it('never writes back a version the other shard has since deleted (a key change, then a move, then a delete)', async () => {
    // t1 on A: X's key changes ap → eu. t2: X moves to B (delete {eu} on A, insert {us} on B).
    // t3 on B: X is deleted. B applied t2 and t3 before A applies t1.
    const destination = new Destination(true);
    destination.put({ _id: 1, region: 'ap', v: 0 });
    // A reads the source between t2 and t3 (B's delete is applied already, A's read is older).
    const source = new Source();
    source.docs.push({ _id: 1, region: 'us', v: 2 });
    const keyspace = new Keyspace();
    const { errors } = await apply(destination, source, keyspace, [
      event(
        'update',
        1,
        { region: 'eu', _id: 1 },
        {
          updateDescription: { updatedFields: { region: 'eu' }, removedFields: [] },
        },
      ),
      event('delete', 2, { region: 'eu', _id: 1 }),
    ]);
    expect(errors).toEqual([]);
    expect(docs(destination)).toEqual([]);
  });

  it('leaves the other shard its newer version and writes this shard its own key change', async () => {
    // A sharded destination keeps both versions (no shared _id index). X: ap → eu on A at t1,
    // while B already wrote {us} (X moved to B at t2, which A applies next).
    const destination = new Destination(false);
    destination.put({ _id: 1, region: 'ap', v: 0 });
    destination.put({ _id: 1, region: 'us', v: 2 });
    const source = new Source();
    source.docs.push({ _id: 1, region: 'us', v: 2 });
    const keyspace = new Keyspace();
    const { errors } = await apply(destination, source, keyspace, [
      event(
        'replace',
        1,
        { region: 'eu', _id: 1 },
        {
          fullDocument: { _id: 1, region: 'eu', v: 1 },
        },
      ),
    ]);
    expect(errors).toEqual([]);
    // A's old version retired, its new one written; B's version untouched.
    expect(docs(destination)).toEqual([
      { _id: 1, region: 'us', v: 2 },
      { _id: 1, region: 'eu', v: 1 },
    ]);
    await apply(destination, source, keyspace, [event('delete', 2, { region: 'eu', _id: 1 })]);
    expect(docs(destination)).toEqual([{ _id: 1, region: 'us', v: 2 }]);
  });

  it('skips an upsert that the document on another shard now supersedes (read from the source)', async () => {
    // One _id index: A's insert {eu} at t1 meets B's {us}, written for the move at t3; the
    // source says the document is on B now.
    const destination = new Destination(true);
    destination.put({ _id: 1, region: 'us', v: 2 });
    const source = new Source();
    source.docs.push({ _id: 1, region: 'us', v: 2 });
    const { errors, moves } = await apply(destination, source, new Keyspace(), [
      event(
        'insert',
        1,
        { region: 'eu', _id: 1 },
        { fullDocument: { _id: 1, region: 'eu', v: 1 } },
      ),
      event(
        'update',
        2,
        { region: 'eu', _id: 1 },
        {
          updateDescription: { updatedFields: { v: 9 }, removedFields: [] },
        },
      ),
      event('delete', 3, { region: 'eu', _id: 1 }),
    ]);
    expect(errors).toEqual([]);
    expect(moves).toBe(1);
    expect(docs(destination)).toEqual([{ _id: 1, region: 'us', v: 2 }]);
  });

  it('skips an upsert of a document deleted since', async () => {
    const destination = new Destination(true);
    destination.put({ _id: 1, region: 'us', v: 2 });
    const { errors } = await apply(destination, new Source(), new Keyspace(), [
      event(
        'insert',
        1,
        { region: 'eu', _id: 1 },
        { fullDocument: { _id: 1, region: 'eu', v: 1 } },
      ),
    ]);
    expect(errors).toEqual([]);
    // B's version is B's to remove (its stream holds the delete).
    expect(docs(destination)).toEqual([{ _id: 1, region: 'us', v: 2 }]);
  });

  it("replaces the other shard's older version when the document is on this shard now", async () => {
    // X moved B → A at t1: B's delete {us} is not applied yet when A's insert {eu} arrives.
    const destination = new Destination(true);
    destination.put({ _id: 1, region: 'us', v: 0 });
    const source = new Source();
    source.docs.push({ _id: 1, region: 'eu', v: 4 });
    const { errors, moves } = await apply(destination, source, new Keyspace(), [
      event(
        'insert',
        1,
        { region: 'eu', _id: 1 },
        { fullDocument: { _id: 1, region: 'eu', v: 1 } },
      ),
    ]);
    expect(errors).toEqual([]);
    expect(moves).toBe(1);
    // The source's current version (newer than the event: later events replay on top).
    expect(docs(destination)).toEqual([{ _id: 1, region: 'eu', v: 4 }]);
    // B applies its late delete by its full key: A's version stays.
    await destination.bulkWrite(ns, [{ kind: 'delete', filter: { region: 'us', _id: 1 } }]);
    expect(docs(destination)).toEqual([{ _id: 1, region: 'eu', v: 4 }]);
  });

  it('stops with the duplicate key when no other shard holds the _id (another unique index)', async () => {
    const destination = new Destination(true);
    destination.put({ _id: 1, region: 'ap', v: 0 });
    const failing: ChangeWriter = {
      bulkWrite: async (target, ops) =>
        ops.map((_, index) => ({ index, code: 11000, message: 'E11000 duplicate key: sku_1' })),
      versions: (target, id, fields) => destination.versions(target, id, fields),
    };
    const errors: unknown[] = [];
    const source = new Source();
    source.docs.push({ _id: 1, region: 'ap' });
    const lane = new WriteLane({
      writer: failing,
      lookup: source,
      onApplied: () => undefined,
      onError: (e) => errors.push(e),
      keyspace: new Keyspace(),
    });
    const e = event(
      'insert',
      1,
      { region: 'ap', _id: 1 },
      { fullDocument: { _id: 1, region: 'ap' } },
    );
    const translation = translateEvent(e, () => true, { perShard: true });
    if (translation.kind !== 'document') throw new Error('a document event');
    lane.push(translation.write, 0);
    await expect(lane.drain()).rejects.toThrow(/sku_1/);
    expect((errors[0] as Error).name).toBe('DestinationWriteError');
  });

  it('never removes a document by _id alone', async () => {
    const destination = new Destination(false);
    destination.put({ _id: 1, region: 'ap', v: 0 });
    destination.put({ _id: 1, region: 'us', v: 5 });
    await apply(destination, new Source(), new Keyspace(), [
      event(
        'update',
        1,
        { region: 'eu', _id: 1 },
        {
          updateDescription: { updatedFields: { region: 'eu' }, removedFields: [] },
        },
      ),
      event(
        'replace',
        2,
        { region: 'ap', _id: 1 },
        { fullDocument: { _id: 1, region: 'ap', v: 3 } },
      ),
    ]);
    const deletes = destination.log.filter((l) => l.startsWith('delete'));
    expect(deletes.length).toBeGreaterThan(0);
    for (const line of deletes) expect(line).toContain('"region"');
    expect(docs(destination)).toContainEqual({ _id: 1, region: 'us', v: 5 });
  });
});
