import { recordFingerprint, WrittenCatalog } from './written-catalog';

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
