import { Binary, type Document } from 'bson';
import { randomUUID } from 'node:crypto';
import { CommandError } from '../../errors';
import type { CommandContext, CommandDefinition } from '../types';
import { lsidKey, LOGICAL_SESSION_TIMEOUT_MINUTES } from '../../server/sessions';
import { parseFailPointMode } from '../../server/fail-points';
import { emulatorStats } from '../../server/pause-stats';
import {
  asNumber,
  optionalArray,
  optionalDocument,
  requiredBool,
  wrongType,
} from '../../server/values';

/** lsids listed by endSessions / killSessions / refreshSessions. */
function sessionKeys(ctx: CommandContext, field: string): string[] {
  const list = optionalArray(ctx.cmd, field, field) ?? [];
  return list.map((entry, i) => {
    if (!entry || typeof entry !== 'object' || Array.isArray(entry))
      throw wrongType(`${field}.${i}`, entry, 'object');
    return lsidKey(entry as Document);
  });
}

function endSessions(ctx: CommandContext, keys: string[]): void {
  ctx.node.cursors.killForSessions(new Set(keys));
  // Ending a session aborts its open transaction.
  ctx.node.transactions.endSessions(keys);
  ctx.node.sessions.end(keys);
}

export const controlCommands: CommandDefinition[] = [
  {
    // Emulator extension (no such command in mongod): memory and main-thread pause figures of
    // the emulator process, for `npm run bench:memory`.
    name: 'emulatorStats',
    access: 'admin',
    adminOnly: true,
    run(ctx) {
      return {
        ...emulatorStats(ctx.cmd.reset === true, ctx.cmd.heapSpaces === true, ctx.cmd.gc === true),
        ok: 1,
      };
    },
  },
  {
    name: 'setUserWriteBlockMode',
    access: 'admin',
    adminOnly: true,
    async run(ctx) {
      const global = requiredBool(ctx.cmd, 'global', 'setUserWriteBlockMode');
      const node = ctx.node;
      if (!global) {
        node.userWriteBlocking = false;
        return { ok: 1 };
      }
      // mongod takes the global lock in MODE_X first, "to ensure that any ongoing writes have
      // completed": it waits for the open transactions, whose statements and commits still run
      // if the block was off. New writes would queue behind the lock and then be refused: they
      // are refused at once.
      const wasBlocking = node.userWriteBlocking;
      node.userWriteBlocking = true;
      const maxTimeMS = asNumber(ctx.cmd.maxTimeMS);
      const ended = await node.transactions.waitForOpen(
        maxTimeMS && maxTimeMS > 0 ? maxTimeMS : Infinity,
        !wasBlocking,
        ctx.conn.closed,
      );
      if (!ended) {
        // The lock was never granted: the block did not start.
        if (!wasBlocking) node.userWriteBlocking = false;
        throw new CommandError('MaxTimeMSExpired', 'operation exceeded time limit');
      }
      return { ok: 1 };
    },
  },
  {
    name: 'appendOplogNote',
    access: 'admin',
    adminOnly: true,
    run(ctx) {
      const data = optionalDocument(ctx.cmd, 'data', 'appendOplogNote');
      if (!data) throw new CommandError('NoSuchKey', "appendOplogNote must have a 'data' field");
      ctx.node.oplog.append({ op: 'noop', db: '', o: data });
      return { ok: 1 };
    },
  },
  {
    name: 'configureFailPoint',
    access: 'authenticated',
    adminOnly: true,
    run(ctx) {
      const name = ctx.cmd.configureFailPoint;
      if (typeof name !== 'string' || !name) throw wrongType('configureFailPoint', name, 'string');
      if (ctx.cmd.mode === undefined) throw new CommandError('BadValue', "Missing 'mode' field");
      const mode = parseFailPointMode(ctx.cmd.mode);
      const data = optionalDocument(ctx.cmd, 'data', 'configureFailPoint') ?? {};
      const count = ctx.node.failPoints.configure(name, mode, data);
      return { count, ok: 1 };
    },
  },
  {
    name: 'endSessions',
    access: 'authenticated',
    run(ctx) {
      endSessions(ctx, sessionKeys(ctx, 'endSessions'));
      return { ok: 1 };
    },
  },
  {
    name: 'killSessions',
    access: 'authenticated',
    run(ctx) {
      const keys = sessionKeys(ctx, 'killSessions');
      // An empty list kills every session (mongod: all sessions the user may kill).
      endSessions(ctx, keys.length ? keys : ctx.node.sessions.allKeys());
      return { ok: 1 };
    },
  },
  {
    name: 'killAllSessions',
    access: 'admin',
    run(ctx) {
      endSessions(ctx, ctx.node.sessions.allKeys());
      return { ok: 1 };
    },
  },
  {
    name: 'refreshSessions',
    access: 'authenticated',
    run(ctx) {
      const list = optionalArray(ctx.cmd, 'refreshSessions', 'refreshSessions') ?? [];
      for (const entry of list) {
        if (entry && typeof entry === 'object') ctx.node.sessions.touch(entry as Document);
      }
      return { ok: 1 };
    },
  },
  {
    name: 'startSession',
    access: 'authenticated',
    run(ctx) {
      const id = new Binary(
        Buffer.from(randomUUID().replace(/-/g, ''), 'hex'),
        Binary.SUBTYPE_UUID,
      );
      ctx.node.sessions.touch({ id });
      return { id: { id }, timeoutMinutes: LOGICAL_SESSION_TIMEOUT_MINUTES, ok: 1 };
    },
  },
  {
    name: 'commitTransaction',
    access: 'authenticated',
    adminOnly: true,
    run(ctx) {
      const txn = ctx.txn;
      if (!txn) throw new CommandError('NoSuchTransaction', 'no transaction to commit');
      // A retried commit of a committed transaction answers success again.
      if (txn.state === 'inProgress') txn.commit();
      return { ok: 1 };
    },
  },
  {
    name: 'abortTransaction',
    access: 'authenticated',
    adminOnly: true,
    run(ctx) {
      const txn = ctx.txn;
      if (!txn) throw new CommandError('NoSuchTransaction', 'no transaction to abort');
      txn.abort();
      return { ok: 1 };
    },
  },
];
