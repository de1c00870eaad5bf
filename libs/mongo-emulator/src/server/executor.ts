import type { Document } from 'bson';
import type { ConnectionContext } from '../commands/types';
import type { ServerStats } from './stats';

/**
 * What the wire server needs from whatever answers commands. A replica-set member uses
 * NodeCommandExecutor; a future mongos router implements the same interface by routing
 * to shards, so the wire layer needs no change.
 */
export interface CommandExecutor {
  /**
   * Runs one command (first key = name, `$db` set). Never rejects: failures become
   * `{ok: 0, ...}` replies. May reject with CloseConnection to drop the socket unanswered.
   */
  execute(body: Document, conn: ConnectionContext): Promise<Document>;
  readonly stats: ServerStats;
  connectionClosed?(conn: ConnectionContext): void;
}

/** Thrown to make the wire server close the connection without replying (failCommand closeConnection). */
export class CloseConnection extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'CloseConnection';
  }
}
