import { Decimal128, Double, Int32, Long, ObjectId, type Document } from 'bson';
import type { ChangeEvent } from './change-event';
import { documentIdentity } from './doc-key';
import { ChangeStreamInvalidatedError, UnsupportedEventError } from './errors';
import { RESERVED_DB } from './namespace-rules';
import { translateEvent } from './translate-event';

const all = () => true;
const doc = { _id: new Int32(1), v: new Double(2.5) };

function event(operationType: string, extra: Partial<ChangeEvent> = {}): ChangeEvent {
  return {
    _id: { _data: '8200000001' },
    operationType,
    ns: { db: 'shop', coll: 'orders' },
    documentKey: { _id: doc._id },
    ...extra,
  };
}

describe('translateEvent (CRUD)', () => {
  it('insert → replace-with-upsert by documentKey, sent as an insert', () => {
    const t = translateEvent(event('insert', { fullDocument: doc }), all);
    expect(t).toMatchObject({
      kind: 'document',
      write: {
        ns: { db: 'shop', coll: 'orders' },
        steps: [{ kind: 'replace', filter: { _id: doc._id }, replacement: doc, insert: true }],
        supersedes: true,
      },
    });
  });

  it('replace → replace-with-upsert; delete → delete by key', () => {
    const r = translateEvent(event('replace', { fullDocument: doc }), all);
    expect(r).toMatchObject({ write: { steps: [{ kind: 'replace' }], supersedes: true } });
    expect((r as { write: { steps: Document[] } }).write.steps[0]).not.toHaveProperty('insert');
    const d = translateEvent(event('delete'), all);
    expect(d).toMatchObject({
      write: { steps: [{ kind: 'delete', filter: { _id: doc._id } }], supersedes: true },
    });
  });

  it('replace on a sharded source (shard key in documentKey): delete by _id, then upsert', () => {
    const key = { k: 'new', _id: doc._id };
    const r = translateEvent(event('replace', { documentKey: key, fullDocument: doc }), all);
    expect(r).toMatchObject({
      write: {
        steps: [
          { kind: 'delete', filter: { _id: doc._id } },
          { kind: 'replace', filter: key, replacement: doc },
        ],
        supersedes: true,
      },
    });
  });

  it('update does not supersede earlier writes of the document', () => {
    const u = translateEvent(
      event('update', { updateDescription: { updatedFields: { a: 1 } } }),
      all,
    );
    expect(u).toMatchObject({ write: { supersedes: false } });
  });

  it('ignores namespaces outside the filter, system collections and the metadata database', () => {
    expect(translateEvent(event('delete'), () => false)).toEqual({
      kind: 'ignore',
      reason: 'not-selected',
    });
    const sys = event('delete', { ns: { db: 'shop', coll: 'system.views' } });
    expect(translateEvent(sys, all).kind).toBe('ignore');
    const meta = event('insert', {
      ns: { db: RESERVED_DB, coll: 'resumeData' },
      fullDocument: doc,
    });
    expect(translateEvent(meta, all).kind).toBe('ignore');
    const admin = event('insert', { ns: { db: 'admin', coll: 'x' }, fullDocument: doc });
    expect(translateEvent(admin, all).kind).toBe('ignore');
  });

  it('passes the namespace to the filter predicate', () => {
    const seen: string[] = [];
    translateEvent(event('delete'), (db, coll) => {
      seen.push(`${db}.${coll}`);
      return true;
    });
    expect(seen).toEqual(['shop.orders']);
  });

  it('throws on invalidate and on resharding events instead of skipping them', () => {
    expect(() => translateEvent(event('invalidate'), all)).toThrow(ChangeStreamInvalidatedError);
    expect(() => translateEvent(event('reshardCollection'), all)).toThrow(UnsupportedEventError);
    expect(() => translateEvent(event('refineCollectionShardKey'), all)).toThrow(
      UnsupportedEventError,
    );
  });

  it('ignores shardCollection and unknown operation types', () => {
    expect(translateEvent(event('shardCollection'), all).kind).toBe('ignore');
    expect(translateEvent(event('somethingNew'), all).kind).toBe('ignore');
  });
});

describe('documentIdentity', () => {
  it('treats numerically equal _ids of different types as the same document', () => {
    const ids = [new Int32(1), Long.fromNumber(1), new Double(1), Decimal128.fromString('1.0'), 1];
    const keys = new Set(ids.map((id) => documentIdentity('d', 'c', { _id: id })));
    expect(keys.size).toBe(1);
  });

  it('keeps different values, types and namespaces apart', () => {
    const a = documentIdentity('d', 'c', { _id: new Double(0.1) });
    const b = documentIdentity('d', 'c', { _id: Decimal128.fromString('0.1') });
    const c = documentIdentity('d', 'c', { _id: '1' });
    const d = documentIdentity('d', 'c', { _id: 1 });
    const e = documentIdentity('d', 'c2', { _id: 1 });
    expect(new Set([a, b, c, d, e]).size).toBe(5);
    const big1 = documentIdentity('d', 'c', { _id: Long.fromString('9007199254740993') });
    const big2 = documentIdentity('d', 'c', { _id: Long.fromString('9007199254740992') });
    expect(big1).not.toBe(big2);
  });

  it('uses only _id (a shard key change keeps the document in its lane)', () => {
    const id = new ObjectId();
    expect(documentIdentity('d', 'c', { sk: 1, _id: id })).toBe(
      documentIdentity('d', 'c', { sk: 2, _id: id }),
    );
  });
});
