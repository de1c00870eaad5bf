import * as os from 'node:os';
import { Double, Int32, Long, type Document } from 'bson';
import { CommandError } from '../../errors';
import type { CommandContext, CommandDefinition } from '../types';
import { MAX_BSON_OBJECT_SIZE, MAX_MESSAGE_SIZE } from '../../wire/protocol';
import { serverStatsOf } from '../../server/stats';
import { topologyVersionDoc } from '../../node/node-services';
import { lastWrite, MAX_WIRE_VERSION, MAX_WRITE_BATCH_SIZE, TERM } from './hello';

export const SERVER_VERSION = '7.0.14';
export const VERSION_ARRAY = [7, 0, 14, 0];
/** Marks the build as the emulator's; real mongod builds report their commit hash here. */
const GIT_VERSION = '0000000000000000000000000000000000000000';
/** mongod's default maxIncomingConnections. */
const MAX_CONNECTIONS = 838_860;

/** Server parameters getParameter knows (a subset of mongod's, with mongod's default values). */
function serverParameters(ctx: CommandContext): Record<string, unknown> {
  const noopMs = ctx.node.options.noopIntervalMs ?? 10_000;
  return {
    featureCompatibilityVersion: { version: '7.0' },
    authenticationMechanisms: ['SCRAM-SHA-1', 'SCRAM-SHA-256'],
    authSchemaVersion: new Int32(5),
    cursorTimeoutMillis: Long.fromNumber(600_000),
    localLogicalSessionTimeoutMinutes: new Int32(30),
    logLevel: new Int32(0),
    maxBSONDepth: new Int32(200),
    periodicNoopIntervalSecs: new Int32(Math.max(1, Math.round(noopMs / 1000))),
    scramIterationCount: new Int32(10_000),
    scramSHA256IterationCount: new Int32(15_000),
    transactionLifetimeLimitSeconds: new Int32(60),
    internalDocumentSourceCursorBatchSizeBytes: new Int32(4 * 1024 * 1024),
  };
}

function serverStatus(ctx: CommandContext): Document {
  const { node, conn } = ctx;
  const stats = serverStatsOf(node);
  const uptimeMs = Date.now() - node.startedAt.getTime();
  return {
    host: node.host,
    version: SERVER_VERSION,
    process: 'mongod',
    pid: Long.fromNumber(process.pid),
    uptime: new Double(Math.floor(uptimeMs / 1000)),
    uptimeMillis: Long.fromNumber(uptimeMs),
    uptimeEstimate: Long.fromNumber(Math.floor(uptimeMs / 1000)),
    localTime: new Date(),
    connections: {
      current: new Int32(stats.connectionsCurrent),
      available: new Int32(MAX_CONNECTIONS - stats.connectionsCurrent),
      totalCreated: new Int32(stats.connectionsTotalCreated),
      active: new Int32(1),
    },
    opcounters: Object.fromEntries(
      Object.entries(stats.opcounters).map(([k, v]) => [k, Long.fromNumber(v)]),
    ),
    repl: {
      topologyVersion: topologyVersionDoc(node),
      hosts: [node.host],
      setName: node.options.setName,
      setVersion: new Int32(1),
      isWritablePrimary: true,
      secondary: false,
      primary: node.host,
      me: node.host,
      electionId: node.electionId,
      lastWrite: lastWrite(node),
      rbid: new Int32(1),
    },
    storageEngine: {
      name: 'wiredTiger',
      supportsCommittedReads: true,
      persistent: false,
      backupCursorOpen: false,
    },
    transportSecurity: {
      '1.0': Long.ZERO,
      '1.1': Long.ZERO,
      '1.2': Long.ZERO,
      '1.3': Long.ZERO,
      unknown: Long.ZERO,
    },
    logicalSessionRecordCache: { activeSessionsCount: new Int32(node.sessions.activeCount) },
    metrics: {
      cursor: { open: { total: Long.fromNumber(node.cursors.openCount) } },
      document: Object.fromEntries(
        Object.entries(stats.document).map(([k, v]) => [k, Long.fromNumber(v)]),
      ),
      // mongod: per command run, `{failed, total}` (NumberLong), by the command's name.
      commands: Object.fromEntries(
        [...stats.commands]
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([name, c]) => [
            name,
            { failed: Long.fromNumber(c.failed), total: Long.fromNumber(c.total) },
          ]),
      ),
    },
    connectionId: conn.id,
    ok: 1,
  };
}

function replSetGetStatus(ctx: CommandContext): Document {
  const { node } = ctx;
  const lw = lastWrite(node);
  const opTime = lw.opTime as Document;
  const wall = lw.lastWriteDate as Date;
  const uptime = Math.floor((Date.now() - node.startedAt.getTime()) / 1000);
  const electionTs = node.oplog.oldest()?.ts ?? opTime.ts;
  return {
    set: node.options.setName,
    date: new Date(),
    myState: new Int32(1),
    term: TERM,
    syncSourceHost: '',
    syncSourceId: new Int32(-1),
    heartbeatIntervalMillis: Long.fromNumber(2000),
    majorityVoteCount: new Int32(1),
    writeMajorityCount: new Int32(1),
    votingMembersCount: new Int32(1),
    writableVotingMembersCount: new Int32(1),
    optimes: {
      lastCommittedOpTime: opTime,
      lastCommittedWallTime: wall,
      // The majority-committed snapshot: behind lastCommittedOpTime while disableSnapshotting holds it.
      readConcernMajorityOpTime: { ts: node.oplog.committedTimestamp() ?? opTime.ts, t: TERM },
      appliedOpTime: opTime,
      durableOpTime: opTime,
      lastAppliedWallTime: wall,
      lastDurableWallTime: wall,
    },
    members: [
      {
        _id: new Int32(0),
        name: node.host,
        health: new Double(1),
        state: new Int32(1),
        stateStr: 'PRIMARY',
        uptime: new Int32(uptime),
        optime: opTime,
        optimeDate: wall,
        lastAppliedWallTime: wall,
        lastDurableWallTime: wall,
        syncSourceHost: '',
        syncSourceId: new Int32(-1),
        infoMessage: '',
        electionTime: electionTs,
        electionDate: new Date(electionTs.t * 1000),
        configVersion: new Int32(1),
        configTerm: new Int32(1),
        self: true,
        lastHeartbeatMessage: '',
      },
    ],
    ok: 1,
  };
}

