import { readFileSync } from 'node:fs';
import { LaunchConfigError } from '../config/launch-config.error';
import { loadServiceConfig, type LaunchEnv } from '../config/load-service-config';
import { parseLaunchArgs } from '../config/parse-launch-args';
import type { ServiceConfig } from '../config/service-options.dto';

export type LaunchConfig = { config: ServiceConfig } | { exitCode: number };

/** What differs between the programs sharing these options (worker, coordinator). */
export interface LaunchProgram {
  /** Prefix of the one error line, e.g. "worker". */
  name: string;
  usage: string;
  requireRedis?: boolean;
  /** false: no sync engine runs here (the coordinator): `tuning` is refused, SYNC_TUNING unread. */
  engineTuning?: boolean;
}

/**
 * argv → config, or the exit code after printing help (0) or exactly one error line (2).
 * Nothing here ever prints an option's value, so no connection string reaches the terminal.
 */
export function readLaunchConfig(
  argv: readonly string[],
  out: { stdout: (text: string) => void; stderr: (text: string) => void },
  program: LaunchProgram,
  /** SYNC_CLUSTER0_URI, SYNC_CLUSTER1_URI, SYNC_REDIS_URL, SYNC_API_TOKEN (flags win). */
  env: LaunchEnv = process.env,
): LaunchConfig {
  try {
    const parsed = parseLaunchArgs(argv);
    if (parsed.help) {
      out.stdout(program.usage);
      return { exitCode: 0 };
    }
    return {
      config: loadServiceConfig(
        parsed.flags,
        (path) => readFileSync(path, 'utf8'),
        {
          requireRedis: program.requireRedis === true,
          engineTuning: program.engineTuning !== false,
        },
        env,
      ),
    };
  } catch (error) {
    if (!(error instanceof LaunchConfigError)) throw error;
    out.stderr(`${program.name}: ${error.message} (see --help)\n`);
    return { exitCode: LaunchConfigError.EXIT_CODE };
  }
}
