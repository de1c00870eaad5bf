/** Counters reported by serverStatus (connections, opcounters), shared by a node's servers. */
export class ServerStats {
  readonly startedAt = Date.now();
  connectionsCurrent = 0;
  connectionsTotalCreated = 0;
  readonly opcounters = { insert: 0, query: 0, update: 0, delete: 0, getmore: 0, command: 0 };

  countCommand(name: string): void {
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
