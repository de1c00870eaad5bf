import type { Document } from 'bson';
import type { ConnectionContext } from '../../commands/types';
import type { MongosRouter } from '../router';

/** What a router command runs with: the router, the request and its connection. */
export interface RouterCommandContext {
  readonly router: MongosRouter;
  /** The command document as received. */
  readonly body: Document;
  readonly conn: ConnectionContext;
  /** `$db` of the request. */
  readonly db: string;
  /** The name the command was sent under (an alias keeps its spelling). */
  readonly name: string;
}

/**
 * A command mongos answers itself (or routes in its own way). Commands without a definition
 * are routed by namespace: to the owning shards of a sharded collection, else to the
 * database's primary shard.
 */
export interface RouterCommandDefinition {
  name: string;
  aliases?: string[];
  run(ctx: RouterCommandContext): Promise<Document> | Document;
}
