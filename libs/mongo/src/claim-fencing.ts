import { shardClaimLost, type ClaimGuard } from '@sync/engine';
import type { Document } from 'bson';
import type { Collection } from 'mongodb';
import { toNumber } from './exact-bson';
import { wrapMethods } from './wrap-methods';

/** The field of the metadata documents that records the claim epoch of their last writer. */
export const CLAIM_EPOCH = 'claimEpoch';

/**
 * Fencing of a per-shard worker's destination writes, for the adapters: every write first asks
 * the lease (`check`: throws ShardClaimLost once the claim is lost or its lease ran out), and a
 * metadata write also carries the claim epoch in its filter (`filter`) and its update, so that
 * once a successor stamped its newer epoch (CoordinationStore.fence), an old holder's write
 * matches nothing (`refused`: ShardClaimLost). Without a guard (a lone worker), or before any
 * claim is held, every write passes unchanged.
 */
export class Fencing {
  constructor(readonly guard?: ClaimGuard) {}

  /** Before a write: throws when the claim is lost; returns the epoch to carry, if any. */
  check(): number | undefined {
    this.guard?.assertHeld();
    return this.guard?.epoch();
  }

  /** The filter part that matches only documents no newer epoch has stamped (`field` ≤ epoch). */
  filter(epoch: number | undefined, field = CLAIM_EPOCH): Document {
    return epoch === undefined ? {} : { [field]: { $not: { $gt: epoch } } };
  }

  /** The claim was lost: a successor's epoch refused `what` (the holder stops at once). */
  refused(what: string): Error {
    const error = shardClaimLost(
      this.guard?.worker ?? '?',
      `${what} was refused: another worker holds a newer claim epoch`,
    );
    this.guard?.lose(error);
    return this.guard?.lost ?? error;
  }

  /**
   * After a write that matched nothing: throws ShardClaimLost when the document exists with a
   * newer epoch than `epoch` (else the document is simply absent, as before fencing).
   */
  async confirm(
    collection: Collection<Document>,
    filter: Document,
    epoch: number | undefined,
    what: string,
    field = CLAIM_EPOCH,
  ): Promise<void> {
    if (epoch === undefined) return;
    const doc = await collection.findOne(filter, { projection: { [field]: 1 } });
    const stamped = doc ? epochAt(doc, field) : undefined;
    if (stamped !== undefined && stamped > epoch) throw this.refused(what);
  }
}

/** A write refused by the epoch in its filter whose upsert then collided with the document. */
export { isDuplicateKey } from './fault-labelling';

function epochAt(doc: Document, path: string): number | undefined {
  let value: unknown = doc;
  for (const part of path.split('.')) value = (value as Document | undefined)?.[part];
  return value === undefined || value === null ? undefined : toNumber(value);
}

/**
 * `target` with its `methods` (the writes) checking the lease first: for ports that carry no
 * epoch (the watermarks, the source's write blocking and no-ops).
 */
export function leaseGuarded<T extends object>(
  target: T,
  guard: ClaimGuard | undefined,
  methods: ReadonlyArray<keyof T & string>,
): T {
  if (!guard) return target;
  const guarded = new Set<PropertyKey>(methods);
  return wrapMethods(target, (property, call) =>
    guarded.has(property)
      ? (...args: unknown[]) => {
          guard.assertHeld();
          return call(...args);
        }
      : null,
  );
}
