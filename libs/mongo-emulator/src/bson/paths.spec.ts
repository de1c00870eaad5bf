import type { Document } from 'bson';
import { getPath, hasPath, queryCandidates, setPath, unsetPath } from './paths';

describe('paths', () => {
  it('queryCandidates traverses arrays and yields leaf arrays whole and expanded', () => {
    const doc = { a: [{ b: 1 }, { b: [2, 3] }, 4, {}] };
    const values = queryCandidates(doc, 'a.b').map((c) => (c.exists ? c.value : 'missing'));
    expect(values).toEqual([1, [2, 3], 2, 3, 'missing']);
    expect(queryCandidates({ a: [5, 6] }, 'a.1').map((c) => c.value)).toEqual([6]);
    expect(queryCandidates({ a: 1 }, 'a.b')).toEqual([
      { value: undefined, exists: false, expanded: false },
    ]);
  });
  it('getPath/hasPath address one location, numeric parts index arrays', () => {
    const doc = { a: [{ b: 1 }], c: { '0': 'x' } };
    expect(getPath(doc, 'a.0.b')).toBe(1);
    expect(getPath(doc, 'c.0')).toBe('x');
    expect(getPath(doc, 'a.b')).toBeUndefined();
    expect(hasPath(doc, 'a.0')).toBe(true);
    expect(hasPath(doc, 'a.1')).toBe(false);
  });
  it('setPath creates documents and pads arrays with null', () => {
    const doc: Document = { a: [1] };
    setPath(doc, 'x.y', 1);
    setPath(doc, 'a.3', 4);
    setPath(doc, 'a.5.k', 6);
    expect(doc).toEqual({ a: [1, null, null, 4, null, { k: 6 }], x: { y: 1 } });
  });
  it('setPath refuses to create fields inside scalars or arrays', () => {
    expect(() => setPath({ a: 1 }, 'a.b', 1)).toThrow(
      expect.objectContaining({ code: 28, message: "Cannot create field 'b' in element {a: 1}" }),
    );
    expect(() => setPath({ a: [1] }, 'a.b', 1)).toThrow(
      expect.objectContaining({
        code: 28,
        message: "Cannot create field 'b' in element {a: [ 1 ]}",
      }),
    );
  });
  it('unsetPath removes fields and nulls array elements', () => {
    const doc: Document = { a: { b: 1 }, c: [1, 2] };
    expect(unsetPath(doc, 'a.b')).toBe(true);
    expect(unsetPath(doc, 'c.0')).toBe(true);
    expect(unsetPath(doc, 'zz')).toBe(false);
    expect(doc).toEqual({ a: {}, c: [null, 2] });
  });
});
