import type { JobRecord, NamespaceRecord, PartitionRecord } from './job-store';
import { partitionVisibility } from './job-store';

const ns = (key: string, partitionSet?: number) =>
  ({ key, ...(partitionSet !== undefined ? { partitionSet } : {}) }) as unknown as NamespaceRecord;
const partition = (key: string, set: number) => ({ key, set }) as unknown as PartitionRecord;

describe('partitionVisibility', () => {
  it('shows a partition only when its namespace record names its set', () => {
    const visible = partitionVisibility({
      namespaces: [ns('a', 2), ns('b'), ns('d', 1), ns('d', 3)],
    } as unknown as JobRecord);
    expect(
      [
        partition('a', 2),
        partition('a', 1), // an older set of a
        partition('b', 1), // b names no set yet
        partition('c', 1), // no such namespace
        partition('d', 1),
        partition('d', 3),
        partition('d', 2),
      ].map(visible),
    ).toEqual([true, false, false, false, true, true, false]);
  });
});
