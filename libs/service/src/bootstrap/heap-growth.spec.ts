import { spawnSync } from 'node:child_process';
import { applyHeapGrowth } from './heap-growth';

describe('applyHeapGrowth', () => {
  it('sets V8 --heap-growing-percent from the launch option', () => {
    const set: string[] = [];
    expect(applyHeapGrowth(50, [], (flags) => set.push(flags))).toBe(true);
    expect(set).toEqual(['--heap-growing-percent=50']);
  });

  it('leaves V8 alone at 0, and when node itself was given the flag', () => {
    const set: string[] = [];
    expect(applyHeapGrowth(0, [], (flags) => set.push(flags))).toBe(false);
    expect(applyHeapGrowth(50, ['--heap-growing-percent=80'], (flags) => set.push(flags))).toBe(
      false,
    );
    expect(applyHeapGrowth(50, ['--heap_growing_percent', '80'], (flags) => set.push(flags))).toBe(
      false,
    );
    expect(set).toEqual([]);
  });

  it('names a flag this node accepts (an unknown V8 flag fails at the command line)', () => {
    const run = (flag: string) =>
      spawnSync(process.execPath, [flag, '-e', '0'], { encoding: 'utf8' }).status;
    expect(run('--heap-growing-percent=50')).toBe(0);
    expect(run('--heap-growing-percent-of-nothing=50')).not.toBe(0);
  });
});
