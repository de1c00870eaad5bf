import { Double, Int32, Long } from 'bson';
import type { ChangeEvent, UpdateDescription } from './change-event';
import { translateUpdate } from './update-event';

const key = { _id: new Int32(7) };

/** An update as a 6.1+ source sends it with showExpandedEvents: disambiguatedPaths always set. */
function update(desc: UpdateDescription): ChangeEvent {
  return legacyUpdate({ disambiguatedPaths: {}, ...desc });
}

/** An update as the description arrives: without disambiguatedPaths unless `desc` has it. */
function legacyUpdate(desc: UpdateDescription): ChangeEvent {
  return {
    _id: { _data: '82' },
    operationType: 'update',
    ns: { db: 'd', coll: 'c' },
    documentKey: key,
    updateDescription: desc,
  };
}

const lookup = [{ kind: 'lookup', documentKey: key }];

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

  it('falls back to a lookup when a value set holds a field named like an array index', () => {
    // Decoded, {b: 1, "2024": 2} became {"2024": 2, b: 1}: only the source's bytes have its order.
    expect(
      translateUpdate(update({ updatedFields: { scores: { b: 1, '2024': new Int32(2) } } })),
    ).toEqual(lookup);
    expect(translateUpdate(update({ updatedFields: { 'a.0': [{ x: 1, '3': 1 }] } }))).toEqual(
      lookup,
    );
    // An index-like name as a path (a field or an element updated in place) is replayed.
    expect(translateUpdate(update({ updatedFields: { 'scores.2024': new Int32(3) } }))).toEqual([
      { kind: 'update', filter: key, update: { $set: { 'scores.2024': new Int32(3) } } },
    ]);
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

  describe('without disambiguatedPaths (sources before 6.1, or no showExpandedEvents)', () => {
    it('falls back to a lookup for a top-level field named "a.b" (nested $set would be wrong)', () => {
      // Source document {_id: 7, "a.b": 1} updated with $set {"a.b": 2} via a pipeline or a
      // replacement diff: reported exactly like a nested a.b.
      expect(translateUpdate(legacyUpdate({ updatedFields: { 'a.b': 2 } }))).toEqual(lookup);
    });

    it('falls back to a lookup for a nested a.b too (it cannot be told apart)', () => {
      expect(
        translateUpdate(legacyUpdate({ updatedFields: { x: 1 }, removedFields: ['a.b'] })),
      ).toEqual(lookup);
    });

    it('falls back to a lookup for numeric components (array index or field name?)', () => {
      expect(translateUpdate(legacyUpdate({ updatedFields: { 'arr.0': 1 } }))).toEqual(lookup);
      expect(translateUpdate(legacyUpdate({ updatedFields: { 'a.0.b': 1 } }))).toEqual(lookup);
      expect(
        translateUpdate(legacyUpdate({ truncatedArrays: [{ field: 'a.0.arr', newSize: 1 }] })),
      ).toEqual(lookup);
    });

    it('still writes top-level paths, numeric names included', () => {
      expect(
        translateUpdate(legacyUpdate({ updatedFields: { '0': 1, a: 2 }, removedFields: ['b'] })),
      ).toEqual([
        { kind: 'update', filter: key, update: { $set: { '0': 1, a: 2 }, $unset: { b: '' } } },
      ]);
      expect(
        translateUpdate(legacyUpdate({ truncatedArrays: [{ field: 'arr', newSize: 1 }] })),
      ).toEqual([
        { kind: 'update', filter: key, update: { $push: { arr: { $each: [], $slice: 1 } } } },
      ]);
    });

    it('treats a null disambiguatedPaths like an absent one', () => {
      const event = legacyUpdate({ updatedFields: { 'a.b': 1 } });
      event.updateDescription!.disambiguatedPaths = null as never;
      expect(translateUpdate(event)).toEqual(lookup);
    });

    it('replays dotted paths when the source is known to send disambiguatedPaths', () => {
      const options = { sourceDisambiguates: true };
      expect(translateUpdate(legacyUpdate({ updatedFields: { 'a.b': 2 } }), options)).toEqual([
        { kind: 'update', filter: key, update: { $set: { 'a.b': 2 } } },
      ]);
      expect(
        translateUpdate(legacyUpdate({ updatedFields: { 'arr.0': 1 } }), options)[0].kind,
      ).toBe('update');
    });
  });

  describe('with disambiguatedPaths (unchanged behaviour)', () => {
    it('replays a nested a.b when the map does not list it', () => {
      expect(translateUpdate(update({ updatedFields: { 'a.b': 2 } }))).toEqual([
        { kind: 'update', filter: key, update: { $set: { 'a.b': 2 } } },
      ]);
    });

    it('falls back to a lookup for a listed top-level "a.b", whatever the option says', () => {
      const event = update({
        updatedFields: { 'a.b': 2 },
        disambiguatedPaths: { 'a.b': ['a.b'] },
      });
      expect(translateUpdate(event)).toEqual(lookup);
      expect(translateUpdate(event, { sourceDisambiguates: false })).toEqual(lookup);
    });

    it('replays numeric components listed as indexes or field names', () => {
      const event = update({
        updatedFields: { 'arr.0': 1, 'o.1': 2 },
        disambiguatedPaths: { 'arr.0': ['arr', new Int32(0)], 'o.1': ['o', '1'] },
      });
      expect(translateUpdate(event)).toEqual([
        { kind: 'update', filter: key, update: { $set: { 'arr.0': 1, 'o.1': 2 } } },
      ]);
    });
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

describe('sharded sources: a documentKey with shard-key fields', () => {
  const sharded = (desc: UpdateDescription): ChangeEvent => ({
    ...update(desc),
    documentKey: { region: 'eu', 'a.b': 1, _id: new Int32(7) },
  });
  const moved = [
    { kind: 'delete', filter: { _id: new Int32(7) } },
    { kind: 'lookup', documentKey: { _id: new Int32(7) } },
  ];

  it('an update that changed a shard-key field is a move: delete by _id, then the lookup', () => {
    expect(translateUpdate(sharded({ updatedFields: { region: 'eu' } }))).toEqual(moved);
    expect(translateUpdate(sharded({ updatedFields: { a: { b: 1 } } }))).toEqual(moved);
    expect(translateUpdate(sharded({ updatedFields: { 'a.b.c': 1 } }))).toEqual(moved);
    expect(translateUpdate(sharded({ updatedFields: {}, removedFields: ['region'] }))).toEqual(
      moved,
    );
  });

  it('other updates keep the whole documentKey as their filter', () => {
    expect(translateUpdate(sharded({ updatedFields: { ab: 2, regionName: 'x' } }))).toEqual([
      {
        kind: 'update',
        filter: { region: 'eu', 'a.b': 1, _id: new Int32(7) },
        update: { $set: { ab: 2, regionName: 'x' } },
      },
    ]);
  });
});
