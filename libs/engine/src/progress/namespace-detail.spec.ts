import type { NamespaceRecord } from '../ports/job-store';
import { isCopied } from './namespace-detail';

describe('isCopied (progress namespaces.copied and the per-namespace state)', () => {
  const record = (copy: NamespaceRecord['copy']) => ({ copy }) as NamespaceRecord;
  const done = { status: 'done' };
  const pending = { status: 'pending' };

  it('a namespace under copy counts once every partition of its set is done', () => {
    expect(isCopied(record('pending'), [done, done])).toBe(true);
    expect(isCopied(record('pending'), [done, pending])).toBe(false);
    // Partitions not in yet: nothing copied (never "every one of none").
    expect(isCopied(record('pending'), [])).toBe(false);
  });

  it('a namespace the catalog marks copied (or with nothing to copy) counts', () => {
    expect(isCopied(record('done'), [])).toBe(true);
    expect(isCopied(record('none'), [])).toBe(true);
  });
});
