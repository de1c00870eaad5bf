import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LEDGER_DIR, findLeaks } from './helpers/leak-ledger';

/**
 * Issue 13 §6: every line the end-to-end suites' processes (workers, coordinators, emulators,
 * demos) printed and every API response they got is searched for the test credentials, in
 * clear, URL-encoded and base64. A leak fails the run (and .ci/run's closing line counts it).
 */
export default function globalTeardown(): void {
  const { records, bytes, leaks } = findLeaks();
  if (records === 0) return; // no end-to-end suite ran
  const verdict =
    leaks.length === 0
      ? `leak check: ${records} process outputs and responses (${Math.round(bytes / 1024)} KiB) searched for the test secrets: none found`
      : `leak check FAILED: ${leaks.length} leak(s):\n${leaks.join('\n')}`;
  writeFileSync(join(LEDGER_DIR, '..', 'leak-check.txt'), `${verdict}\n`);
  console.log(`\n${verdict}`);
  if (leaks.length > 0) throw new Error(verdict);
}
