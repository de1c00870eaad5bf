import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LEDGER_DIR, findLeaks, findRepairs } from './helpers/leak-ledger';

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
  // The sync's own writes must make the clusters equal: a document the live verifier had to
  // rewrite from the source in an end-to-end run is a divergence its byte-equal check would hide.
  const repairs = findRepairs();
  if (repairs.length > 0) {
    const failed = `repair check FAILED: the live verifier rewrote documents from the source in ${repairs.length} process output(s):\n${repairs.join('\n')}`;
    console.log(`\n${failed}`);
    throw new Error(failed);
  }
}
