import { Long, ObjectId, type Document } from 'bson';
import { CommandError } from '../../errors';
import { TERM, topologyVersionDoc, type NodeServices } from '../../node/node-services';
import type { CommandContext, CommandDefinition } from '../types';
import { MAX_BSON_OBJECT_SIZE, MAX_MESSAGE_SIZE } from '../../wire/protocol';
import { LOGICAL_SESSION_TIMEOUT_MINUTES } from '../../server/sessions';
import { asNumber, optionalDocument, optionalString } from '../../server/values';
import { startScram } from '../../auth/scram';

/** Wire version of MongoDB 7.0 (the driver requires >= 8 for its v6 feature set). */
export const MAX_WIRE_VERSION = 21;
export const MAX_WRITE_BATCH_SIZE = 100_000;
/** Every optime carries the term; the emulated primary was elected once, in term 1. */
export { TERM } from '../../node/node-services';

const topologyWaiters = new WeakMap<NodeServices, Set<() => void>>();

/**
 * Bumps the node's topologyVersion counter and wakes awaitable hellos, which then answer at
 * once (e.g. after a simulated step-down). Nothing in a single-node set calls it yet.
 */
export function notifyTopologyChange(node: NodeServices): void {
  node.topologyVersion.counter = node.topologyVersion.counter.add(1);
  for (const wake of [...(topologyWaiters.get(node) ?? [])]) wake();
}

function waitForTopologyChange(node: NodeServices, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    let waiters = topologyWaiters.get(node);
    if (!waiters) topologyWaiters.set(node, (waiters = new Set()));
    const set = waiters;
    const done = () => {
      clearTimeout(timer);
      set.delete(done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    set.add(done);
    if (signal.aborted) done();
    else signal.addEventListener('abort', done, { once: true });
  });
}

/** `{opTime: {ts, t}, lastWriteDate, majorityOpTime, majorityWriteDate}` of the newest oplog entry. */
export function lastWrite(node: NodeServices): Document {
  const newest = node.oplog.newest();
  const ts = newest?.ts ?? node.clock.current();
  const date = newest ? new Date(Math.floor(newest.wallMs / 1000) * 1000) : new Date(ts.t * 1000);
  // A single voting member: everything applied is majority-committed.
  return {
    opTime: { ts, t: TERM },
    lastWriteDate: date,
    majorityOpTime: { ts, t: TERM },
    majorityWriteDate: date,
  };
}

/**
 * Awaitable hello (SDAM "streaming protocol"): with the server's current topologyVersion and
 * maxAwaitTimeMS, wait until the topology changes or maxAwaitTimeMS passes.
 */
async function awaitTopology(ctx: CommandContext, context: string): Promise<void> {
  const cmd = ctx.cmd;
  const clientTv = optionalDocument(cmd, 'topologyVersion', context);
  const maxAwait = cmd.maxAwaitTimeMS;
  if (maxAwait === undefined && !clientTv) return;
  if (maxAwait === undefined || !clientTv) {
    throw new CommandError(
      31368 as number,
      `A request to ${context} with a 'maxAwaitTimeMS' must also include a 'topologyVersion' (and vice versa)`,
    );
  }
  const ms = asNumber(maxAwait);
  if (ms === undefined || ms < 0)
    throw new CommandError('BadValue', 'maxAwaitTimeMS must be a non-negative integer');
  const tv = ctx.node.topologyVersion;
  const processId = clientTv.processId;
  const counter = clientTv.counter;
  if (!(processId instanceof ObjectId) || !processId.equals(tv.processId)) return; // another process: answer now
  const clientCounter = counter instanceof Long ? counter : Long.fromNumber(asNumber(counter) ?? 0);
  if (clientCounter.greaterThan(tv.counter)) {
    throw new CommandError(
      'BadValue',
      `Received a topology version with the same process ID and a higher counter (${clientCounter}) than the server's (${tv.counter})`,
    );
  }
  if (clientCounter.lessThan(tv.counter)) return;
  await waitForTopologyChange(ctx.node, ms, ctx.conn.closed);
}

async function helloReply(ctx: CommandContext, legacy: boolean): Promise<Document> {
  const { node, conn, cmd } = ctx;
  const context = legacy ? 'isMaster' : 'hello';
  // Client metadata arrives with the connection's first hello; the fail point `appName` filter uses it.
  const client = optionalDocument(cmd, 'client', context);
  const application = client?.application as Document | undefined;
  if (application && typeof application.name === 'string' && conn.appName === undefined) {
    conn.appName = application.name;
  }
  await awaitTopology(ctx, context);

  const reply: Document = {};
  if (cmd.helloOk === true || (cmd.helloOk !== undefined && asNumber(cmd.helloOk)))
    reply.helloOk = true;
  reply.topologyVersion = topologyVersionDoc(node);
  reply.hosts = [node.host];
  reply.setName = node.options.setName;
  reply.setVersion = 1;
  if (legacy) reply.ismaster = true;
  else reply.isWritablePrimary = true;
  reply.secondary = false;
  reply.primary = node.host;
  reply.me = node.host;
  reply.electionId = node.electionId;
  reply.lastWrite = lastWrite(node);
  reply.maxBsonObjectSize = MAX_BSON_OBJECT_SIZE;
  reply.maxMessageSizeBytes = MAX_MESSAGE_SIZE;
  reply.maxWriteBatchSize = MAX_WRITE_BATCH_SIZE;
  reply.localTime = new Date();
  reply.logicalSessionTimeoutMinutes = LOGICAL_SESSION_TIMEOUT_MINUTES;
  reply.connectionId = conn.id;
  reply.minWireVersion = 0;
  reply.maxWireVersion = MAX_WIRE_VERSION;
  reply.readOnly = false;

  const mechsFor = optionalString(cmd, 'saslSupportedMechs', context);
  if (mechsFor !== undefined) {
    const mechs = node.users.mechanismsFor(mechsFor);
    if (mechs) reply.saslSupportedMechs = mechs;
  }
  const speculative = optionalDocument(cmd, 'speculativeAuthenticate', context);
  if (speculative) {
    // Like mongod's doSpeculativeAuthenticate: failures are swallowed; the client then runs
    // a normal saslStart and gets the real error there.
    try {
      const db = typeof speculative.db === 'string' ? speculative.db : 'admin';
      const { conversation, reply: step } = startScram(node.users, db, speculative);
      conn.sasl.set(step.conversationId as number, conversation);
      reply.speculativeAuthenticate = step;
    } catch {
      // omit speculativeAuthenticate
    }
  }
  reply.ok = 1;
  return reply;
}

export const helloCommands: CommandDefinition[] = [
  { name: 'hello', access: 'none', run: (ctx) => helloReply(ctx, false) },
  { name: 'isMaster', aliases: ['ismaster'], access: 'none', run: (ctx) => helloReply(ctx, true) },
];
