import { inSlices } from './in-slices';

/** A write that resolves when the test says so, recording what is in flight. */
function gatedWrites() {
  const inFlight = new Set<number[]>();
  const written: number[][] = [];
  const gates: Array<{ slice: number[]; open: (error?: Error) => void }> = [];
  let most = 0;
  const write = (slice: number[]) =>
    new Promise<void>((resolve, reject) => {
      inFlight.add(slice);
      most = Math.max(most, inFlight.size);
      gates.push({
        slice,
        open: (error) => {
          inFlight.delete(slice);
          if (error) reject(error);
          else {
            written.push(slice);
            resolve();
          }
        },
      });
    });
  return { write, gates, written, inFlight, most: () => most };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('inSlices', () => {
  it('writes every item once, in slices of the size, at most `concurrency` at a time', async () => {
    const items = Array.from({ length: 10 }, (_, i) => i);
    const w = gatedWrites();
    const all = inSlices(items, 3, 2, w.write);
    await tick();
    expect(w.inFlight.size).toBe(2);
    // Finish out of order: the later slice first.
    while (w.gates.length > 0) {
      w.gates.pop()!.open();
      await tick();
    }
    await all;
    expect(w.most()).toBe(2);
    expect(w.written.map((s) => s.length).sort()).toEqual([1, 3, 3, 3]);
    expect(w.written.flat().sort((a, b) => a - b)).toEqual(items);
  });

  it('throws the failure only after every slice in flight settled, and starts no other', async () => {
    const items = Array.from({ length: 8 }, (_, i) => i);
    const w = gatedWrites();
    let settled = false;
    const all = inSlices(items, 2, 2, w.write).finally(() => (settled = true));
    all.catch(() => undefined);
    await tick();
    const [first, second] = w.gates;
    first!.open(new Error('refused'));
    await tick();
    // The other slice is still being written: the caller must not see the failure yet.
    expect(settled).toBe(false);
    expect(w.gates).toHaveLength(2);
    second!.open();
    await expect(all).rejects.toThrow('refused');
    expect(w.gates).toHaveLength(2); // nothing started after the failure
    expect(w.written.flat()).toEqual(second!.slice);
  });

  it('does nothing for no items', async () => {
    const write = jest.fn(async () => undefined);
    await inSlices([], 1000, 4, write);
    expect(write).not.toHaveBeenCalled();
  });
});
