import { readLaunchConfig } from '../bootstrap/read-launch-config';
import { LaunchConfigError } from './launch-config.error';
import { loadServiceConfig, type LaunchEnv, type ReadTextFile } from './load-service-config';
import { parseLaunchArgs } from './parse-launch-args';

const URI0 = 'mongodb://alice:s3cretpw@h0:27017/?replicaSet=rs0';
const URI1 = 'mongodb://bob:0therpw@h1:27017/?replicaSet=rs1';
const CLUSTERS = `cluster0: "${URI0}"\ncluster1: "${URI1}"\n`;

function load(yaml: string, env: LaunchEnv = {}, rules: { engineTuning?: boolean } = {}) {
  const parsed = parseLaunchArgs(['--config', 'w.yaml']);
  if (parsed.help) throw new Error('unexpected help');
  const readFile: ReadTextFile = () => CLUSTERS + yaml;
  return loadServiceConfig(parsed.flags, readFile, rules, env);
}

function failure(yaml: string, env: LaunchEnv = {}, rules: { engineTuning?: boolean } = {}) {
  try {
    load(yaml, env, rules);
  } catch (error) {
    expect(error).toBeInstanceOf(LaunchConfigError);
    const message = (error as Error).message;
    expect(message).not.toContain('s3cretpw');
    expect(message).not.toContain('\n');
    return message;
  }
  throw new Error('expected a config error');
}

const EVERY_KEY = `tuning:
  copier:
    concurrency: 8
    readBatchSize: 1000
    writeBatchDocuments: 4000
    writeBatchBytes: 4194304
    maxBytesInFlight: 67108864
    raw: false
    groupReads: { collections: 32, memberBytes: 65536, groupBytes: 1048576, maxBytes: 4194304 }
  partitioning: { targetBytes: 67108864, maxPartitions: 1024, oversampling: 20 }
  changeApplication:
    lanes: 16
    minLanes: 2
    maxInFlight: 50000
    checkpointIntervalMs: 500
    checkpointEveryEvents: 10000
    lagPollMs: 250
    commitLagLimitSeconds: 5
    feed: { maxAwaitTimeMS: 200, maxBatchEvents: 2000 }
  verification:
    concurrency: 2
    recheckMs: 2000
    caughtUpMs: 20000
    settleMs: 500
    limits: { idsPerNamespace: 5000, idsTotal: 50000, maxIdentityChars: 256 }
    retry: { attempts: 3, baseMs: 50, maxMs: 1000 }
  historyGuard: { intervalMs: 5000, warnRatio: 0.25 }
  retry:
    maxTransientRetries: 20
    retryBaseMs: 1000
    inPlaceRetries: 3
    inPlaceRetryBaseMs: 200
    restoreRetryMs: 2000
  balancerWatch: { intervalMs: 3000 }
`;

