import { Timestamp } from 'bson';
import { CheckpointTracker } from './checkpoint-tracker';

const pos = (n: number) => ({ token: { n }, clusterTime: new Timestamp({ t: n, i: 0 }) });

describe('CheckpointTracker', () => {
  it('never moves past an unapplied event', () => {
    const t = new CheckpointTracker();
    const a = t.add(pos(1));
    const b = t.add(pos(2));
    const c = t.add(pos(3));
    t.complete(c);
    t.complete(b);
    expect(t.safePosition).toBeUndefined();
    t.complete(a);
    expect(t.safePosition?.token).toEqual({ n: 3 });
    expect(t.pending).toBe(0);
  });

  it('advances through batch-end positions (idle stream) and keeps the latest time', () => {
    const t = new CheckpointTracker(pos(1));
    t.addDone({ token: { pbrt: 1 }, clusterTime: new Timestamp({ t: 10, i: 0 }) });
    expect(t.safePosition).toEqual({
      token: { pbrt: 1 },
      clusterTime: new Timestamp({ t: 10, i: 0 }),
    });
    // A position without a time keeps the previous time.
    t.addDone({ token: { pbrt: 2 } });
    expect(t.safePosition?.clusterTime).toEqual(new Timestamp({ t: 10, i: 0 }));
  });

  it('does not let a later batch end pass an earlier pending event', () => {
    const t = new CheckpointTracker();
    const a = t.add(pos(1));
    t.addDone({ token: { pbrt: 1 }, clusterTime: new Timestamp({ t: 5, i: 0 }) });
    expect(t.safePosition).toBeUndefined();
    t.complete(a);
    expect(t.safePosition?.token).toEqual({ pbrt: 1 });
  });

  it('notifies on advance and rejects double completion', () => {
    const t = new CheckpointTracker();
    let calls = 0;
    t.onAdvance(() => calls++);
    const a = t.add(pos(1));
    t.complete(a);
    expect(calls).toBe(1);
    expect(() => t.complete(a)).toThrow();
  });

  it('compacts without losing sequence numbers', () => {
    const t = new CheckpointTracker();
    for (let i = 0; i < 5000; i++) t.complete(t.add(pos(i)));
    const s = t.add(pos(9999));
    t.complete(s);
    expect(t.safePosition?.token).toEqual({ n: 9999 });
  });
});
