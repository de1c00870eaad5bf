import { Timestamp } from 'bson';

/**
 * The cluster's logical clock. Every write gets a strictly greater Timestamp
 * (seconds since the epoch, increment within the second), like a primary's oplog times.
 */
export class ClusterClock {
  private seconds = 0;
  private increment = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** Allocates the next operation time. */
  tick(): Timestamp {
    const wall = Math.floor(this.now() / 1000);
    if (wall > this.seconds) {
      this.seconds = wall;
      this.increment = 1;
    } else {
      this.increment += 1;
    }
    return new Timestamp({ t: this.seconds, i: this.increment });
  }

  /** The latest allocated time (what `$clusterTime.clusterTime` and `operationTime` report). */
  current(): Timestamp {
    if (this.seconds === 0) return this.tick();
    return new Timestamp({ t: this.seconds, i: this.increment });
  }

  /** Moves the clock forward to at least `ts` (gossip from another node or a restored state). */
  advanceTo(ts: Timestamp): void {
    if (ts.t > this.seconds || (ts.t === this.seconds && ts.i > this.increment)) {
      this.seconds = ts.t;
      this.increment = ts.i;
    }
  }
}

export function compareTimestamps(a: Timestamp, b: Timestamp): number {
  if (a.t !== b.t) return a.t < b.t ? -1 : 1;
  if (a.i !== b.i) return a.i < b.i ? -1 : 1;
  return 0;
}