describe('engine tuning in the launch config', () => {
  it('reads every tuning group from the --config file, with its types', () => {
    expect(load(EVERY_KEY).tuning).toEqual({
      copier: {
        concurrency: 8,
        readBatchSize: 1000,
        writeBatchDocuments: 4000,
        writeBatchBytes: 4194304,
        maxBytesInFlight: 67108864,
        raw: false,
        groupReads: {
          collections: 32,
          memberBytes: 65536,
          groupBytes: 1048576,
          maxBytes: 4194304,
        },
      },
      partitioning: { targetBytes: 67108864, maxPartitions: 1024, oversampling: 20 },
      changeApplication: {
        lanes: 16,
        minLanes: 2,
        maxInFlight: 50000,
        checkpointIntervalMs: 500,
        checkpointEveryEvents: 10000,
        lagPollMs: 250,
        commitLagLimitSeconds: 5,
        feed: { maxAwaitTimeMS: 200, maxBatchEvents: 2000 },
      },
      verification: {
        concurrency: 2,
        recheckMs: 2000,
        caughtUpMs: 20000,
        settleMs: 500,
        limits: { idsPerNamespace: 5000, idsTotal: 50000, maxIdentityChars: 256 },
        retry: { attempts: 3, baseMs: 50, maxMs: 1000 },
      },
      historyGuard: { intervalMs: 5000, warnRatio: 0.25 },
      retry: {
        maxTransientRetries: 20,
        retryBaseMs: 1000,
        inPlaceRetries: 3,
        inPlaceRetryBaseMs: 200,
        restoreRetryMs: 2000,
      },
      balancerWatch: { intervalMs: 3000 },
    });
  });

  it('keeps only what is given: no tuning, an empty one, or a group left empty', () => {
    expect(load('')).not.toHaveProperty('tuning');
    expect(load('tuning:\n')).not.toHaveProperty('tuning');
    expect(load('tuning:\n  copier:\n  retry: { inPlaceRetries: 0 }\n').tuning).toEqual({
      retry: { inPlaceRetries: 0 },
    });
  });

  it('merges SYNC_TUNING (YAML or JSON) over the file, key by key', () => {
    const yaml = 'tuning:\n  copier: { concurrency: 8, readBatchSize: 1000 }\n';
    expect(
      load(yaml, { SYNC_TUNING: '{"copier": {"concurrency": 2}, "retry": {"inPlaceRetries": 1}}' })
        .tuning,
    ).toEqual({ copier: { concurrency: 2, readBatchSize: 1000 }, retry: { inPlaceRetries: 1 } });
    expect(load('', { SYNC_TUNING: '{changeApplication: {lanes: 4}}' }).tuning).toEqual({
      changeApplication: { lanes: 4 },
    });
    expect(load(yaml, { SYNC_TUNING: '' }).tuning).toEqual({
      copier: { concurrency: 8, readBatchSize: 1000 },
    });
  });

  it.each<[string, string, string]>([
    [
      'a value out of range',
      'tuning:\n  copier: { concurrency: 0 }\n',
      'tuning.copier.concurrency must be an integer from 1 to 64',
    ],
    [
      'a string for a number',
      'tuning:\n  changeApplication: { lanes: "16" }\n',
      'tuning.changeApplication.lanes must be an integer from 1 to 256',
    ],
    [
      'fewest lanes above the most lanes',
      'tuning:\n  changeApplication: { lanes: 4, minLanes: 6 }\n',
      'tuning.changeApplication.minLanes (6) must not exceed tuning.changeApplication.lanes (4)',
    ],
    [
      'fewest lanes above the default most lanes',
      'tuning:\n  changeApplication: { minLanes: 12 }\n',
      'tuning.changeApplication.minLanes (12) must not exceed tuning.changeApplication.lanes (8, its default)',
    ],
    [
      'a fraction for an integer',
      'tuning:\n  partitioning: { maxPartitions: 2.5 }\n',
      'tuning.partitioning.maxPartitions must be an integer from 1 to 100000',
    ],
    [
      'a bad value two groups deep',
      'tuning:\n  changeApplication:\n    feed: { maxAwaitTimeMS: -1 }\n',
      'tuning.changeApplication.feed.maxAwaitTimeMS must be an integer from 1 to 60000 (milliseconds)',
    ],
    [
      'a ratio out of range',
      'tuning:\n  historyGuard: { warnRatio: 2 }\n',
      'tuning.historyGuard.warnRatio must be a number from 0.01 to 1',
    ],
    [
      'a string for a switch',
      'tuning:\n  copier: { raw: "no" }\n',
      'tuning.copier.raw must be true or false',
    ],
    [
      'a group read of no collection',
      'tuning:\n  copier: { groupReads: { collections: 0 } }\n',
      'tuning.copier.groupReads.collections must be an integer from 1 to 1000',
    ],
    [
      'a number for a group',
      'tuning:\n  retry: 5\n',
      'tuning.retry must be a mapping of tuning keys to values',
    ],
    [
      'a list for a group',
      'tuning:\n  verification: [1, 2]\n',
      'tuning.verification must be a mapping of tuning keys to values',
    ],
    [
      'tuning that is not a mapping',
      'tuning: fast\n',
      'tuning in --config must be a mapping of tuning groups (copier, partitioning, changeApplication, verification, historyGuard, retry, balancerWatch)',
    ],
    [
      'an unknown group',
      'tuning:\n  copy: { concurrency: 8 }\n',
      'tuning.copy is not a tuning key (tuning takes: copier, partitioning, changeApplication, verification, historyGuard, retry, balancerWatch)',
    ],
    [
      'an unknown key in a group',
      'tuning:\n  copier: { concurency: 8 }\n',
      'tuning.copier.concurency is not a tuning key (tuning.copier takes: concurrency, readBatchSize, writeBatchDocuments, writeBatchBytes, maxBytesInFlight, smallPartitionConcurrency, smallPartitionBytes, raw, groupReads)',
    ],
    [
      'an unknown key two groups deep',
      'tuning:\n  verification:\n    limits: { ids: 5 }\n',
      'tuning.verification.limits.ids is not a tuning key (tuning.verification.limits takes: idsPerNamespace, idsTotal, maxIdentityChars)',
    ],
    [
      'a wiring option of the engine',
      'tuning:\n  copier: { retry: { attempts: 1 } }\n',
      'tuning.copier.retry is not a tuning key',
    ],
  ])('refuses %s, by name', (_name, yaml, text) => {
    expect(failure(yaml)).toContain(text);
  });

  it('names SYNC_TUNING when the bad value came from it', () => {
    expect(
      failure('tuning:\n  copier: { concurrency: 8 }\n', {
        SYNC_TUNING: '{copier: {concurrency: 100}}',
      }),
    ).toBe('tuning.copier.concurrency (from SYNC_TUNING) must be an integer from 1 to 64');
    expect(failure('', { SYNC_TUNING: '{copier: {concurrency: 8}, lanes: 4}' })).toContain(
      'tuning.lanes (from SYNC_TUNING) is not a tuning key',
    );
    expect(failure('', { SYNC_TUNING: '[1, 2]' })).toContain(
      'SYNC_TUNING must be a mapping of tuning groups',
    );
    expect(failure('', { SYNC_TUNING: '{copier: [' })).toMatch(
      /^SYNC_TUNING is not valid YAML or JSON: /,
    );
  });

  it('is refused by a program that runs no engine (the coordinator), whose SYNC_TUNING is not read', () => {
    expect(failure('tuning:\n  copier: { concurrency: 8 }\n', {}, { engineTuning: false })).toBe(
      "--config file w.yaml has key tuning, which only a worker reads: put it in each worker's --config",
    );
    expect(
      load('', { SYNC_TUNING: '{copier: {concurrency: 100}}' }, { engineTuning: false }),
    ).not.toHaveProperty('tuning');
  });

  it('stops the launch with exit code 2 and one stderr line', () => {
    const out = { stdout: '', stderr: '' };
    const result = readLaunchConfig(
      ['--cluster0', URI0, '--cluster1', URI1],
      { stdout: (text) => (out.stdout += text), stderr: (text) => (out.stderr += text) },
      { name: 'worker', usage: '' },
      { SYNC_TUNING: '{partitioning: {targetBytes: 10}}' },
    );
    expect(result).toEqual({ exitCode: LaunchConfigError.EXIT_CODE });
    expect(out.stderr).toBe(
      'worker: tuning.partitioning.targetBytes (from SYNC_TUNING) must be an integer from 1024 to 68719476736 (bytes) (see --help)\n',
    );
  });
});
