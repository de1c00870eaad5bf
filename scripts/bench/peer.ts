import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { MongoClient } from 'mongodb';
import { freePort, startNodeProcess, startProcess } from '../lib/processes';
import { cpuSince, type CpuMark, type CpuParts } from './cpu-budget';
import { measureChangeApplication, PROBE_DB, type ChangeResult } from './change-load';
import { collectionName, type DatasetSpec } from './dataset';
import { nodeFlags, RssSampler, sleep, track } from './processes';
import { rate, type Rate } from './raw-rates';

const PEER_SYNC = resolve(__dirname, 'peer-sync.js');

export interface PeerResult {
  tool: string;
  /** `cpuMicrosPerDoc`: from the peer's start until its scans ended (emulators, peer, redis). */
  copy: Rate & { peakRssMB: number; cpuMicrosPerDoc: CpuMark };
  change: ChangeResult | { skipped: string };
}

/**
 * (i) The peer, `mongochangestream`, on the same clusters and dataset: a redis-server for its
 * state, then its sync of every dataset collection plus the lag probe's collection in its own
 * process (peer-sync.ts). Its copy rate is the dataset over the time until every initial scan
 * is done; its change rate is measured exactly as the worker's (same load, same lag probe).
 */
export async function runPeer(
  sourceUri: string,
  source: MongoClient,
  destinationUri: string,
  destination: MongoClient,
  spec: DatasetSpec,
  dataset: { documents: number; bytes: number },
  options: {
    profileDir: string | null;
    timeoutMs: number;
    change: Omit<Parameters<typeof measureChangeApplication>[4], 'rates'> & { rates: number[] };
    log: (line: string) => void;
  },
): Promise<PeerResult | { skipped: string }> {
  const redisServer = findRedis();
  if (!redisServer)
    return { skipped: 'redis-server not on PATH (mongochangestream keeps its state in Redis)' };
  const redisPort = await freePort();
  const redis = track(
    await startProcess(
      redisServer,
      ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      /Ready to accept connections/,
    ),
  );
  const namespaces = [
    ...Array.from({ length: spec.collections }, (_, k) => `${spec.database}.${collectionName(k)}`),
    `${PROBE_DB}.lag`,
  ];
  try {
    const accounted: CpuParts = { ...options.change.cpuParts, redis: redis.child };
    const copyCpu = cpuSince(accounted);
    const peer = track(
      await startNodeProcess<{ started: number }>([
        ...nodeFlags(options.profileDir, 'peer-mongochangestream'),
        PEER_SYNC,
        sourceUri,
        destinationUri,
        `redis://127.0.0.1:${redisPort}`,
        ...namespaces,
      ]),
    );
    const sampler = new RssSampler(peer.child);
    const scanned = await new Promise<{ seconds: number; documents: number }>((done, fail) => {
      const timer = setTimeout(
        () => fail(new Error(`peer scan not done in ${options.timeoutMs / 1000} s`)),
        options.timeoutMs,
      );
      createInterface({ input: peer.child.stdout! }).on('line', (text) => {
        try {
          const line = JSON.parse(text) as { scanned?: number; seconds: number; documents: number };
          if (line.scanned !== undefined) {
            clearTimeout(timer);
            done(line);
          }
        } catch {
          // not a status line
        }
      });
      peer.child.once('exit', (code) => {
        clearTimeout(timer);
        fail(new Error(`peer exited with ${code}`));
      });
    });
    accounted.peer = peer.child;
    const copy = {
      ...rate(dataset.documents, dataset.bytes, scanned.seconds),
      peakRssMB: sampler.stop(),
      // the peer's own CPU counts from its start (added to `accounted` after the mark)
      cpuMicrosPerDoc: copyCpu(dataset.documents),
    };
    options.log(
      `  peer copy: ${Math.round(copy.docsPerSec)} docs/s in ${copy.seconds.toFixed(1)} s (${scanned.documents} documents scanned), peak RSS ${copy.peakRssMB.toFixed(0)} MB`,
    );
    await sleep(1000); // let its change streams settle on a quiet source
    options.log('  peer change application at rising rates…');
    const change = await measureChangeApplication(source, destination, null, spec, {
      ...options.change,
      cpuParts: accounted,
    });
    await peer.stop();
    return { tool: `mongochangestream@${peerVersion()}`, copy, change };
  } finally {
    await redis.stop();
  }
}

function peerVersion(): string {
  const manifest = join(dirname(require.resolve('mongochangestream')), '..', 'package.json');
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

function findRedis(): string | null {
  const found = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const path = found.stdout.trim();
  return found.status === 0 && path ? path : null;
}
