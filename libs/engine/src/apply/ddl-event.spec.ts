import { Binary, Int32, Long } from 'bson';
import type { ChangeEvent } from './change-event';
import { translateDdl } from './ddl-event';
import { RELAXED_TTL_SECONDS } from '../prepare/index-relaxation';

const all = () => true;
const only =
  (...names: string[]) =>
  (db: string, coll: string) =>
    names.includes(`${db}.${coll}`);

function ddl(operationType: string, extra: Partial<ChangeEvent> = {}): ChangeEvent {
  return { _id: { _data: '82' }, operationType, ns: { db: 'd', coll: 'c' }, ...extra };
}

describe('translateDdl', () => {
  it('create → createCollection with the options, without the derived idIndex', () => {
    const actions = translateDdl(
      ddl('create', {
        operationDescription: {
          idIndex: { v: 2, key: { _id: 1 }, name: '_id_' },
          capped: true,
          size: new Int32(1024),
          validator: { a: 1 },
        },
      }),
      all,
    );
    expect(actions).toEqual([
      {
        kind: 'createCollection',
        ns: { db: 'd', coll: 'c' },
        options: { capped: true, size: new Int32(1024), validator: { a: 1 } },
      },
    ]);
  });

  it('drop and dropDatabase', () => {
    expect(translateDdl(ddl('drop'), all)).toEqual([
      { kind: 'dropCollection', ns: { db: 'd', coll: 'c' } },
    ]);
    expect(translateDdl(ddl('dropDatabase', { ns: { db: 'd' } }), all)).toEqual([
      { kind: 'dropDatabase', db: 'd' },
    ]);
    expect(translateDdl(ddl('drop'), () => false)).toEqual([]);
    expect(
      translateDdl(ddl('dropDatabase', { ns: { db: 'sync_reserved_for_internal_use' } }), all),
    ).toEqual([]);
  });

  describe('rename follows the filter', () => {
    const rename = (toDb: string, toColl: string) =>
      ddl('rename', {
        to: { db: toDb, coll: toColl },
        operationDescription: { to: { db: toDb, coll: toColl }, dropTarget: new Binary() },
      });

    it('selected → selected: rename (also across databases)', () => {
      expect(translateDdl(rename('e', 'x'), only('d.c', 'e.x'))).toEqual([
        { kind: 'renameCollection', from: { db: 'd', coll: 'c' }, to: { db: 'e', coll: 'x' } },
      ]);
    });
    it('selected → not selected: drop the old name', () => {
      expect(translateDdl(rename('d', 'gone'), only('d.c'))).toEqual([
        { kind: 'dropCollection', ns: { db: 'd', coll: 'c' } },
      ]);
    });
    it('not selected → selected: create + copy', () => {
      expect(translateDdl(rename('d', 'in'), only('d.in'))).toEqual([
        { kind: 'needsCopy', ns: { db: 'd', coll: 'in' } },
      ]);
    });
    it('neither selected: nothing', () => {
      expect(translateDdl(rename('d', 'x'), only())).toEqual([]);
    });
    it('reads the target from `to` when there is no operationDescription', () => {
      const e = ddl('rename', { to: { db: 'd', coll: 'x' } });
      expect(translateDdl(e, all)).toMatchObject([{ kind: 'renameCollection' }]);
    });
  });

  const indexEvent = () =>
    ddl('createIndexes', {
      operationDescription: {
        indexes: [
          { v: 2, key: { a: 1 }, name: 'a_1', unique: true },
          { v: 2, key: { t: 1 }, name: 't_1', expireAfterSeconds: new Int32(60) },
          { v: 2, key: { p: 1 }, name: 'p_1' },
        ],
      },
    });

  it('createIndexes relaxes unique and TTL (as the copy does) and records them for commit', () => {
    const [action] = translateDdl(indexEvent(), all);
    expect(action).toMatchObject({
      kind: 'createIndexes',
      ns: { db: 'd', coll: 'c' },
      specs: [
        { v: 2, key: { a: 1 }, name: 'a_1' },
        { v: 2, key: { t: 1 }, name: 't_1', expireAfterSeconds: RELAXED_TTL_SECONDS },
        { v: 2, key: { p: 1 }, name: 'p_1' },
      ],
      relaxed: [
        { name: 'a_1', relaxedUnique: true, relaxedExpireAfterSeconds: false },
        { name: 't_1', relaxedUnique: false, relaxedExpireAfterSeconds: true },
      ],
    });
    expect((action as { specs: object[] }).specs[0]).not.toHaveProperty('unique');
  });

  it('replays no index DDL with buildIndexes = never', () => {
    expect(translateDdl(indexEvent(), all, { buildIndexes: 'never' })).toEqual([]);
    const drop = ddl('dropIndexes', { operationDescription: { indexes: [{ name: 'a_1' }] } });
    expect(translateDdl(drop, all, { buildIndexes: 'never' })).toEqual([]);
  });

  it('dropIndexes → one drop per name', () => {
    const actions = translateDdl(
      ddl('dropIndexes', {
        operationDescription: { indexes: [{ v: 2, key: { a: 1 }, name: 'a_1' }] },
      }),
      all,
    );
    expect(actions).toEqual([{ kind: 'dropIndexes', ns: { db: 'd', coll: 'c' }, names: ['a_1'] }]);
  });

  it('modify records index option changes (kept relaxed) and applies collection options', () => {
    const ns = { db: 'd', coll: 'c' };
    const modify = (index: object) => ddl('modify', { operationDescription: { index } });
    expect(translateDdl(modify({ name: 'a_1', hidden: true }), all)).toEqual([
      { kind: 'recordIndexChange', ns, index: { name: 'a_1', hidden: true } },
    ]);
    expect(
      translateDdl(modify({ name: 't_1', expireAfterSeconds: Long.fromNumber(9) }), all),
    ).toEqual([{ kind: 'recordIndexChange', ns, index: { name: 't_1', expireAfterSeconds: 9 } }]);
    expect(translateDdl(modify({ keyPattern: { u: 1 }, unique: true }), all)).toEqual([
      { kind: 'recordIndexChange', ns, index: { keyPattern: { u: 1 }, unique: true } },
    ]);
    expect(
      translateDdl(ddl('modify', { operationDescription: { validationLevel: 'off' } }), all),
    ).toEqual([{ kind: 'collMod', ns, options: { validationLevel: 'off' } }]);
  });
});
