import { ApiError, type CommandOptions } from '@sync/contracts';
import type { Clock } from '../ports/clock';
import type { CommandRecord, JobRecord } from '../ports/job-store';

/** How many applied command ids a job remembers (re-deliveries come soon after the original). */
const REMEMBERED = 64;

export function commandRecord(
  operation: string,
  options: CommandOptions | undefined,
  clock: Clock,
): CommandRecord | null {
  return options?.commandId
    ? { id: options.commandId, operation, at: new Date(clock.now()) }
    : null;
}

/**
 * Idempotent commands: an id already applied to this job answers success again without being
 * applied twice; the same id for another operation is a client error.
 */
export function commandSeen(
  job: JobRecord | undefined,
  operation: string,
  commandId: string | undefined,
): boolean {
  if (!commandId || !job?.commands) return false;
  const seen = job.commands.find((c) => c.id === commandId);
  if (!seen) return false;
  if (seen.operation !== operation) {
    throw new ApiError(
      'InvalidRequest',
      `command id ${JSON.stringify(commandId)} was already used for ${seen.operation}.`,
    );
  }
  return true;
}

/** Adds the command to the job in the same write as its effect. */
export function rememberCommand(job: JobRecord, command: CommandRecord | null | undefined): void {
  if (!command) return;
  job.commands = [...(job.commands ?? []), command].slice(-REMEMBERED);
}
