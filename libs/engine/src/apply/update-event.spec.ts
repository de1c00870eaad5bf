import { Double, Int32, Long } from 'bson';
import type { ChangeEvent, UpdateDescription } from './change-event';
import { translateUpdate } from './update-event';

const key = { _id: new Int32(7) };

function update(desc: UpdateDescription): ChangeEvent {
  return {
    _id: { _data: '82' },
    operationType: 'update',
    ns: { db: 'd', coll: 'c' },
    documentKey: key,
    updateDescription: desc,
  };
}

describe('translateUpdate', () => {
  it('turns updatedFields into $set on dotted paths, keeping the exact BSON values', () => {
    const i32 = new Int32(5);
    const steps = translateUpdate(
      update({ updatedFields: { 'a.b': i32, c: new Double(1), d: Long.fromNumber(2) } }),
    );
    expect(steps).toHaveLength(1);
    const step = steps[0];
    expect(step).toMatchObject({ kind: 'update', filter: key });
    const set = (step as unknown as { update: { $set: Record<string, unknown> } }).update.$set;
    expect(set['a.b']).toBe(i32);
    expect(set['a.b']).toBeInstanceOf(Int32);
    expect(set.c).toBeInstanceOf(Double);
    expect(set.d).toBeInstanceOf(Long);
  });

  it('turns removedFields into $unset in the same update', () => {
    const [step] = translateUpdate(update({ updatedFields: { x: 1 }, removedFields: ['y.z'] }));
    expect(step).toEqual({
      kind: 'update',
      filter: key,
      update: { $set: { x: 1 }, $unset: { 'y.z': '' } },
    });
  });

  it('truncates arrays BEFORE setting elements inside them, in two steps', () => {
    const steps = translateUpdate(
      update({
        updatedFields: { 'arr.1.b': new Int32(3) },
        truncatedArrays: [{ field: 'arr', newSize: new Int32(2) }],
      }),
    );
    expect(steps).toEqual([
      { kind: 'update', filter: key, update: { $push: { arr: { $each: [], $slice: 2 } } } },
      { kind: 'update', filter: key, update: { $set: { 'arr.1.b': new Int32(3) } } },
    ]);
  });

  it('keeps truncation and unrelated $set in one update when paths do not conflict', () => {
    const steps = translateUpdate(
      update({ updatedFields: { other: 1 }, truncatedArrays: [{ field: 'arr', newSize: 0 }] }),
    );
    expect(steps).toEqual([
      {
        kind: 'update',
        filter: key,
        update: { $push: { arr: { $each: [], $slice: 0 } }, $set: { other: 1 } },
      },
    ]);
  });

  it('splits nested truncations that conflict into separate steps', () => {
    const steps = translateUpdate(
      update({
        truncatedArrays: [
          { field: 'a', newSize: 3 },
          { field: 'a.0.b', newSize: 1 },
        ],
      }),
    );
    expect(steps).toHaveLength(2);
  });

  it('writes numeric field names as dotted paths (resolved against the same shape)', () => {
    const steps = translateUpdate(
      update({
        updatedFields: { 'a.0': 1 },
        disambiguatedPaths: { 'a.0': ['a', '0'] },
      }),
    );
    expect(steps[0]).toMatchObject({ kind: 'update', update: { $set: { 'a.0': 1 } } });
  });

  it('falls back to a lookup when a field name contains a dot', () => {
    const steps = translateUpdate(
      update({
        updatedFields: { 'a.b.c': 1 },
        disambiguatedPaths: { 'a.b.c': ['a.b', 'c'] },
      }),
    );
    expect(steps).toEqual([{ kind: 'lookup', documentKey: key }]);
  });

  it('falls back to a lookup for $-prefixed or empty field names', () => {
    expect(translateUpdate(update({ updatedFields: { 'a.$x': 1 } }))[0].kind).toBe('lookup');
    expect(translateUpdate(update({ removedFields: ['a..b'] }))[0].kind).toBe('lookup');
  });

  it('falls back to a lookup when new sibling fields are out of operator order', () => {
    expect(translateUpdate(update({ updatedFields: { b: 1, a: 1 } }))[0].kind).toBe('lookup');
    expect(translateUpdate(update({ updatedFields: { a: 1, b: 1 } }))[0].kind).toBe('update');
    // Numeric names are ordered numerically (array growth reports arr.9 before arr.10).
    expect(translateUpdate(update({ updatedFields: { 'r.9': 1, 'r.10': 1 } }))[0].kind).toBe(
      'update',
    );
    expect(
      translateUpdate(update({ updatedFields: { b: 1, a: 1 } }), { strictFieldOrder: false })[0]
        .kind,
    ).toBe('update');
  });

  it('produces no write for an empty description', () => {
    expect(translateUpdate(update({ updatedFields: {}, removedFields: [] }))).toEqual([]);
  });

  it('falls back to a lookup when there is no description at all', () => {
    const event = update({});
    delete event.updateDescription;
    expect(translateUpdate(event)).toEqual([{ kind: 'lookup', documentKey: key }]);
  });
});
