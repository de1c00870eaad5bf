import { BSON } from 'bson';
import { EncodedCatalog, recordFingerprint, WrittenCatalog } from './written-catalog';

describe('WrittenCatalog', () => {
  const fp = (text: string) => recordFingerprint(Buffer.from(text));

  it('remembers each key with its fingerprint, place and version, past its first capacity', () => {
    const w = new WrittenCatalog();
    for (let i = 0; i < 1000; i++) w.set(`k${i}`, fp(`record ${i}`), i, i % 7);
    expect(w.size).toBe(1000);
    expect(w.nextPos()).toBe(1000);
    for (const i of [0, 63, 64, 999]) {
      expect(w.matches(`k${i}`, fp(`record ${i}`))).toBe(true);
      expect(w.matches(`k${i}`, fp(`record ${i} changed`))).toBe(false);
      expect(w.pos(`k${i}`)).toBe(i);
      expect(w.version(`k${i}`)).toBe(i % 7);
    }
    expect(w.has('k1000')).toBe(false);
    expect(w.matches('k1000', fp('record 1000'))).toBe(false);
    expect(w.pos('k1000')).toBeUndefined();
    expect(w.version('k1000')).toBeUndefined();
    expect([...w.keys()].slice(0, 3)).toEqual(['k0', 'k1', 'k2']);
  });

  it('overwrites a key in place, copies entries from another and sets versions', () => {
    const a = new WrittenCatalog();
    a.set('x', fp('one'), 5, 1);
    a.set('x', fp('two'), 5, 2);
    expect(a.size).toBe(1);
    expect(a.matches('x', fp('one'))).toBe(false);
    expect(a.matches('x', fp('two'))).toBe(true);
    const b = new WrittenCatalog();
    b.copyFrom(a, 'x');
    b.set('y', fp('y'), 9, -1);
    b.setVersion('y', 3);
    expect(b.matches('x', fp('two'))).toBe(true);
    expect([b.pos('x'), b.version('x'), b.pos('y'), b.version('y')]).toEqual([5, 2, 9, 3]);
    expect(b.nextPos()).toBe(10);
    // The copy is its own: changing the source leaves it as it was.
    a.set('x', fp('three'), 5, 4);
    expect(b.matches('x', fp('two'))).toBe(true);
    expect(b.version('x')).toBe(2);
  });

  it('starts empty', () => {
    const w = new WrittenCatalog();
    expect(w.size).toBe(0);
    expect(w.nextPos()).toBe(0);
  });
});

describe('EncodedCatalog', () => {
  const encode = (record: { key: string }) => BSON.serialize(record);
  const records = Array.from({ length: 3000 }, (_, i) => ({
    key: `k${i}`,
    name: `collection ${i}`.repeat(1 + (i % 5)),
  }));

  it('keeps every record and its fingerprint when nothing is known, packed past its first size', () => {
    const encoded = new EncodedCatalog(records, null, encode);
    expect(encoded.length).toBe(3000);
    for (const i of [0, 1, 1500, 2999]) {
      expect(encoded.keys[i]).toBe(`k${i}`);
      expect(BSON.deserialize(encoded.bytes(i)!)).toEqual(records[i]);
      expect(encoded.digest(i).equals(recordFingerprint(encode(records[i]!)))).toBe(true);
    }
  });

  it('keeps no bytes for a record the written catalog holds with the same fingerprint', () => {
    const written = new WrittenCatalog();
    written.set('k1', recordFingerprint(encode(records[1]!)), 1, 1);
    const before = { key: 'k2', name: 'before' };
    written.set('k2', recordFingerprint(encode(before)), 2, 1);
    const encoded = new EncodedCatalog(records.slice(0, 3), written, encode);
    expect(encoded.bytes(1)).toBeUndefined();
    expect([encoded.kept(0), encoded.kept(1), encoded.kept(2)]).toEqual([true, false, true]);
    expect(encoded.digest(1).equals(recordFingerprint(encode(records[1]!)))).toBe(true);
    expect(BSON.deserialize(encoded.bytes(0)!)).toEqual(records[0]);
    expect(BSON.deserialize(encoded.bytes(2)!)).toEqual(records[2]);
  });

  it('encodes the records as they are when made: later changes to them do not show', () => {
    const live = [{ key: 'a', n: 1 }];
    const encoded = new EncodedCatalog(live, null, encode);
    live[0]!.n = 2;
    expect(BSON.deserialize(encoded.bytes(0)!)).toEqual({ key: 'a', n: 1 });
  });
});
