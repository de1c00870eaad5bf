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
});
