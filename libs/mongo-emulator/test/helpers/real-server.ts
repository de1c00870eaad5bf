/**
 * The switch that points the emulator's driver-level specs at a real MongoDB server instead of
 * an emulated replica set: `EMULATOR_CONFORMANCE_URI`, else `SYNC_TEST_SOURCE_URI`. Both unset
 * (as in CI here): every spec runs against the emulator, exactly as before.
 *
 * A test that needs something only the emulator has (a tiny history, fail points, users created
 * at launch, its CLI or its internals) is declared with `emulatorOnly(reason)`: on a real server
 * it is reported as skipped, its name ending in `[emulator only: <reason>]`, never passed without
 * running. Jest does not list the tests of a file it skipped entirely, so every skip is also
 * written to stderr as one `skipped: <file> › <name> [<reason>]` line.
 */
import * as path from 'node:path';

function nonEmpty(value: string | undefined): string | undefined {
  return value && value.trim() !== '' ? value.trim() : undefined;
}

/** The real server's connection string, or undefined to use the emulator. */
export const realServerUri: string | undefined =
  nonEmpty(process.env.EMULATOR_CONFORMANCE_URI) ?? nonEmpty(process.env.SYNC_TEST_SOURCE_URI);

export const onRealServer = realServerUri !== undefined;

/**
 * Whether the real server's connection string carries credentials, i.e. the server runs with
 * access control (the test clusters of docker-compose do).
 */
export const realServerHasAccessControl =
  realServerUri !== undefined && /^mongodb(\+srv)?:\/\/[^/@]+@/.test(realServerUri);

export type TestDefiner = (name: string, fn: jest.ProvidesCallback, timeout?: number) => void;
export type SuiteDefiner = (name: string, fn: () => void) => void;

/** Writes straight to stderr: jest drops the console output of a file whose tests all skip. */
function announceSkip(title: string): string {
  const file = path.relative(process.cwd(), expect.getState().testPath ?? '');
  process.stderr.write(`skipped: ${file} › ${title}\n`);
  return title;
}

/** `it`, or — when `skip` holds — `it.skip` with `[<label>]` appended to the test's name. */
export function itUnless(skip: boolean, label: string): TestDefiner {
  if (!skip) return it;
  return (name, fn, timeout) => it.skip(announceSkip(`${name} [${label}]`), fn, timeout);
}

/** `describe`, or — when `skip` holds — `describe.skip` with `[<label>]` appended. */
export function describeUnless(skip: boolean, label: string): SuiteDefiner {
  if (!skip) return describe;
  return (name, fn) => describe.skip(announceSkip(`${name} [${label}]`), fn);
}

/** A test that can only run against the emulator; skipped, with the reason, on a real server. */
export function emulatorOnly(reason: string): TestDefiner {
  return itUnless(onRealServer, `emulator only: ${reason}`);
}

/** A suite that can only run against the emulator; skipped, with the reason, on a real server. */
export function describeEmulatorOnly(reason: string): SuiteDefiner {
  return describeUnless(onRealServer, `emulator only: ${reason}`);
}

/**
 * A test that needs a server without access control (the emulator, or a real server whose URI
 * has no credentials): skipped, with the reason, on a real server with access control.
 */
export function withoutAccessControl(reason: string): TestDefiner {
  return itUnless(realServerHasAccessControl, `needs a server without access control: ${reason}`);
}
