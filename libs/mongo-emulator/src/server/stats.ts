import type { Document } from 'bson';

function count(v: unknown): number {
  return typeof v === 'number' ? v : typeof v === 'object' && v !== null ? Number(v) : 0;
}

/** Counters reported by serverStatus (connections, opcounters), shared by a node's servers. */
export class ServerStats {
  readonly startedAt = Date.now();
  connectionsCurrent = 0;
  connectionsTotalCreated = 0;
  readonly opcounters = { insert: 0, query: 0, update: 0, delete: 0, getmore: 0, command: 0 };
  /**
   * serverStatus `metrics.document` (NumberLong counters): documents returned by find,
   * aggregate and getMore batches (a shard counts what it hands the router), inserted
   * (inserts and upserts), updated (documents an update matched, not only those it modified)
   * and deleted by this node's commands.
   */
  readonly document = { deleted: 0, inserted: 0, returned: 0, updated: 0 };
  /** serverStatus `metrics.commands`: per command name, the runs and the failed ones. */
  readonly commands = new Map<string, { total: number; failed: number }>();

  /** Adds a successful command's documents to `metrics.document`. */
  countDocuments(name: string, cmd: Document, reply: Document): void {
    if (count(reply.ok) === 0) return;
    const d = this.document;
    switch (name) {
      case 'find':
      case 'aggregate':
      case 'getMore': {
        const cursor = reply.cursor as Document | undefined;
        const batch = (cursor?.firstBatch ?? cursor?.nextBatch) as unknown[] | undefined;
        if (Array.isArray(batch)) d.returned += batch.length;
        break;
      }
      case 'insert':
        d.inserted += count(reply.n);
        break;
      case 'update': {
        const upserted = Array.isArray(reply.upserted) ? reply.upserted.length : 0;
        d.inserted += upserted;
        d.updated += Math.max(0, count(reply.n) - upserted);
        break;
      }
      case 'delete':
        d.deleted += count(reply.n);
        break;
      case 'findAndModify': {
        const le = (reply.lastErrorObject ?? {}) as Document;
        const n = count(le.n);
        if (cmd.remove === true) d.deleted += n;
        else if (le.upserted !== undefined) d.inserted += n;
        else d.updated += n;
        break;
      }
      default:
        break;
    }
  }

  countCommand(name: string): void {
    const counts = this.commands.get(name);
    if (counts) counts.total += 1;
    else this.commands.set(name, { total: 1, failed: 0 });
    switch (name) {
      case 'insert':
        this.opcounters.insert += 1;
        break;
      case 'find':
        this.opcounters.query += 1;
        break;
      case 'update':
        this.opcounters.update += 1;
        break;
      case 'delete':
        this.opcounters.delete += 1;
        break;
      case 'getMore':
        this.opcounters.getmore += 1;
        break;
      default:
        this.opcounters.command += 1;
    }
  }

  /** A command counted by `countCommand` that answered with an error. */
  countFailure(name: string): void {
    const counts = this.commands.get(name);
    if (counts) counts.failed += 1;
  }
}

const statsByOwner = new WeakMap<object, ServerStats>();

/** The stats object of a node (created on first use), so admin commands can report them. */
export function serverStatsOf(owner: object): ServerStats {
  let stats = statsByOwner.get(owner);
  if (!stats) {
    stats = new ServerStats();
    statsByOwner.set(owner, stats);
  }
  return stats;
}
