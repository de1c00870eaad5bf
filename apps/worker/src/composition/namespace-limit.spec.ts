import { namespaceLimit } from './create-sync-engine';

describe('namespaceLimit (the most namespaces a worker heap holds)', () => {
  it('grows with the heap limit and names it', () => {
    const MiB = 1024 * 1024;
    const small = namespaceLimit(2048 * MiB);
    const large = namespaceLimit(8192 * MiB);
    expect(small.limit).toBe(Math.floor(((2048 - 384) * MiB) / (8 * 1024)));
    expect(large.limit).toBeGreaterThan(4 * small.limit - 1);
    expect(small.why).toContain('2048 MiB');
    // Node's default heap on a 64-bit host (~4 GiB) holds over 400,000 namespaces; the bench's
    // check of the bound (100,000 namespaces with --max-old-space-size=1120: a V8 heap limit of
    // 1,168 MiB) is admitted.
    expect(namespaceLimit(4144 * MiB).limit).toBeGreaterThan(400_000);
    expect(namespaceLimit(1168 * MiB).limit).toBeGreaterThanOrEqual(100_000);
    // Never below 1,000, whatever the heap.
    expect(namespaceLimit(256 * MiB).limit).toBe(1_000);
  });
});
