import { clearLedger } from './helpers/leak-ledger';

/** A run starts with an empty ledger: the leak check reads only what this run produced. */
export default function globalSetup(): void {
  clearLedger();
}
