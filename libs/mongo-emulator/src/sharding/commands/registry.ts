import type { RouterCommandDefinition } from './types';
import { helloCommand } from './hello';
import { forwardedToFirstShardCommands } from './forwarded';
import { appendOplogNoteCommand, broadcastCommands } from './broadcast';
import { notOnMongosCommands } from './not-on-mongos';
import { isDbGridCommand } from './is-db-grid';
import { listShardsCommand } from './list-shards';
import { enableShardingCommand } from './enable-sharding';
import { shardCollectionCommand } from './shard-collection';
import { listDatabasesCommand } from './list-databases';
import { dbStatsCommand } from './db-stats';
import { getMoreCommand } from './get-more';
import { killCursorsCommand } from './kill-cursors';
import { dropDatabaseCommand } from './drop-database';
import { dropCommand } from './drop';
import { movePrimaryCommand } from './move-primary';
import { moveChunkCommand, moveRangeCommand } from './move-chunk';
import { splitCommand } from './split';
import { balancerCommands } from './balancer';
import { setAllowMigrationsCommand } from './set-allow-migrations';

/** The commands a router handles itself, by name and alias (mongos's own command registry). */
export class RouterCommandRegistry {
  private readonly byName = new Map<string, RouterCommandDefinition>();

  constructor(definitions: RouterCommandDefinition[]) {
    for (const def of definitions) {
      for (const name of [def.name, ...(def.aliases ?? [])]) {
        if (this.byName.has(name)) throw new Error(`router command ${name} registered twice`);
        this.byName.set(name, def);
      }
    }
  }

  get(name: string): RouterCommandDefinition | undefined {
    return this.byName.get(name);
  }
}

export function defaultRouterCommands(): RouterCommandRegistry {
  return new RouterCommandRegistry([
    helloCommand,
    ...forwardedToFirstShardCommands,
    ...broadcastCommands,
    appendOplogNoteCommand,
    ...notOnMongosCommands,
    isDbGridCommand,
    listShardsCommand,
    enableShardingCommand,
    shardCollectionCommand,
    listDatabasesCommand,
    dbStatsCommand,
    getMoreCommand,
    killCursorsCommand,
    dropDatabaseCommand,
    dropCommand,
    movePrimaryCommand,
    moveChunkCommand,
    moveRangeCommand,
    splitCommand,
    ...balancerCommands,
    setAllowMigrationsCommand,
  ]);
}
