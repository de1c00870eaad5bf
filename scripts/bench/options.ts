export interface BenchOptions {
  quick: boolean;
  documents: number;
  documentBytes: number;
  collections: number;
  /** Multiplier of the scaling run (f). */
  scale: number;
  /** Directory for `--cpu-prof` output of the worker and emulators (null: off). */
  profileDir: string | null;
  /** Change-load window per rate step, and how long a step may take to drain. */
  windowSeconds: number;
  drainSeconds: number;
  lagLimitSeconds: number;
  /** Change-load rates as fractions of the destination's raw write rate. */
  rateFactors: number[];
  skipChanges: boolean;
  skipScaling: boolean;
  /** Skip (i), the peer (mongochangestream). */
  skipPeer: boolean;
  /**
   * Instead of the replica-set run: a 4-shard source synced by one worker through the routers and
   * by four per-shard workers (`--id`); defaults to 40,000 documents in one collection (quick 4,000).
   */
  sharded: boolean;
  /** Skip (d'), change application of the transactional mix. */
  skipTransactions: boolean;
  /** Skip (j), the cutover runs. */
  skipCutover: boolean;
  /** Only (j), the cutover runs (1× without and with verification, 4× with). */
  cutoverOnly: boolean;
  /** Skip (k) in the full run (it runs at 2,000 namespaces; quick 200). */
  skipNamespaces: boolean;
  /** Only (k): a sync of this many small collections (null: not run). */
  namespaces: number | null;
  /** (k): SIGKILL the worker this many times during its copy (restarted each time). */
  kills: number;
  /** (k): the worker's V8 heap limit in MiB (`--max-old-space-size`; null: Node's default). */
  workerHeapMB: number | null;
  /** (k): write the worker's V8 heap snapshot into this directory at canCommit (null: none). */
  heapSnapshotDir: string | null;
  /** (k): collections per database (null: the default, 500). */
  perDatabase: number | null;
  /**
   * The embedded verifier in the worker runs of (c)–(f) (default on, as a user runs it). Off
   * measures change application alone, as the peer (which verifies nothing) is measured.
   */
  verification: boolean;
  /** --verification was given (the --sharded run defaults to off). */
  verificationGiven: boolean;
  /** Processes writing the change load (d)/(i) (each its own connection). */
  loadWriters: number;
}

export const USAGE = `usage: npm run bench -- [options]
  --quick                 ~2-minute smoke run (smaller dataset, 5 s change windows)
  --docs N                documents at 1× (default 200000; quick 20000)
  --doc-size BYTES        approximate document size (default 1024)
  --collections N         collections the documents are spread over (default 8)
  --scale N               the scaling run's multiple of the dataset (default 4)
  --window S              change-load window per rate step, seconds (default 30; quick 5)
  --lag-limit S           lag p99 a step must keep (default 2)
  --rates F,F,...         change-load rates as fractions of the raw write rate
  --load-writers N        processes writing the change load, each with its own connection
                          (default 1: the bench process writes it itself; more only help
                          where cores are spare — the source takes every write either way)
  --skip-changes          skip (d)
  --skip-scaling          skip (f)
  --skip-peer             skip (i), the peer (mongochangestream; needs redis-server on PATH)
  --skip-transactions     skip (d'), the same change load written in transactions
  --skip-cutover          skip (j), the cutover runs
  --skip-namespaces       skip (k) in the full run (2,000 small collections; quick 200)
  --namespaces N          only (k): N small collections (2 documents each, every third indexed,
                          500 per database) synced and committed; start → canCommit, commit →
                          COMMITTED, peak RSS, and the destination's own create rate
  --worker-heap-mb MIB    with --namespaces: the worker's V8 heap limit (--max-old-space-size),
                          to check that a sync of N namespaces fits the heap its start admits
  --heap-snapshot [DIR]   with --namespaces: write the worker's V8 heap snapshot into DIR once
                          it can commit (default .tmp/bench-heap; open it in Chrome DevTools'
                          Memory tab). Peak RSS is then read before the snapshot is taken
  --per-database N        with --namespaces: N collections per database (default 500; as many
                          as --namespaces puts every tenant's collection in one database)
  --kills K               with --namespaces: SIGKILL the worker K times during its copy (each
                          time restarted; it resumes the persisted job), then compare both
                          clusters byte for byte after commit
  --verification on|off   the embedded verifier in the worker runs (c)-(f) and (k) (default on; the
                          peer verifies nothing: off compares change application alone;
                          --sharded defaults to off: its read amplification is the sync's own)
  --cutover               only (j): an application writing every 20 ms, verification on, commit,
                          at 1× and at --scale × the documents (and 1× with verification off)
  --sharded               per-shard scale instead: a 4-shard source (one hashed-key collection,
                          default 40000 documents; quick 4000) into a 2-shard destination, synced
                          by one worker through the routers and by 4 per-shard workers (--id)
  --cpu-prof [DIR]        CPU-profile the worker and both emulators into DIR
                          (default .tmp/bench-profiles; also BENCH_CPU_PROF=DIR or =1)`;

