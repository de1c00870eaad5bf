import { DEFAULT_HOST, DEFAULT_PORT } from '@sync/service';

export const WORKER_USAGE = `Usage: worker --cluster0 <uri> --cluster1 <uri> [options]

Runs one sync instance and serves its API at http://<host>:<port>/api/v1.

Options:
  --cluster0 <uri>     connection string of the cluster named "cluster0" (mongodb:// or mongodb+srv://)
  --cluster1 <uri>     connection string of the cluster named "cluster1"
  --config <file>      YAML file with any of the keys below (cluster0, cluster1, port, host, id,
                       logPath, verbosity, redis, apiToken, standby, claimRenewMs, claimStaleMs,
                       heapGrowthPercent)
                       and tuning (see Engine tuning); command-line flags override it
  --port <n>           API port (default ${DEFAULT_PORT}; 0 picks a free port)
  --host <addr>        API address (default ${DEFAULT_HOST}; any other than loopback needs a token)
  --id <shardId>       id of this instance when one runs per source shard
  --redis <url>        join a coordinator (redis:// or rediss://): commands arrive through its
                       queue, this API serves progress; without --id the worker joins as the
                       single worker of the sync (id "worker")
  --standby            with --id: wait as the standby of the shard's active worker (no commands,
                       no destination writes, no change stream) and take the shard over once the
                       active worker's claim is stale by the destination's clock
  --claimRenewMs <ms>  how often the shard claim is renewed (default 1000)
  --claimStaleMs <ms>  a claim not renewed for this long (destination's clock) is taken over
                       (default 6000; --claimRenewMs must stay below 4/5 of it)
  --apiToken <token>   every request must send Authorization: Bearer <token> (16-512 chars)
  --logPath <file>     also append JSON log lines to this file
  --verbosity <level>  TRACE, DEBUG, INFO (default), WARN, ERROR, FATAL or PANIC
  --heapGrowthPercent <n>
                       how far V8 grows the heap past the data alive after a full collection,
                       0-300 percent (default 50; 0: V8's own factor, up to 4x on a busy process)
  --help               print this help

Secrets from the environment (flags win over it, it wins over --config; preferred to flags,
which every local user sees in the process list): SYNC_CLUSTER0_URI, SYNC_CLUSTER1_URI,
SYNC_REDIS_URL, SYNC_API_TOKEN; also SYNC_STANDBY, SYNC_CLAIM_RENEW_MS, SYNC_CLAIM_STALE_MS,
SYNC_HEAP_GROWTH_PERCENT.

Engine tuning: the key tuning in --config, with the groups copier, partitioning,
changeApplication (feed), verification, historyGuard, retry and balancerWatch, e.g.
  tuning: { copier: { concurrency: 8 }, changeApplication: { lanes: 16 } }
or SYNC_TUNING holding the same mapping as YAML or JSON (merged over the file's, key by key).
Absent keys keep the defaults; an unknown key or a bad value is refused (exit code 2). Every
key, its default, range and trade-off: README.md, "Engine tuning".

Exit codes: 0 after a clean shutdown (SIGTERM/SIGINT), 1 on a fatal error, 2 on invalid options.
`;
