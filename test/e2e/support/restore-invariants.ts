import type { Progress } from './harness';

const ORDER = ['RUNNING', 'COMMITTING', 'COMMITTED'];

type Restored = Progress & Record<string, unknown>;

/**
 * What a crash loop checks after every restore: the restored job keeps everything the sync had
 * reached before the kill — no failure, the same syncID, a state that never goes back (nor to
 * RUNNING once a commit was requested), `canWrite` true once COMMITTED, false before the commit
 * and never lost once true (it turns true during the commit, when the destination is final), copied namespaces
 * and the source's write block never lost, copied bytes within the total — and, when given,
 * exactly `namespaces` in the catalog.
 */
export class RestoreInvariants {
  /** Set once the test requested the commit: a restore must never forget it. */
  commitRequested = false;
  private syncID: string | null = null;
  private state = 'RUNNING';
  private canWrite = false;
  private namespacesCopied = 0;
  private sourceWriteBlocked = false;

  constructor(private readonly namespaces?: number) {}

  check(p: Restored, kill: number): void {
    const where = `after kill ${kill}: ${JSON.stringify(p)}`;
    if (p.failure || p.error) throw new Error(`the sync failed ${where}`);
    if (!ORDER.includes(p.state)) throw new Error(`unexpected state ${where}`);
    if (ORDER.indexOf(p.state) < ORDER.indexOf(this.state))
      throw new Error(`the state went back from ${this.state} ${where}`);
    if (this.commitRequested && p.state === 'RUNNING')
      throw new Error(`a requested commit was forgotten ${where}`);
    if (p.syncID === null || (this.syncID !== null && p.syncID !== this.syncID))
      throw new Error(`the syncID changed ${where}`);
    // canWrite turns true during the commit, once the destination is final (its step
    // destinationUnblocked is recorded): a kill between that write and the one that records
    // COMMITTED restores COMMITTING with canWrite true. Never before the commit, never lost.
    if (p.state === 'COMMITTED' && !p.canWrite)
      throw new Error(`canWrite must be true once COMMITTED ${where}`);
    if (p.canWrite && p.state === 'RUNNING')
      throw new Error(`canWrite must be false before the commit ${where}`);
    if (this.canWrite && !p.canWrite) throw new Error(`canWrite went back to false ${where}`);
    const { total, copied } = namespacesOf(p);
    if (this.namespaces !== undefined && total !== this.namespaces)
      throw new Error(`the catalog holds ${total} namespaces, not ${this.namespaces}, ${where}`);
    if (copied < this.namespacesCopied)
      throw new Error(`copied namespaces went back from ${this.namespacesCopied} ${where}`);
    if (this.sourceWriteBlocked && p.sourceWriteBlocked !== true)
      throw new Error(`the source write block was lost ${where}`);
    const copy = p.collectionCopy;
    if (copy && copy.estimatedCopiedBytes > copy.estimatedTotalBytes)
      throw new Error(`copied bytes exceed the total ${where}`);
    this.syncID = p.syncID;
    this.state = p.state;
    this.canWrite ||= p.canWrite === true;
    this.namespacesCopied = copied;
    this.sourceWriteBlocked ||= p.sourceWriteBlocked === true;
  }
}

/** progress `namespaces`: the catalog's size and how many are copied (0 when absent). */
export function namespacesOf(p: Progress | null): { total: number; copied: number } {
  const ns = (p as Restored | null)?.namespaces as { total?: number; copied?: number } | undefined;
  return { total: ns?.total ?? 0, copied: ns?.copied ?? 0 };
}
