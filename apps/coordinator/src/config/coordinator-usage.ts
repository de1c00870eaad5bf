import { DEFAULT_HOST, DEFAULT_PORT } from '@sync/service';

export const COORDINATOR_USAGE = `Usage: coordinator --cluster0 <uri> --cluster1 <uri> --redis <url> [options]

Serves one /api/v1 for all workers of a sync (workers join with --redis): commands go to every
worker through BullMQ, progress is merged. Run several replicas for availability: one leads
(a Redis lease plus a fencing epoch on cluster1), the others forward commands to it.

Options:
  --cluster0 <uri>     connection string of the cluster named "cluster0" (as the workers')
  --cluster1 <uri>     connection string of the cluster named "cluster1"
  --redis <url>        the control plane's Redis (redis:// or rediss://), required
  --config <file>      YAML file with any of the keys below (cluster0, cluster1, redis, port, host,
                       id, logPath, verbosity, apiToken, heapGrowthPercent); command-line flags
                       override it
  --port <n>           API port (default ${DEFAULT_PORT}; 0 picks a free port)
  --host <addr>        API address (default ${DEFAULT_HOST}; any other than loopback needs a token)
  --id <name>          name of this replica (default "coordinator"); shown as syncID
  --apiToken <token>   every request must send Authorization: Bearer <token> (16-512 chars)
  --logPath <file>     also append JSON log lines to this file
  --verbosity <level>  TRACE, DEBUG, INFO (default), WARN, ERROR, FATAL or PANIC
  --heapGrowthPercent <n>
                       how far V8 grows the heap past the data alive after a full collection,
                       0-300 percent (default 50; 0: V8's own factor)
  --help               print this help

Secrets from the environment (flags win over it, it wins over --config; preferred to flags,
which every local user sees in the process list): SYNC_CLUSTER0_URI, SYNC_CLUSTER1_URI,
SYNC_REDIS_URL, SYNC_API_TOKEN, SYNC_HEAP_GROWTH_PERCENT.

Environment (milliseconds): CLUSTER_SYNC_LEASE_TTL_MS (leader lease, default 10000),
CLUSTER_SYNC_COMMAND_TIMEOUT_MS (how long a command waits for every worker, default 60000),
CLUSTER_SYNC_WORKER_STALE_MS (a worker is shown missing after this silence, default 8000).

Exit codes: 0 after a clean shutdown (SIGTERM/SIGINT), 1 on a fatal error, 2 on invalid options
or an unreachable Redis at launch.
`;