const FULL_RATES = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.25, 1.5];
const QUICK_RATES = [0.05, 0.2, 0.5];

export class BenchUsageError extends Error {}

export function parseBenchArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): BenchOptions {
  const quick = argv.includes('--quick');
  const o: BenchOptions = {
    quick,
    documents: quick ? 20_000 : 200_000,
    documentBytes: 1024,
    collections: 8,
    scale: 4,
    profileDir: profileDirFromEnv(env.BENCH_CPU_PROF),
    windowSeconds: quick ? 5 : 30,
    drainSeconds: quick ? 10 : 60,
    lagLimitSeconds: 2,
    rateFactors: quick ? QUICK_RATES : FULL_RATES,
    skipChanges: false,
    skipScaling: false,
    skipPeer: false,
    sharded: false,
    skipTransactions: false,
    skipCutover: false,
    skipNamespaces: false,
    cutoverOnly: false,
    namespaces: null,
    kills: 0,
    workerHeapMB: null,
    heapSnapshotDir: null,
    perDatabase: null,
    verification: true,
    verificationGiven: false,
    loadWriters: 1,
  };
  let documentsGiven = false;
  let collectionsGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = (): string => {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--'))
        throw new BenchUsageError(`${arg} needs a value`);
      i += 1;
      return next;
    };
    /** The next argument when it is a value, else `fallback` (an option whose value is optional). */
    const optional = (fallback: string): string => {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) return fallback;
      i += 1;
      return next;
    };
    const positive = (text: string): number => {
      const n = Number(text);
      if (!Number.isFinite(n) || n <= 0)
        throw new BenchUsageError(`${arg}: not a positive number: ${text}`);
      return n;
    };
    switch (arg) {
      case '--quick':
        break;
      case '--docs':
        o.documents = Math.floor(positive(value()));
        documentsGiven = true;
        break;
      case '--doc-size':
        o.documentBytes = Math.floor(positive(value()));
        break;
      case '--collections':
        o.collections = Math.floor(positive(value()));
        collectionsGiven = true;
        break;
      case '--scale':
        o.scale = positive(value());
        break;
      case '--window':
        o.windowSeconds = positive(value());
        break;
      case '--lag-limit':
        o.lagLimitSeconds = positive(value());
        break;
      case '--rates':
        o.rateFactors = value().split(',').map(positive);
        break;
      case '--load-writers':
        o.loadWriters = Math.floor(positive(value()));
        break;
      case '--skip-changes':
        o.skipChanges = true;
        break;
      case '--skip-scaling':
        o.skipScaling = true;
        break;
      case '--skip-peer':
        o.skipPeer = true;
        break;
      case '--sharded':
        o.sharded = true;
        break;
      case '--skip-transactions':
        o.skipTransactions = true;
        break;
      case '--skip-cutover':
        o.skipCutover = true;
        break;
      case '--skip-namespaces':
        o.skipNamespaces = true;
        break;
      case '--cutover':
        o.cutoverOnly = true;
        break;
      case '--namespaces':
        o.namespaces = Math.floor(positive(value()));
        break;
      case '--kills':
        o.kills = Math.floor(positive(value()));
        break;
      case '--worker-heap-mb':
        o.workerHeapMB = Math.floor(positive(value()));
        break;
      case '--heap-snapshot':
        o.heapSnapshotDir = optional('.tmp/bench-heap');
        break;
      case '--per-database':
        o.perDatabase = Math.floor(positive(value()));
        break;
      case '--verification': {
        const v = value();
        if (v !== 'on' && v !== 'off')
          throw new BenchUsageError(`--verification: on or off, not ${v}`);
        o.verification = v === 'on';
        o.verificationGiven = true;
        break;
      }
      case '--cpu-prof':
        o.profileDir = optional('.tmp/bench-profiles');
        break;
      case '--help':
      case '-h':
        throw new BenchUsageError('');
      default:
        throw new BenchUsageError(`unknown argument '${arg}'`);
    }
  }
  if (o.sharded) {
    if (!documentsGiven) o.documents = quick ? 4_000 : 40_000;
    if (!collectionsGiven) o.collections = 1;
  }
  return o;
}

function profileDirFromEnv(value: string | undefined): string | null {
  if (!value || value === '0') return null;
  return value === '1' ? '.tmp/bench-profiles' : value;
}
