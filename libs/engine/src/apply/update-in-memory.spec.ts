import { BSON, Int32 } from 'bson';
import { applyUpdateInMemory } from './update-in-memory';
import { IN_MEMORY_UPDATE_CASES } from './update-in-memory.vectors';

describe('applyUpdateInMemory', () => {
  it.each(IN_MEMORY_UPDATE_CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const before = Buffer.from(BSON.serialize(c.doc));
    const result = applyUpdateInMemory(c.doc, c.update);
    if (c.expected === null) {
      expect(result).toBeNull();
    } else {
      // Bytes: values, BSON types and field order.
      expect(result).not.toBeNull();
      expect(Buffer.from(BSON.serialize(result!)).toString('hex')).toBe(
        Buffer.from(BSON.serialize(c.expected)).toString('hex'),
      );
    }
    // The input document (a pending replacement) is never modified.
    expect(Buffer.from(BSON.serialize(c.doc)).equals(before)).toBe(true);
  });

  it('never modifies a value it was given in the update', () => {
    const value = { x: 1 };
    const first = applyUpdateInMemory({ _id: 1 }, { $set: { e: value } })!;
    const second = applyUpdateInMemory(first, { $set: { 'e.y': new Int32(2) } })!;
    expect(value).toEqual({ x: 1 });
    expect(second).toEqual({ _id: 1, e: { x: 1, y: new Int32(2) } });
  });

  it('leaves an update an operation when the document holds a field named like an array index', () => {
    // In BSON the index-like name comes last; decoded, a JS object enumerates it first.
    const bytes = BSON.serialize(
      new Map<string, unknown>([
        ['_id', 1],
        ['name', 'x'],
        [
          'scores',
          new Map<string, unknown>([
            ['b', 1],
            ['2024', 2],
          ]),
        ],
      ]),
    );
    const decoded = BSON.deserialize(bytes);
    expect(Object.keys(decoded.scores as object)).toEqual(['2024', 'b']);
    expect(applyUpdateInMemory(decoded, { $set: { name: 'y' } })).toBeNull();
    // Set by the update itself, at any depth.
    expect(applyUpdateInMemory({ _id: 1 }, { $set: { e: { a: [{ b: 1, '7': 2 }] } } })).toBeNull();
    // Not array indexes: JS keeps their insertion order.
    expect(
      applyUpdateInMemory({ _id: 1, '01': 1, '4294967295': 2 }, { $set: { n: 1 } }),
    ).not.toBeNull();
  });
});
