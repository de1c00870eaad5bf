import { copyOf } from '../catalog/namespace-catalog';
import { isCopied } from './namespace-detail';

describe('isCopied (progress namespaces.copied and the per-namespace state)', () => {
  const done = { status: 'done' };
  const pending = { status: 'pending' };

  it('a namespace under copy counts once every partition of its set is done', () => {
    expect(isCopied('pending', [done, done])).toBe(true);
    expect(isCopied('pending', [done, pending])).toBe(false);
    // Partitions not in yet: nothing copied (never "every one of none").
    expect(isCopied('pending', [])).toBe(false);
  });

  it('a namespace the catalog marks copied (or with nothing to copy) counts', () => {
    expect(isCopied('done', [])).toBe(true);
    expect(isCopied('none', [])).toBe(true);
  });
});

describe('copyOf (a record copy status as of the job phase)', () => {
  it("the initial copy's records are pending until the job's phase is copied, then done", () => {
    for (const phase of ['joining', 'planned', 'prepared'] as const)
      expect(copyOf({ copy: 'initial' }, phase)).toBe('pending');
    expect(copyOf({ copy: 'initial' }, 'copied')).toBe('done');
  });

  it('a record that entered the sync later is pending until its own record says done', () => {
    expect(copyOf({ copy: 'pending' }, 'copied')).toBe('pending');
    expect(copyOf({ copy: 'done' }, 'copied')).toBe('done');
    expect(copyOf({ copy: 'none' }, 'prepared')).toBe('none');
  });
});
