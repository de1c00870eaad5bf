import { BSON, Double, Int32 } from 'bson';
import { digestDocuments, digestOf, SetDigest } from './range-digest';

const raw = (doc: Record<string, unknown>) => BSON.serialize(doc);

describe('SetDigest (the copy digests what it reads; the verifier the destination)', () => {
  const docs = [
    raw({ _id: 1, v: new Int32(1) }),
    raw({ _id: 2, s: 'two', n: { a: 1, b: 2 } }),
    raw({ _id: 3, v: new Double(3) }),
  ];
  const of = (list: Uint8Array[]) => {
    const d = new SetDigest();
    for (const r of list) d.add(r);
    return d.result();
  };

  it('is the same whatever order the documents come in, with their count and bytes', () => {
    const a = of(docs);
    expect(of([docs[2]!, docs[0]!, docs[1]!])).toEqual(a);
    expect(a.count).toBe(3);
    expect(a.bytes).toBe(docs.reduce((n, d) => n + d.byteLength, 0));
    expect(a.hash).toMatch(/^set:[0-9a-f]{64}$/);
  });

  it('changes with a missing or extra document, another value, field order or number type', () => {
    const a = of(docs);
    expect(of(docs.slice(1)).hash).not.toBe(a.hash);
    expect(of([...docs, raw({ _id: 4 })]).hash).not.toBe(a.hash);
    const other = (doc: Record<string, unknown>) => of([docs[0]!, raw(doc), docs[2]!]).hash;
    expect(other({ _id: 2, s: 'twO', n: { a: 1, b: 2 } })).not.toBe(a.hash);
    expect(other({ _id: 2, s: 'two', n: { b: 2, a: 1 } })).not.toBe(a.hash);
    expect(of([raw({ _id: 1, v: new Double(1) }), docs[1]!, docs[2]!]).hash).not.toBe(a.hash);
  });

  it('is what an unordered digest gives, and never equal to an ordered one', async () => {
    expect(await digestOf({ unordered: true }, [docs.slice(0, 1), docs.slice(1)])).toEqual(
      of(docs),
    );
    const ordered = await digestDocuments([docs]);
    expect(await digestOf({}, [docs])).toEqual(ordered);
    expect(ordered.hash).not.toBe(of(docs).hash);
  });
});
