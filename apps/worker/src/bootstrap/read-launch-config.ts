import { readFileSync } from 'node:fs';
import { loadWorkerConfig } from '../config/load-worker-config';
import { parseWorkerArgs } from '../config/parse-worker-args';
import { WorkerConfigError } from '../config/worker-config.error';
import type { WorkerConfig } from '../config/worker-options.dto';
import { WORKER_USAGE } from '../config/worker-usage';

export type LaunchConfig = { config: WorkerConfig } | { exitCode: number };

/**
 * argv → config, or the exit code after printing help (0) or exactly one error line (2).
 * Nothing here ever prints an option's value, so no connection string reaches the terminal.
 */
export function readLaunchConfig(
  argv: readonly string[],
  out: { stdout: (text: string) => void; stderr: (text: string) => void },
): LaunchConfig {
  try {
    const parsed = parseWorkerArgs(argv);
    if (parsed.help) {
      out.stdout(WORKER_USAGE);
      return { exitCode: 0 };
    }
    return { config: loadWorkerConfig(parsed.flags, (path) => readFileSync(path, 'utf8')) };
  } catch (error) {
    if (!(error instanceof WorkerConfigError)) throw error;
    out.stderr(`worker: ${error.message} (see --help)\n`);
    return { exitCode: WorkerConfigError.EXIT_CODE };
  }
}