export const serverInfoCommands: CommandDefinition[] = [
  { name: 'ping', access: 'none', run: () => ({ ok: 1 }) },
  {
    name: 'buildInfo',
    aliases: ['buildinfo'],
    access: 'none',
    run: () => ({
      version: SERVER_VERSION,
      gitVersion: GIT_VERSION,
      modules: [],
      allocator: 'tcmalloc',
      javascriptEngine: 'mozjs',
      sysInfo: 'deprecated',
      versionArray: VERSION_ARRAY.map((n) => new Int32(n)),
      openssl: { running: 'disabled', compiled: 'disabled' },
      buildEnvironment: { target_os: 'linux', target_arch: 'x86_64' },
      bits: new Int32(64),
      debug: false,
      maxBsonObjectSize: new Int32(MAX_BSON_OBJECT_SIZE),
      storageEngines: ['devnull', 'wiredTiger'],
      ok: 1,
    }),
  },
  {
    name: 'getParameter',
    access: 'admin',
    adminOnly: true,
    run(ctx) {
      const params = serverParameters(ctx);
      const selector = ctx.cmd.getParameter;
      const all =
        selector === '*' ||
        (selector && typeof selector === 'object' && (selector as Document).allParameters === true);
      const reply: Document = {};
      if (all) Object.assign(reply, params);
      else {
        for (const key of Object.keys(ctx.cmd)) {
          if (key === 'getParameter' || key.startsWith('$') || key === 'lsid' || key === 'comment')
            continue;
          if (key in params) reply[key] = params[key];
        }
        if (Object.keys(reply).length === 0)
          throw new CommandError('InvalidOptions', 'no option found to get');
      }
      return { ...reply, ok: 1 };
    },
  },
  { name: 'serverStatus', access: 'admin', run: serverStatus },
  {
    name: 'hostInfo',
    access: 'admin',
    run: () => ({
      system: {
        currentTime: new Date(),
        hostname: os.hostname(),
        cpuAddrSize: new Int32(64),
        memSizeMB: Long.fromNumber(Math.round(os.totalmem() / 1024 / 1024)),
        memLimitMB: Long.fromNumber(Math.round(os.totalmem() / 1024 / 1024)),
        numCores: new Int32(os.cpus().length || 1),
        cpuArch: os.arch() === 'x64' ? 'x86_64' : os.arch(),
        numaEnabled: false,
      },
      os: { type: os.type(), name: os.type(), version: os.release() },
      extra: {},
      ok: 1,
    }),
  },
  { name: 'whatsmyuri', access: 'none', run: (ctx) => ({ you: ctx.conn.remoteAddress, ok: 1 }) },
  {
    name: 'getCmdLineOpts',
    access: 'admin',
    adminOnly: true,
    run(ctx) {
      const [bindIp, port] = splitHost(ctx.node.host);
      const auth = ctx.node.authEnabled;
      return {
        argv: [
          'mongod',
          '--replSet',
          ctx.node.options.setName,
          '--bind_ip',
          bindIp,
          '--port',
          String(port),
          ...(auth ? ['--auth'] : []),
        ],
        parsed: {
          net: { bindIp, port: new Int32(port) },
          replication: { replSet: ctx.node.options.setName },
          ...(auth ? { security: { authorization: 'enabled' } } : {}),
        },
        ok: 1,
      };
    },
  },
  { name: 'replSetGetStatus', access: 'admin', adminOnly: true, run: replSetGetStatus },
  {
    name: 'getDefaultRWConcern',
    access: 'admin',
    adminOnly: true,
    run: () => ({
      defaultReadConcern: { level: 'local' },
      defaultWriteConcern: { w: 'majority', wtimeout: new Int32(0) },
      defaultWriteConcernSource: 'implicit',
      defaultReadConcernSource: 'implicit',
      localUpdateWallClockTime: new Date(),
      ok: 1,
    }),
  },
  {
    name: 'listCommands',
    access: 'none',
    run(ctx) {
      const commands: Document = {};
      const seen = new Set<string>();
      for (const name of ctx.node.commands.names().sort()) {
        const def = ctx.node.commands.get(name)!;
        if (seen.has(def.name)) continue;
        seen.add(def.name);
        commands[def.name] = {
          help: '',
          requiresAuth: def.access !== 'none',
          secondaryOk: true,
          adminOnly: !!def.adminOnly,
          apiVersions: [],
          deprecatedApiVersions: [],
        };
      }
      return { commands, ok: 1 };
    },
  },
];

function splitHost(host: string): [string, number] {
  const colon = host.lastIndexOf(':');
  return [host.slice(0, colon), Number(host.slice(colon + 1))];
}

export { MAX_MESSAGE_SIZE, MAX_WIRE_VERSION, MAX_WRITE_BATCH_SIZE };
