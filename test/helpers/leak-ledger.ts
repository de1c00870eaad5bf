import { appendFileSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Everything the end-to-end suites' processes printed and their APIs answered, appended to
 * `.tmp/e2e-output/` (one file per Jest worker process), so that one check at the end of the
 * run can search all of it for the test credentials (jest.global-teardown.ts).
 */
export const LEDGER_DIR = join(__dirname, '..', '..', '.tmp', 'e2e-output');

/**
 * Every secret the suites hand to the service or its clusters: the users' passwords of the
 * emulated clusters, Redis's password, API tokens. A test that introduces another one adds it here.
 */
export const TEST_SECRETS: readonly string[] = [
  'Syncer-S3cret-pw',
  'App-S3cret-pw',
  'Redis-S3cret-pw',
  'Leak-Test-Api-T0ken-7f3c9a1e',
];

/** Appends one record (a process's output, a response body) to this worker's ledger file. */
export function recordOutput(source: string, text: string): void {
  if (text === '') return;
  try {
    mkdirSync(LEDGER_DIR, { recursive: true });
    appendFileSync(join(LEDGER_DIR, `${process.pid}.log`), `\n### ${source}\n${text}\n`);
  } catch {
    // the ledger is a check on the side: never fail a test because it cannot be written
  }
}

export function clearLedger(): void {
  rmSync(LEDGER_DIR, { recursive: true, force: true });
  rmSync(join(LEDGER_DIR, '..', 'leak-check.txt'), { force: true });
}

/** One ledger file: its name, its length and its records (each with its first line, the source). */
interface LedgerFile {
  file: string;
  bytes: number;
  records: Array<{ source: string; text: string }>;
}

/** Every file of the ledger, read and split into its records (none when there is no ledger). */
function readLedger(): LedgerFile[] {
  let files: string[];
  try {
    files = readdirSync(LEDGER_DIR);
  } catch {
    return [];
  }
  return files.map((file) => {
    const text = readFileSync(join(LEDGER_DIR, file), 'utf8');
    const records = text
      .split('\n### ')
      .slice(1)
      .map((record) => ({ source: record.slice(0, record.indexOf('\n')), text: record }));
    return { file, bytes: text.length, records };
  });
}

/** Where each secret (or its URL-encoded / base64 form) appears: `file: source` lines. */
export function findLeaks(): { records: number; bytes: number; leaks: string[] } {
  const forms = [
    ...new Set(
      TEST_SECRETS.flatMap((secret) => [
        secret,
        encodeURIComponent(secret),
        Buffer.from(secret).toString('base64'),
      ]),
    ),
  ];
  let records = 0;
  let bytes = 0;
  const leaks: string[] = [];
  for (const ledger of readLedger()) {
    bytes += ledger.bytes;
    for (const { source, text } of ledger.records) {
      records += 1;
      if (forms.some((form) => text.includes(form)))
        leaks.push(`${ledger.file}: ${source} contains a test secret`);
    }
  }
  return { records, bytes, leaks };
}

/**
 * The live verifier's warning when it rewrites a document from the source (verification.ts).
 * A repair a test did not cause on purpose means the sync's change application diverged and a
 * byte-equal ending would hide it: the end-to-end run (jest.global-teardown.ts) and the
 * integration helpers (integration/sync-helpers.ts) fail on one.
 */
export const REPAIR_WARNING = 'rewritten from the source';

/** The ledger records (`file: source`) that hold a repair warning. */
export function findRepairs(): string[] {
  return readLedger().flatMap(({ file, records }) =>
    records
      .filter((record) => record.text.includes(REPAIR_WARNING))
      .map((record) => `${file}: ${record.source}`),
  );
}
