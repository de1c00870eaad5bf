import { Binary, Long, type Document } from 'bson';
import { detach } from '../bson/codec';
import { CommandError } from '../errors';

/** logicalSessionTimeoutMinutes reported by hello. */
export const LOGICAL_SESSION_TIMEOUT_MINUTES = 30;

/** Stable string form of an lsid (`{id: UUID, uid?: ...}`), used as a map key. */
export function lsidKey(lsid: Document): string {
  const id = lsid.id;
  if (id instanceof Binary) return Buffer.from(id.value()).toString('hex');
  if (id instanceof Uint8Array) return Buffer.from(id).toString('hex');
  throw new CommandError(
    'TypeMismatch',
    `BSON field 'OperationSessionInfo.lsid.id' is the wrong type, expected type 'binData'`,
  );
}

interface RetryableState {
  txnNumber: bigint;
  /** The reply of the write, once it completed; retries get it back unchanged. */
  reply?: Document;
  /** In flight: a concurrent retry waits for the first attempt instead of re-applying. */
  pending?: Promise<Document>;
}

interface SessionState {
  lsid: Document;
  lastUse: number;
  retryable?: RetryableState;
}

export type RetryableWriteCheck =
  | { kind: 'execute'; record: (reply: Document) => void; abandon: () => void }
  | { kind: 'replay'; reply: Promise<Document> };

/**
 * Logical sessions and the retryable-write table. mongod keeps, per session, the results of
 * the statements executed under the latest txnNumber (config.transactions); we keep the
 * whole reply of the latest (lsid, txnNumber), which is what a retry needs.
 */
export class SessionRegistry {
  private readonly sessions = new Map<string, SessionState>();

  /** Records use of a session (any command carrying lsid) and returns its key. */
  touch(lsid: Document, now = Date.now()): string {
    const key = lsidKey(lsid);
    const state = this.sessions.get(key);
    if (state) state.lastUse = now;
    // The lsid is kept: its UUID must not stay a view of the command's message buffer.
    else this.sessions.set(key, { lsid: detach(lsid), lastUse: now });
    return key;
  }

  /**
   * The session's own copy of its lsid (see touch): writes record it in their oplog entries, so
   * a session's entries share one small object instead of each pinning its command's buffer.
   */
  ownLsid(key: string): Document | undefined {
    return this.sessions.get(key)?.lsid;
  }

  get activeCount(): number {
    return this.sessions.size;
  }

  /**
   * Called before a retryable write runs. A known (lsid, txnNumber) replays the recorded
   * reply; an older txnNumber is refused like mongod (TransactionTooOld).
   */
  checkRetryableWrite(key: string, txnNumber: Long): RetryableWriteCheck {
    const state = this.sessions.get(key);
    if (!state) throw new Error('session must be touched before a retryable write');
    const txn = txnNumber.toBigInt();
    const current = state.retryable;
    if (current && txn < current.txnNumber) {
      throw new CommandError(
        'TransactionTooOld',
        `Retryable write with txnNumber ${txn} is prohibited on session ${key} because a newer retryable write with txnNumber ${current.txnNumber} has already started on this session.`,
      );
    }
    if (current && txn === current.txnNumber) {
      if (current.reply) return { kind: 'replay', reply: Promise.resolve(current.reply) };
      if (current.pending) return { kind: 'replay', reply: current.pending };
    }
    let resolve!: (reply: Document) => void;
    let reject!: (err: unknown) => void;
    const pending = new Promise<Document>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    pending.catch(() => undefined);
    const entry: RetryableState = { txnNumber: txn, pending };
    state.retryable = entry;
    return {
      kind: 'execute',
      record: (reply) => {
        entry.reply = reply;
        entry.pending = undefined;
        resolve(reply);
      },
      // The write failed before applying anything: a retry must execute it again.
      abandon: () => {
        if (state.retryable === entry) state.retryable = undefined;
        reject(
          new CommandError(
            'WriteConflict',
            'the first attempt of this retryable write failed; retry again',
          ),
        );
      },
    };
  }

  /** endSessions / killSessions / expiry. Returns the keys that existed. */
  end(keys: Iterable<string>): void {
    for (const key of keys) this.sessions.delete(key);
  }

  allKeys(): string[] {
    return [...this.sessions.keys()];
  }

  /** Sessions idle longer than logicalSessionTimeoutMinutes expire (mongod's session reaper). */
  reapExpired(now = Date.now(), timeoutMs = LOGICAL_SESSION_TIMEOUT_MINUTES * 60_000): Set<string> {
    const expired = new Set<string>();
    for (const [key, state] of this.sessions) {
      if (now - state.lastUse > timeoutMs) expired.add(key);
    }
    this.end(expired);
    return expired;
  }
}
