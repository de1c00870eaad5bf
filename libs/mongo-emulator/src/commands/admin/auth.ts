import type { Document } from 'bson';
import { CommandError } from '../../errors';
import type { CommandDefinition } from '../types';
import {
  authenticationFailed,
  continueScram,
  startScram,
  type ScramConversation,
} from '../../auth/scram';
import { privilegesOf } from '../../auth/roles';
import { asNumber, optionalBool } from '../../server/values';

export const authCommands: CommandDefinition[] = [
  {
    name: 'saslStart',
    access: 'none',
    run(ctx) {
      const { conversation, reply } = startScram(ctx.node.users, ctx.db, ctx.cmd);
      ctx.conn.sasl.set(reply.conversationId as number, conversation);
      return { ...reply, ok: 1 };
    },
  },
  {
    name: 'saslContinue',
    access: 'none',
    run(ctx) {
      const id = asNumber(ctx.cmd.conversationId);
      if (id === undefined) {
        throw new CommandError(
          'TypeMismatch',
          "BSON field 'saslContinue.conversationId' is missing or not a number",
        );
      }
      const conversation = ctx.conn.sasl.get(id) as ScramConversation | undefined;
      if (!conversation) throw new CommandError('ProtocolError', 'No SASL session state found');
      if (conversation.user.db !== ctx.db) {
        ctx.conn.sasl.delete(id);
        throw authenticationFailed();
      }
      let step;
      try {
        step = continueScram(conversation, ctx.cmd.payload);
      } catch (err) {
        ctx.conn.sasl.delete(id);
        throw err;
      }
      if (step.authenticated) {
        ctx.conn.sasl.delete(id);
        // MongoDB 7.0 allows one authenticated user per connection.
        ctx.conn.users = [step.authenticated];
      }
      return { ...step.reply, ok: 1 };
    },
  },
  {
    name: 'logout',
    access: 'none',
    run(ctx) {
      ctx.conn.users = ctx.conn.users.filter((u) => u.db !== ctx.db);
      return { ok: 1 };
    },
  },
  {
    name: 'connectionStatus',
    access: 'none',
    run(ctx) {
      const users = ctx.conn.users;
      const authInfo: Document = {
        authenticatedUsers: users.map((u) => ({ user: u.user, db: u.db })),
        authenticatedUserRoles: users.flatMap((u) =>
          u.roles.map((r) => ({ role: r.role, db: r.db })),
        ),
      };
      if (optionalBool(ctx.cmd, 'showPrivileges', 'connectionStatus')) {
        authInfo.authenticatedUserPrivileges = users.flatMap((u) =>
          u.roles.flatMap((r) =>
            privilegesOf(r).map((p) => ({
              resource:
                'cluster' in p.resource
                  ? { cluster: true }
                  : 'db' in p.resource
                    ? { db: p.resource.db, collection: '' }
                    : 'anyDb' in p.resource
                      ? { anyResource: true }
                      : { db: '', collection: '' },
              actions: [...p.actions].sort(),
            })),
          ),
        );
      }
      return { authInfo, ok: 1 };
    },
  },
];
