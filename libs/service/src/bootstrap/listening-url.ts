import type { AddressInfo } from 'node:net';
import { API_PREFIX } from '../http/configure-http-app';

/** The URL clients use, with the real port when `--port 0` let the OS choose one. */
export function listeningUrl(address: AddressInfo | string | null, host: string): string {
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return `http://${hostPart}:${port}/${API_PREFIX}`;
}
